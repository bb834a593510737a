"""The programs that run a command given in their words: wrappers, shells,
``xargs``, ``find -exec``, ``git``, ``make``, ``uv run`` and the like."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ...base.patterns import LazyPattern
from .calls import XARGS_INPUT, Call, Handler, assigns, reads_stdin, run_script
from .options import abbreviates, long_option, short_options
from .programs import (
    FLOCK,
    LOADER,
    SET_OPTIONS,
    SETARCH,
    SETARCH_ALIASES,
    SHELL_FLAGS,
    SHELL_LONG,
    SHOPT_OPTIONS,
    SU,
    WATCH,
    WRAPPERS,
    XARGS,
    names,
    skip_options,
)
from .words import Word

__all__ = ["HANDLERS", "foreign_shell", "loader", "shell", "wrapper"]


def wrapper(call: Call) -> str | None:
    spec = WRAPPERS[call.program]
    found = skip_options(spec, call.args)
    for name, given in found.assigned:
        assigns(call, name, given)
    output = found.values.get("-o") or ""
    if call.program in ("strace", "ltrace") and output.startswith(("|", "!")):
        call.undecide("a program pipes its output into a command")
    if found.undecided:
        call.undecide(found.undecided)
    elif found.rest:
        return call.simple(found.rest)
    elif not found.stop and (
        spec.bare_shell
        or any(f"-{s}" in found.values for s in spec.shell)
        or any(name in found.values for name in spec.long_shell)
    ):
        call.simple([Word.literal("sh")])  # sudo -s, chroot NEWROOT: a shell on its stdin
    return None


def _setarch(call: Call) -> str | None:
    """``setarch [ARCH] [options] [COMMAND]`` (its aliases ``linux64`` ... take no
    ARCH): the command, or a shell when none is given."""
    args = list(call.args)
    if call.program == "setarch" and args:
        if args[0].value is None:
            call.undecide("setarch's architecture is computed")
            return None
        if not args[0].value.startswith("-"):
            args = args[1:]
    found = skip_options(SETARCH, args)
    if found.undecided:
        call.undecide(found.undecided)
    elif found.rest:
        return call.simple(found.rest)
    elif not found.stop:
        call.simple([Word.literal("sh")])  # no command: a shell, on the same stdin
    return None


def loader(call: Call) -> str | None:
    """The dynamic loader run as a program: its options, then the program it runs."""
    found = skip_options(LOADER, call.args)
    if found.undecided:
        call.undecide(found.undecided)
    elif found.rest:
        return call.simple(found.rest)
    return None


def _capsh(call: Call) -> str | None:
    """``capsh [--option=value ...] -- ARGS``: ``--`` (and ``-+``) runs a shell
    (``/bin/bash``, or ``--shell=PATH``) with the words after it; ``==`` (and
    ``=+``) runs capsh again with them; an option not of the ``--name[=value]``
    form is not read."""
    shell: Word = Word.literal("/bin/bash")
    args = list(call.args)
    for k, word in enumerate(args):
        value = word.value
        if value is None:
            call.undecide("capsh's options are computed")
            return None
        if value in ("--", "-+"):
            return call.simple([shell, *args[k + 1 :]])
        if value in ("==", "=+"):
            return call.simple([Word.literal("capsh"), *args[k + 1 :]])
        if value.startswith("--shell="):
            shell = Word.literal(value.removeprefix("--shell="))
        elif not value.startswith("--"):
            call.undecide("an option of capsh the reader does not read")
            return None
    return None


def _pager(call: Call) -> str | None:
    """``less`` and ``more`` take files, but ``+CMD`` runs a pager command (``+!sh``
    a shell command) on each file."""
    if any((w.value or "+").startswith("+") for w in call.args):
        call.undecide("a pager is given a command to run (+cmd) or a computed word")
    if any((w.value or "").startswith(("-o", "-O", "--log-file", "--LOG-FILE")) for w in call.args):
        call.writes()  # less -o FILE copies its input to FILE
    return None


def _xargs(call: Call) -> str | None:
    found = skip_options(XARGS, call.args)
    if found.undecided:
        call.undecide(found.undecided)
        return None
    if not found.rest:
        return None  # echo
    replace_with = found.values.get("-I") or found.values.get("--replace")
    if replace_with is None and "-i" in found.values:
        replace_with = found.values["-i"] or "{}"
    if "--replace" in found.values and not replace_with:
        replace_with = "{}"
    if replace_with:
        rest = [
            Word(None, w.text, "", "", XARGS_INPUT)
            if w.value is not None and replace_with in w.value
            else w
            for w in found.rest
        ]
    else:  # the words xargs reads are added after the command's own
        rest = [*found.rest, Word(None, "", "", "", XARGS_INPUT)]
    return call.simple(rest)


_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find(call: Call) -> str | None:
    args = call.args
    if any(w.value is None and w.may_be_flag for w in args):
        call.undecide("find's expression is computed")
        return None
    i = 0
    while i < len(args):
        if args[i].value not in _EXEC:
            if args[i].value in ("-delete", "-fprint", "-fprintf", "-fls", "-fprint0"):
                call.writes()
            i += 1
            continue
        j = i + 1
        while j < len(args) and not (
            args[j].value == ";" or (args[j].value == "+" and args[j - 1].value == "{}")
        ):
            j += 1
        words = [
            Word(None, w.text, "./", "", "a path find gives")
            if w.value is not None and "{}" in w.value
            else w
            for w in args[i + 1 : j]
        ]
        call.simple(words)
        i = j + 1
    return None


def _fd(call: Call) -> str | None:
    args = list(call.args)
    for i, word in enumerate(args):
        if word.value is None and word.may_be_flag:
            call.undecide("fd's options are computed")
            return None
        value = word.value or ""
        if value not in ("-x", "--exec", "-X", "--exec-batch") and (
            long_option(value, ("--exec", "--exec-batch")) is not None
            or (value.startswith("-") and not value.startswith("--") and "x" in value.lower())
        ):  # --exec=CMD, -xCMD, a cluster ending in x: where the command starts is not read
            call.undecide("fd is given a command in a form the reader does not read")
            return None
        if value in ("-x", "--exec", "-X", "--exec-batch"):
            rest = args[i + 1 :]
            end = next((k for k, w in enumerate(rest) if w.value == ";"), len(rest))
            call.simple(
                [
                    Word(None, w.text, "./", "", "a path fd gives")
                    if w.value is not None and "{" in w.value
                    else w
                    for w in rest[:end]
                ]
            )
            return None
    return None


def _multicall(call: Call) -> str | None:
    args = call.args
    if args and args[0].value is None:
        call.undecide(f"{args[0].why} names the program")
    elif args and not (args[0].value or "-").startswith("-"):
        return call.simple(args)
    return None


def _watch(call: Call) -> str | None:
    found = skip_options(WATCH, call.args)
    if found.undecided:
        call.undecide(found.undecided)
    elif "-x" in found.values or "--exec" in found.values:
        call.simple(found.rest)
    elif found.rest:
        texts = [w.value for w in found.rest]
        if any(t is None for t in texts):
            call.undecide("watch runs a computed string")
        else:
            call.line(" ".join(t for t in texts if t is not None))
    return None


def _su(call: Call) -> str | None:
    # su [options] [-] [user [args]]: options may also follow the user.
    words = [w for w in call.args if w.value != "-"]
    given: list[str | None] = []
    while True:
        found = skip_options(SU, words)
        if found.undecided:
            call.undecide(found.undecided)
            return None
        if found.stop:
            return None
        for key in ("-c", "-C", "--command", "--session-command"):
            if key in found.values:
                given.append(found.values[key])
        if any(k in found.values for k in ("-s", "--shell")):
            call.undecide("su runs a shell of its own choosing")
            return None
        if not found.rest:
            break
        words = found.rest[1:]  # the user
    if not given:
        return call.simple([Word.literal("sh")])
    for text in given:
        if text is None:
            call.undecide("a shell runs a computed string")
        else:
            call.line(text)
    return None


def _flock(call: Call) -> str | None:
    found = skip_options(FLOCK, call.args)
    if found.undecided:
        call.undecide(found.undecided)
        return None
    command = found.values.get("-c", found.values.get("--command"))
    rest = found.rest
    if command is None and len(rest) >= 2 and rest[0].value in ("-c", "--command"):
        command = rest[1].value
        if command is None:
            call.undecide("a shell runs a computed string")
            return None
    if command is not None:
        call.line(command)
    elif rest:
        return call.simple(rest)
    return None


#: ``git -c`` keys that run nothing and change no push: any other key, and ``git
#: config`` of any other key, is undecided for a rule about git.
_GIT_SAFE_KEYS = LazyPattern(
    r"(user\.(name|email|signingkey)|color\..*|core\.(quotepath|autocrlf|safecrlf|filemode"
    r"|ignorecase|longpaths|precomposeunicode)|advice\..*|init\.defaultbranch|pull\.rebase"
    r"|pull\.ff|safe\.directory|commit\.gpgsign|tag\.gpgsign|log\..*|column\..*"
    r"|merge\.conflictstyle|diff\.(renames|algorithm|colormoved)|fetch\.prune|i18n\..*)",
    re.IGNORECASE,
)
#: git subcommands (and their options) that run a command given in the line.
#: git subcommands that write no file of the work tree.
_GIT_READS = names(
    "status log diff show rev-parse ls-files ls-tree ls-remote grep blame describe "
    "shortlog reflog cat-file branch tag remote fetch version help whatchanged show-ref "
    "for-each-ref rev-list count-objects config merge-base name-rev cherry var "
    "check-ignore"
)
_GIT_CONFIG_WRITES = names(
    "--add --replace-all --unset --unset-all --rename-section --remove-section -e --edit"
)
_GIT_RUNS = {
    "rebase": ("-x", "--exec"),
    "bisect": ("run",),
    "submodule": ("foreach",),
    "filter-branch": ("",),
    "difftool": ("-x", "--extcmd", "-t", "--tool"),
    "mergetool": ("-t", "--tool"),
    "grep": ("-O", "--open-files-in-pager"),
    "send-email": ("--to-cmd", "--cc-cmd", "--sendmail-cmd", "--header-cmd", "--smtp-server"),
    "daemon": ("--access-hook",),
    "instaweb": ("--httpd", "--browser", "-d", "-b"),
}
#: Options of git's transport subcommands (fetch, pull, clone, ls-remote, push,
#: fetch-pack, send-pack, archive --remote ...) whose value is a command git runs
#: with a shell; git takes an unambiguous abbreviation of a long one.
_GIT_PROGRAM_OPTIONS = ("--upload-pack", "--receive-pack", "--exec")
#: Subcommands where ``-u`` is ``--upload-pack``.
_GIT_UPLOAD_U = names("clone ls-remote")
#: Subcommands that reach a remote, where a computed option may be one of those.
_GIT_TRANSPORT = names(
    "fetch pull clone ls-remote push fetch-pack send-pack archive remote submodule"
)


def _git(call: Call) -> str | None:
    args = call.args
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            call.undecide("git's options are computed")
            return None
        if value in ("-c", "--config-env"):
            key = args[i + 1].value if i + 1 < len(args) else None
            if key is None or not _GIT_SAFE_KEYS().fullmatch(key.partition("=")[0]):
                call.undecide("git is given configuration that may change what it runs")
            i += 2
            continue
        if value.startswith(("-c", "--config-env=")):
            key = value.removeprefix("--config-env=").removeprefix("-c")
            if not _GIT_SAFE_KEYS().fullmatch(key.partition("=")[0]):
                call.undecide("git is given configuration that may change what it runs")
            i += 1
            continue
        if value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
            i += 2
            continue
        if value.startswith("-"):
            if value.startswith("--exec-path"):
                call.undecide("git's subcommand programs are looked for elsewhere")
            i += 1
            continue
        break
    if i >= len(args):
        return None
    sub = args[i].value
    if sub not in _GIT_READS:
        call.runs_file()  # it may write the work tree (checkout, pull ...) and run hooks
    else:  # it writes nothing, but runs what its configuration files name (a file):
        call.reader.file_runs.append(call.index)  # core.fsmonitor, core.pager ...
        call.reader.config_runs.append(call.index)
    rest = [w.value for w in args[i + 1 :]]
    _git_programs(call, sub or "", args[i + 1 :])
    if sub in _GIT_READS and any(v is None or v.startswith("--output") for v in rest):
        call.writes()  # git log --output=FILE
    if sub == "config":
        if any(v is None for v in rest):
            call.undecide("git config may define an alias or a command")
            return None
        given = [v for v in rest if v is not None]
        keys = [v for v in given if not v.startswith("-")]
        writes = len(keys) >= 2 or any(_git_option(v, _GIT_CONFIG_WRITES) for v in given)
        renames = any(_git_option(v, ("--rename-section",)) for v in given)
        if renames or (writes and not (keys and _GIT_SAFE_KEYS().fullmatch(keys[0]))):
            # a section renamed may become alias.*, core.* ... with the keys it holds
            call.undecide("git config may define an alias or a command")
    elif sub in _GIT_RUNS:
        options = _GIT_RUNS[sub]
        if "" in options or any(v is None or _git_option(v, options) for v in rest):
            call.undecide("a git subcommand that runs a command of the line's")
    return None


def _git_option(value: str, options: Iterable[str]) -> bool:
    """Whether the word ``value`` may give one of ``options``: a long one in full or
    by a prefix (git takes an unambiguous one), a short one anywhere in a cluster
    of letters (``-ix'CMD'``, ``-x'CMD'``: its value may be attached); a word
    that is no option (``bisect run``, ``submodule foreach``) as it is."""
    if value in options:
        return True
    if value.startswith("--"):
        return long_option(value, [o for o in options if o.startswith("--")]) is not None
    letters = {o[1] for o in options if len(o) == 2 and o.startswith("-")}
    return value.startswith("-") and any(c in letters for c in value[1:])


def _git_programs(call: Call, sub: str, words: Sequence[Word]) -> None:
    """The options with which git runs a command of the line's with a shell
    (``--upload-pack=CMD``, ``clone -u CMD``, ``push --receive-pack=CMD``,
    ``archive --exec=CMD``, ``clone -c core.sshCommand=CMD``, an ``ext::`` remote):
    undecided for every rule, and a literal command read as a line (git runs it
    with the remote's path added), so a rule on a program it runs denies it."""
    given: list[str | None] = []
    found = False
    for k, word in enumerate(words):
        value = word.value
        following = words[k + 1].value if k + 1 < len(words) else None
        if value is None:
            if word.may_be_flag and sub in _GIT_TRANSPORT:
                call.undecide("git is given a computed option (it may name a command git runs)")
            continue
        if value == "--":
            break
        name, eq, attached = value.partition("=")
        if any(abbreviates(name, o) for o in _GIT_PROGRAM_OPTIONS):
            found = True
            given.append(attached if eq else following)
        elif sub in _GIT_UPLOAD_U and re.fullmatch(r"-[A-Za-z]*u.*", value):
            found = True
            given.append((value[2:] or following) if value.startswith("-u") else None)
        elif sub == "clone" and (name == "--config" or value.startswith("-c")):
            if value in ("-c", "--config"):
                key = following or ""
            else:
                key = attached if name == "--config" else value[2:]
            if not _GIT_SAFE_KEYS().fullmatch(key.partition("=")[0]):
                call.undecide("git is given configuration that may change what it runs")
        elif value.startswith("ext::"):
            found = True
            given.append(None)
    if not found:
        return
    call.undecide("git is given a command to run (--upload-pack, --receive-pack, --exec ...)")
    for text in given:
        if text is not None:
            call.line(text + ' "$@"')


#: GNU make's short options: those taking a value, an optional attached one, none.
_MAKE_VALUES = "CfEIoW"
_MAKE_OPTIONAL = "jlO"
_MAKE_FLAGS = "bBdeikLnpqrRsStvw"
#: Its long options whose value is a makefile, or a makefile's text.
_MAKE_FILES = ("--file", "--makefile")
_MAKE_EVAL = ("--eval",)


def _make(call: Call) -> str | None:
    """make runs its makefile (a file, not read); one from its stdin or a
    descriptor, text given with ``--eval``/``-E`` (by any prefix, or inside a
    cluster: ``-sE'...'``) or a variable that may run a command is undecided."""
    call.runs_file()
    args = call.args
    k = 0
    while k < len(args):
        value = args[k].value
        if value is None:
            call.undecide("make's options or variables are computed")
            return None
        following = args[k + 1].value if k + 1 < len(args) else ""
        makefiles: list[str | None] = []
        if value.startswith("--"):
            name, eq, attached = value.partition("=")
            if long_option(name, _MAKE_EVAL):
                call.undecide("make is given a makefile's text")
                return None
            if long_option(name, _MAKE_FILES):
                makefiles.append(attached if eq else following)
        elif value.startswith("-") and value != "-":
            cluster = short_options(
                value, following, values=_MAKE_VALUES, flags=_MAKE_FLAGS, optional=_MAKE_OPTIONAL
            )
            if cluster.unknown:
                call.undecide("make's option is not understood")
                return None
            for letter, given in cluster.letters:
                if letter == "E":
                    call.undecide("make is given a makefile's text")
                    return None
                if letter == "f":
                    makefiles.append(given)
        else:
            name, eq, given_value = value.partition("=")
            if eq and re.search(r"[\s$`;|&()<>]", given_value):
                call.undecide("make is given a variable that may run a command")
                return None
        if any(f is None or f == "-" or f.startswith(("/dev/", "/proc/")) for f in makefiles):
            call.undecide("make reads a makefile from its stdin or a descriptor")
            return None
        k += 1
    return None


#: Programs whose subcommand runs the command after it (``uv run pytest``).
_SUBCOMMAND_RUNNERS: dict[str, frozenset[str]] = {
    "uv": names("run"),
    "poetry": names("run"),
    "pipenv": names("run"),
    "pdm": names("run"),
    "hatch": names("run"),
    "rye": names("run"),
    "conda": names("run"),
    "mamba": names("run"),
    "micromamba": names("run"),
    "pixi": names("run exec"),
    "bundle": names("exec"),
    "npm": names("exec x"),
    "pnpm": names("exec dlx"),
    "yarn": names("exec dlx"),
}
#: How many words after such a subcommand may start its command (its options
#: and their values come first, and are not known word by word).
_MAX_STARTS = 8


def _subcommand_runner(call: Call) -> str | None:
    """``uv run [options] COMMAND``: which word starts the command depends on the
    tool's options; every word that may start it is read as its start (reading
    more commands than run can only deny or undecide more)."""
    call.reader.file_runs.append(call.index)  # its project's files; it writes none itself
    args = call.args
    if any((w.value or "").startswith(("-c", "--call")) for w in args):
        call.undecide("a program is given a command line to run")
        return None
    runs = _SUBCOMMAND_RUNNERS[call.program]
    at = next((k for k, w in enumerate(args) if w.value in runs), None)
    if at is None:
        if any(w.value is None for w in args):
            call.undecide("a program's subcommand is computed")
        return None
    if any(w.value is None for w in args[:at]):
        call.undecide("a program's subcommand is computed")
        return None
    starts = [k for k in range(at + 1, len(args)) if not (args[k].value or "").startswith("-")]
    if len(starts) > _MAX_STARTS or any(args[k].value is None for k in starts[:1]):
        call.undecide("a program runs a command the reader cannot place")
        return None
    for k in starts:
        call.simple(args[k:])
    return None


#: Options whose value is a command the program runs (``tar --to-command``): a
#: long one by any prefix of its name (``--to-c``), a short one anywhere in a
#: cluster (``-vIcmd``), and zip's ``-TT`` inside one (``-qTT``).
_COMMAND_OPTIONS: dict[str, tuple[frozenset[str], str]] = {
    "tar": (
        names(
            "--to-command --use-compress-program --checkpoint-action --info-script "
            "--new-volume-script --rsh-command --rmt-command"
        ),
        "IF",
    ),
    "rsync": (names("--rsh --rsync-path"), "e"),
    "wget": (names("--use-askpass"), ""),
    "zip": (names("--unzip-command"), ""),
    "scp": (names(""), "So"),
    "sftp": (names(""), "So"),
    "man": (names("--pager --html"), "PH"),
    "rg": (names("--pre"), ""),
    "sort": (names("--compress-program"), ""),
    "split": (names("--filter"), ""),
}


def _command_options(call: Call) -> str | None:
    long, short = _COMMAND_OPTIONS[call.program]
    call.writes()
    for k, word in enumerate(call.args):
        value = word.value
        if value is None:
            if word.may_be_flag:
                call.undecide("a program's options are computed")
                return None
            continue
        if value == "--":
            break
        cluster = value[1:] if value.startswith("-") and not value.startswith("--") else ""
        if k == 0 and call.program == "tar" and not value.startswith("-"):
            cluster = value  # tar's old style: tar xIf ...
        named = long_option(value, long) if value.startswith("--") else None
        if named is not None or any(c in short for c in cluster) or "TT" in cluster:
            call.undecide("a program is given a command to run in an option")
            return None
    return None


# Shells ----------------------------------------------------------------------


def shell(call: Call) -> None:
    """A shell's options by a positive list, then its ``-c`` string, its script
    (a file: not read; ``/dev/stdin``: its stdin) or its stdin."""
    args = call.args
    i, string, stdin = 0, False, False
    while i < len(args):
        word = args[i]
        value = word.value
        if value is None:
            if word.may_be_flag and not string:
                call.undecide("a shell's options are computed")
                return
            break
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            if value not in SHELL_LONG:
                call.undecide("a shell option the reader does not read (an rc file, -i ...)")
                return
            if value == "--login":
                call.runs_file()  # a login shell runs the profile files
            i += 1
            continue
        if value[:1] in ("-", "+") and len(value) > 1:
            letters = value[1:]
            takes = [c for c in letters if c in "oO"]
            names = [w.value for w in args[i + 1 : i + 1 + len(takes)]]
            for letter, name in zip(takes, names, strict=False):
                known = SET_OPTIONS if letter == "o" else SHOPT_OPTIONS
                if name is None or name not in known:
                    call.undecide("a shell option the reader does not read")
                    return
            if set(letters) - SHELL_FLAGS - {"c", "s", "o", "O"}:
                call.undecide("a shell option the reader does not read (an rc file, -i ...)")
                return
            if value[0] == "-" and "l" in letters:
                call.runs_file()  # a login shell runs the profile files
            string = string or (value[0] == "-" and "c" in letters)
            stdin = stdin or "s" in letters
            i += 1 + len(takes)
            continue
        break
    rest = args[i:]
    if string:
        if not rest:
            return
        if rest[0].value is None:
            call.undecide("a shell runs a computed string")
        else:
            call.line(rest[0].value)
        return
    if rest and not stdin:
        run_script(call, rest[0], shell=True)
        return
    reads_stdin(call, shell=True)


def foreign_shell(call: Call) -> None:
    values = call.literal()
    if values is None or any(v.startswith(("-", "+")) for v in values):
        call.undecide("a shell whose syntax is not read is given options or code")
    elif values:
        run_script(call, call.args[0], shell=False)
    else:
        reads_stdin(call, shell=False)


def _exec(call: Call) -> str | None:
    """``exec COMMAND`` runs it in place of the shell; ``exec`` with redirections
    alone points the shell's own input elsewhere (``exec < <(curl x); sh``):
    what later commands read from it is not known."""
    if not call.args:
        if call.redirect.own_input:
            call.undecide("the shell's own input is redirected")
        return None
    return wrapper(call)


HANDLERS: dict[str, Handler] = {
    "exec": _exec,
    "xargs": _xargs,
    "find": _find,
    "fd": _fd,
    "fdfind": _fd,
    "busybox": _multicall,
    "toybox": _multicall,
    "watch": _watch,
    "su": _su,
    "runuser": _su,
    "flock": _flock,
    "setarch": _setarch,
    **{name: _setarch for name in SETARCH_ALIASES},
    "capsh": _capsh,
    "less": _pager,
    "more": _pager,
    "git": _git,
    "make": _make,
    "gmake": _make,
    **{name: _subcommand_runner for name in _SUBCOMMAND_RUNNERS},
    **{name: _command_options for name in _COMMAND_OPTIONS},
}
