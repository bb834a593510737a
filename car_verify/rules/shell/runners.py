"""What each program in the table does with its words: the handlers.

:func:`run` is called by the walk for every simple command, after the command is
recorded; it reads what the program runs (a wrapper's command, a shell's string,
``find -exec``'s command ...), undecides what it cannot, and returns the
program's output when it is known text (``echo``, ``cat`` of a heredoc), for a
shell later in the pipeline to read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .model import Command, Ctx
from .programs import (
    BUILTINS,
    FLOCK,
    FOREIGN_SHELLS,
    READ_ONLY,
    RUNS_COMMANDS,
    SET_OPTIONS,
    SHELL_FLAGS,
    SHELL_LONG,
    SHELLS,
    SHOPT_OPTIONS,
    SU,
    WATCH,
    WRAPPERS,
    XARGS,
    Interpreter,
    interpreter,
    names,
    skip_options,
)
from .words import Word

__all__ = ["XARGS_INPUT", "RedirectInfo", "run"]

#: What computes a word ``xargs`` adds to its command.
XARGS_INPUT = "xargs's input"


@dataclass(frozen=True, slots=True)
class RedirectInfo:
    """What a command's redirections do besides its stdin: whether one points the
    shell's own input elsewhere (``exec <``), and whether one writes a file."""

    own_input: bool = False
    writes: bool = False


class Reader(Protocol):
    """What a handler asks of the walk (:class:`~.reader.Reader`)."""

    found: list[Command]
    writes: list[int]
    file_runs: list[int]

    def undecide(self, reason: str, program: str | None = None) -> None: ...

    def assigned(self, name: str | None, value: str | None = None) -> None: ...

    def line(self, text: str, ctx: Ctx, nest: int) -> None: ...

    def simple(
        self,
        words: Sequence[Word],
        ctx: Ctx,
        nest: int,
        wrapped: int,
        info: RedirectInfo | None = None,
    ) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Call:
    """One program's call: the reader, the program and its arguments, the context,
    how deep the strings nest, how many wrappers it came through, and its index in
    the reader's commands."""

    reader: Reader
    program: str
    args: Sequence[Word]
    ctx: Ctx
    nest: int
    wrapped: int
    index: int
    redirect: RedirectInfo

    def undecide(self, reason: str, program: str | None = None) -> None:
        self.reader.undecide(reason, program)

    def simple(self, words: Sequence[Word], ctx: Ctx | None = None) -> str | None:
        return self.reader.simple(words, ctx or self.ctx, self.nest, self.wrapped + 1)

    def line(self, text: str, ctx: Ctx | None = None) -> None:
        self.reader.line(text, ctx or self.ctx, self.nest + 1)

    def literal(self) -> list[str] | None:
        """The arguments' values, or None when one is computed."""
        values = [w.value for w in self.args]
        return None if any(v is None for v in values) else [v for v in values if v is not None]

    def runs_file(self) -> None:
        self.reader.file_runs.append(self.index)
        self.reader.writes.append(self.index)

    def writes(self) -> None:
        self.reader.writes.append(self.index)


Handler = Callable[[Call], "str | None"]


def run(
    reader: Reader,
    program: str,
    args: Sequence[Word],
    ctx: Ctx,
    nest: int,
    wrapped: int,
    index: int,
    redirect: RedirectInfo,
) -> str | None:
    """Read what ``program`` runs, by the table (see :mod:`.programs`)."""
    if (
        program not in _TABLED
        and program[:1] not in _VERSIONED_STARTS
        and not program.startswith("git-")
    ):  # any other program: its words are data
        if program not in READ_ONLY:
            reader.writes.append(index)
        return None
    call = Call(reader, program, args, ctx, nest, wrapped, index, redirect)
    handler = _HANDLERS.get(program)
    if handler is not None:
        return handler(call)
    if program in WRAPPERS:
        return _wrapper(call)
    if program in BUILTINS:
        call.undecide("a shell builtin the reader does not read")
        return None
    if program in SHELLS:
        _shell(call)
        return None
    if program in FOREIGN_SHELLS:
        _foreign_shell(call)
        return None
    found = interpreter(program)
    if found is not None:
        _interpreter(call, found)
        return None
    if program in RUNS_COMMANDS:
        call.undecide("a program that runs a command of its own the reader does not read")
        return None
    if program.startswith("git-"):
        call.undecide("one of git's subcommand programs", "git")
    if program in FILE_RUNNERS:
        call.runs_file()
    elif program not in READ_ONLY:
        call.writes()
    return None


#: Programs that run what files of the project hold (a Makefile, package.json's
#: scripts, a test suite): not read, but a line that may have written such a file
#: first is undecided.
FILE_RUNNERS = names(
    "make gmake npm yarn pnpm cargo go gradle gradlew mvn ant rake bundle pytest tox nox "
    "just task ninja cmake meson scons bazel composer mix dotnet pip pip3 poetry uv pipenv"
)


# Builtins --------------------------------------------------------------------


def _inert(call: Call) -> str | None:
    return None


def _echo(call: Call) -> str | None:
    texts = call.literal()
    if texts is None:
        return None
    words = texts
    newline = True
    while words and re.fullmatch(r"-[neE]+", words[0]):
        if "e" in words[0]:
            return None  # escapes: which ones depends on the shell
        newline = newline and "n" not in words[0]
        words = words[1:]
    out = " ".join(words)
    if "\\" in out:
        return None  # dash's echo and bash's xpg_echo read escapes
    return out + ("\n" if newline else "")


def _cat(call: Call) -> str | None:
    if all(w.value == "-" for w in call.args) and call.ctx.stdin == "text":
        return call.ctx.text
    return None


def _tee(call: Call) -> str | None:
    call.writes()
    return call.ctx.text if call.ctx.stdin == "text" else None


def _printf(call: Call) -> str | None:
    args = list(call.args)
    while args:
        value = args[0].value
        if value is None:
            call.undecide("printf's options are computed")
            return None
        if value == "--":
            break
        if value.startswith("-v"):
            name = value[2:] or (args[1].value if len(args) > 1 else "")
            _assigns(call, name)
            args = args[1:] if value[2:] else args[2:]
            continue
        break
    return None


def _assigns(call: Call, name: str | None, value: str | None = None) -> None:
    call.reader.assigned(name, value)


def _names(call: Call, options_with_values: str, names_from: str = "") -> None:
    """A builtin whose operands are variable names (``read``, ``getopts``,
    ``mapfile``): each must be a plain variable; an option's value may be one too."""
    args = list(call.args)
    i = 0
    operands: list[Word] = []
    while i < len(args):
        value = args[i].value
        if value is None:
            call.undecide("a builtin's option or variable name is computed")
            return
        if value == "--":
            operands.extend(args[i + 1 :])
            break
        if value.startswith("-") and len(value) > 1 and not operands:
            letter = value[1]
            if letter in options_with_values:
                given = value[2:] or (args[i + 1].value if i + 1 < len(args) else "")
                if letter in names_from:
                    _assigns(call, given)
                i += 1 if value[2:] else 2
                continue
            i += 1
            continue
        operands.append(args[i])
        i += 1
    return_names = operands
    for word in return_names:
        _assigns(call, word.value)


def _read(call: Call) -> str | None:
    _names(call, "adeinNptu", names_from="a")
    return None


def _getopts(call: Call) -> str | None:
    values = call.literal()
    if values is None or len(values) < 2:
        if values is None:
            call.undecide("a builtin's option or variable name is computed")
        return None
    _assigns(call, values[1])
    return None


def _mapfile(call: Call) -> str | None:
    if any((w.value or "-C").startswith("-C") for w in call.args):
        call.undecide("mapfile -C runs a callback")
        return None
    _names(call, "dnOsuc")
    return None


def _wait(call: Call) -> str | None:
    _names(call, "p", names_from="p")
    return None


def _jobs(call: Call) -> str | None:
    if any((w.value or "-x").startswith("-") and "x" in (w.value or "-x") for w in call.args):
        call.undecide("jobs -x runs a command")
    return None


def _hash(call: Call) -> str | None:
    if any((w.value or "-p").startswith("-") and "p" in (w.value or "-p") for w in call.args):
        call.undecide("hash -p binds a name to another program")
    return None


def _test(call: Call) -> str | None:
    words = list(call.args)
    if call.program == "[" and words and words[-1].value == "]":
        words = words[:-1]
    problem = test_words_problem(words)
    if problem is not None:
        call.undecide(problem)
    return None


#: ``test`` / ``[`` words that evaluate a subscript (``-v a[$(...)]``).
TEST_SUBSCRIPTS = frozenset({"-v", "-R"})


def test_words_problem(words: Sequence[Word]) -> str | None:
    """Why ``test``'s (and ``[``'s) words are not understood, or None: an operator
    among them may evaluate a subscript (``-v a[$(...)]``), or a computed word
    stands where ``test`` may take an operator (by its count of words, as POSIX
    gives them)."""
    if any(w.value in TEST_SUBSCRIPTS for w in words):
        return "a test that evaluates arithmetic or a subscript"
    computed = {i for i, w in enumerate(words) if w.value is None and w.may_be_flag}
    if not computed:
        return None
    if not all(w.single for w in words):
        risky = True  # how many words there are is not known
    elif len(words) == 2:
        risky = 0 in computed
    elif len(words) == 3:
        risky = 1 in computed and (words[0].value == "!" or 0 in computed)
    else:
        risky = len(words) > 3
    return "a test whose operator may be computed" if risky else None


def _set(call: Call) -> str | None:
    args = list(call.args)
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            call.undecide("set's options are computed")
            return None
        if value in ("--", "-") or value[:1] not in ("-", "+") or len(value) < 2:
            return None  # the rest are positional parameters
        letters = value[1:]
        if "o" in letters:
            name = args[i + 1].value if i + 1 < len(args) else ""
            if name and name not in SET_OPTIONS:
                call.undecide("a shell option the reader does not read")
                return None
            i += 1
        if set(letters) - SHELL_FLAGS - {"o"}:
            call.undecide("a shell option the reader does not read")
            return None
        i += 1
    return None


def _shopt(call: Call) -> str | None:
    values = call.literal()
    if values is None:
        call.undecide("shopt's options are computed")
        return None
    setting = any(v.startswith("-") and set(v[1:]) & {"s", "u"} for v in values)
    names = [v for v in values if not v.startswith("-")]
    sets_o = any(v.startswith("-") and "o" in v for v in values)
    known = SET_OPTIONS if sets_o else SHOPT_OPTIONS
    if setting and any(n not in known for n in names):
        call.undecide("a shell option the reader does not read")
    return None


def _trap(call: Call) -> str | None:
    values = [w.value for w in call.args]
    if not values or values[0] in ("-l", "-p", "-lp", "-pl", "--"):
        values = values[1:] if values and values[0] == "--" else []
    if len(values) < 2:
        return None  # prints, or resets the signals
    action = values[0]
    if action is None:
        call.undecide("trap runs a computed string later")
    elif action not in ("", "-"):
        call.line(action)  # run later: read as run
    return None


def _eval(call: Call) -> str | None:
    texts = call.literal()
    if texts is None:
        call.undecide("eval runs a computed string")
    else:
        call.line(" ".join(texts))
    return None


def _source(call: Call) -> str | None:
    call.undecide("a sourced file's commands are not read")
    return None


def _alias(call: Call) -> str | None:
    reader = call.reader
    for word in call.args:
        if word.value is None:
            call.undecide("an alias is given a computed value")
            continue
        name, eq, value = word.value.partition("=")
        if not eq:
            continue
        call.undecide("an alias defined in the line may redefine the program", name)
        start = len(reader.found)
        reader.line(value, Ctx(), call.nest + 1)  # conservatively run
        for c in reader.found[start:]:
            call.undecide("an alias may add words to the command", c.program)
    return None


def _declare(call: Call) -> str | None:
    """``declare`` and the like given as plain words (``builtin declare ...``)."""
    for word in call.args:
        value = word.value
        if value is None:
            call.undecide("a declaration's option or name is computed")
        elif value.startswith(("-", "+")):
            if set(value[1:]) & set("inaA"):
                call.undecide("a declaration that evaluates or redirects names (-i, -n)")
        else:
            name, eq, assigned = value.partition("=")
            if "[" in name:
                call.undecide("an array subscript (arithmetic that may run code)")
            else:
                _assigns(call, name, assigned if eq else "0")
            if assigned.startswith("("):
                call.undecide("a declaration's value may be read as an array")
    return None


def _unset(call: Call) -> str | None:
    for word in call.args:
        value = word.value
        if value is None or ("[" in value and not re.search(r"\[([0-9]+|@|\*)\]$", value)):
            call.undecide("unset of a computed name or a subscript")
    return None


def _exec(call: Call) -> str | None:
    if call.redirect.own_input and not [w for w in call.args if w.value not in (None,)]:
        call.undecide("the shell's own input is redirected")
    if not call.args:
        if call.redirect.own_input:
            call.undecide("the shell's own input is redirected")
        return None
    return _wrapper(call)


def _refused(call: Call) -> str | None:
    call.undecide("a shell builtin that runs or binds commands the reader does not read")
    return None


# Wrappers and programs that run their arguments --------------------------------


def _wrapper(call: Call) -> str | None:
    spec = WRAPPERS[call.program]
    found = skip_options(spec, call.args)
    for name, given in found.assigned:
        _assigns(call, name, given)
    output = found.values.get("-o") or ""
    if call.program in ("strace", "ltrace") and output.startswith(("|", "!")):
        call.undecide("a program pipes its output into a command")
    if found.undecided:
        call.undecide(found.undecided)
    elif found.rest:
        return call.simple(found.rest)
    elif not found.stop and any(f"-{s}" in found.values for s in spec.shell):
        call.simple([Word.literal("sh")])  # sudo -s: a shell
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
        if word.value in ("-x", "--exec", "-X", "--exec-batch"):
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
_GIT_SAFE_KEYS = re.compile(
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
    "send-email": ("--to-cmd", "--cc-cmd", "--sendmail-cmd"),
}


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
            if key is None or not _GIT_SAFE_KEYS.fullmatch(key.partition("=")[0]):
                call.undecide("git is given configuration that may change what it runs")
            i += 2
            continue
        if value.startswith(("-c", "--config-env=")):
            key = value.removeprefix("--config-env=").removeprefix("-c")
            if not _GIT_SAFE_KEYS.fullmatch(key.partition("=")[0]):
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
    rest = [w.value for w in args[i + 1 :]]
    if sub == "config":
        if any(v is None for v in rest):
            call.undecide("git config may define an alias or a command")
            return None
        given = [v for v in rest if v is not None]
        keys = [v for v in given if not v.startswith("-")]
        writes = len(keys) >= 2 or any(o in _GIT_CONFIG_WRITES for o in given)
        if writes and not (keys and _GIT_SAFE_KEYS.fullmatch(keys[0])):
            call.undecide("git config may define an alias or a command")
    elif sub in _GIT_RUNS:
        options = _GIT_RUNS[sub]
        if "" in options or any(
            v is None
            or any(v == o or (o.startswith("--") and v.startswith(o + "=")) for o in options)
            for v in rest
        ):
            call.undecide("a git subcommand that runs a command of the line's")
    return None


def _make(call: Call) -> str | None:
    call.runs_file()
    for k, word in enumerate(call.args):
        value = word.value
        if value in ("-f", "--file", "--makefile") and k + 1 < len(call.args):
            following = call.args[k + 1].value
            if following is None or following == "-" or following.startswith(("/dev/", "/proc/")):
                call.undecide("make reads a makefile from its stdin or a descriptor")
                return None
        if value is None:
            call.undecide("make's options or variables are computed")
            return None
        if value in ("-E", "--eval", "-f-", "--file=-", "--makefile=-") or value.startswith(
            ("--eval=", "-E")
        ):
            call.undecide("make is given a makefile's text")
            return None
        name, eq, given = value.partition("=")
        if eq and not name.startswith("-") and re.search(r"[\s$`;|&()<>]", given):
            call.undecide("make is given a variable that may run a command")
            return None
    if any(a.value in ("-f", "--file", "--makefile") for a in call.args):
        pass  # a makefile named: a file, like the default one
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


#: Options whose value is a command the program runs (``tar --to-command``).
_COMMAND_OPTIONS: dict[str, tuple[frozenset[str], str]] = {
    "tar": (
        names(
            "--to-command --use-compress-program --checkpoint-action --info-script "
            "--new-volume-script --rsh-command --rmt-command"
        ),
        "IF",
    ),
    "rsync": (names("--rsh --rsync-path"), "e"),
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
        name = value.partition("=")[0]
        cluster = value[1:] if value.startswith("-") and not value.startswith("--") else ""
        if k == 0 and call.program == "tar" and not value.startswith("-"):
            cluster = value  # tar's old style: tar xIf ...
        if name in long or any(c in short for c in cluster) or value in ("-TT",):
            call.undecide("a program is given a command to run in an option")
            return None
    return None


# Shells ----------------------------------------------------------------------


def _shell(call: Call) -> None:
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
        _script(call, rest[0], shell=True)
        return
    _reads_stdin(call, shell=True)


def _script(call: Call, script: Word, *, shell: bool) -> None:
    """A shell or an interpreter given a script to run."""
    path = script.value
    if path is None:
        if script.prefix == "/dev/fd/":
            call.undecide("a program runs the output of a process substitution")
        else:
            call.undecide("a program runs a computed file")
        return
    if path in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        _reads_stdin(call, shell=shell)
    elif path.startswith(("/dev/", "/proc/")):
        call.undecide("a program runs what another descriptor holds")
    else:
        call.runs_file()


def _reads_stdin(call: Call, *, shell: bool) -> None:
    stdin = call.ctx.stdin
    if stdin in ("none", "null"):
        return
    if stdin == "file":
        call.runs_file()
    elif stdin == "text" and shell:
        call.line(call.ctx.text, Ctx(call.ctx.inputs, "unknown"))
    elif stdin == "text":
        call.undecide("a program reads code of its own language from its stdin")
    else:
        call.undecide("a program reads its commands from a pipe or a descriptor")


def _foreign_shell(call: Call) -> None:
    values = call.literal()
    if values is None or any(v.startswith(("-", "+")) for v in values):
        call.undecide("a shell whose syntax is not read is given options or code")
    elif values:
        _script(call, call.args[0], shell=False)
    else:
        _reads_stdin(call, shell=False)


# Interpreters ----------------------------------------------------------------


def _interpreter(call: Call, spec: Interpreter) -> None:
    """Understood when it runs a script file, with options that carry no code."""
    args = call.args
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if value is None:
            if word.may_be_flag:
                call.undecide("an interpreter's options are computed")
                return
            break
        if value == "--":
            i += 1
            break
        if value == "-":
            break
        if value.startswith("+"):
            call.undecide("an interpreter is given commands")
            return
        if value.startswith("--"):
            name, eq, _ = value.partition("=")
            if name in spec.long_flags:
                i += 1
            elif name in spec.long_values:
                i += 1 if eq else 2
            else:
                call.undecide("an interpreter's option may carry code")
                return
            continue
        if not value.startswith("-"):
            break
        step = 1
        for j, letter in enumerate(value[1:], start=1):
            if letter in spec.flags:
                continue
            if letter in spec.values:
                step = 1 if j + 1 < len(value) else 2
                break
            if letter in spec.module:
                module = value[j + 1 :] or (args[i + 1].value if i + 1 < len(args) else None)
                if module is None or module in spec.code_modules:
                    call.undecide("an interpreter runs a module that runs its arguments as code")
                else:
                    call.runs_file()
                return
            call.undecide("an interpreter's option may carry code")
            return
        i += step
    rest = args[i:]
    if rest and rest[0].value != "-":
        _script(call, rest[0], shell=False)
    else:
        _reads_stdin(call, shell=False)


_SED_SIMPLE = frozenset("=dDgGhHlnNpPqQxzF")
_SED_LABEL_END = re.compile(r"[;\n]")


def _sed_script(script: str) -> str:
    """Whether a sed script runs a command: "runs" (an ``e`` command or an ``e``
    flag), "reads" (it runs nothing), or "unknown" (a form not parsed)."""
    i, n = 0, len(script)

    def skip_regex(at: int, delim: str) -> int:
        while at < n and script[at] != delim:
            at += 2 if script[at] == "\\" else 1
        return at + 1

    while i < n:
        c = script[i]
        if c in " \t\n;}!":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        # addresses
        m = re.match(
            r"(?:[0-9]+(?:~[0-9]+)?|\$|/(?:\\.|[^/\\])*/[IM]*|\\(.)(?:(?!\1).|\\.)*\1[IM]*)",
            script[i:],
        )
        if m and m.end() > 0:
            i += m.end()
            m2 = re.match(
                r"\s*,\s*(?:[0-9]+|\$|~[0-9]+|\+[0-9]+|/(?:\\.|[^/\\])*/[IM]*)", script[i:]
            )
            if m2:
                i += m2.end()
            continue
        if c == "{":
            i += 1
            continue
        if c in ("s", "y"):
            if i + 1 >= n:
                return "unknown"
            delim = script[i + 1]
            if delim in "\\\n":
                return "unknown"
            i = skip_regex(i + 2, delim)
            i = skip_regex(i, delim)
            if c == "s":
                m3 = re.match(r"[gpiImM0-9e]*", script[i:])
                flags = m3.group(0) if m3 else ""
                if "e" in flags:
                    return "runs"
                i += len(flags)
                if script[i : i + 1] == "w":
                    end = script.find("\n", i)
                    i = n if end < 0 else end + 1
            continue
        if c == "e":
            return "runs"
        if c in "aicrRwW":  # text, or a file's name, to the end of the line
            end = script.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c in ":btTv":  # a label, to a semicolon or the end of the line
            found = _SED_LABEL_END.search(script, i)
            i = n if found is None else found.end()
            continue
        if c in _SED_SIMPLE:
            i += 1
            while i < n and script[i].isdigit():
                i += 1
            continue
        return "unknown"
    return "reads"


def _sed(call: Call) -> None:
    call.writes()
    args = call.args
    scripts: list[str | None] = []
    files = False
    i = 0
    positional: list[Word] = []
    while i < len(args):
        value = args[i].value
        if value is None:
            if args[i].may_be_flag:
                call.undecide("sed's options are computed")
                return
            positional.append(args[i])
            i += 1
            continue
        if value == "--sandbox":
            return  # no e, r or w commands
        if value in ("-e", "--expression"):
            scripts.append(args[i + 1].value if i + 1 < len(args) else "")
            i += 2
            continue
        if value.startswith("--expression="):
            scripts.append(value.partition("=")[2])
        elif value in ("-f", "--file") or value.startswith("--file="):
            files = True
            i += 1 if "=" in value else 2
            continue
        elif value.startswith("-e") and not value.startswith("--"):
            scripts.append(value[2:])
        elif value.startswith("-f") and not value.startswith("--"):
            files = True
        elif value in ("-l", "--line-length"):
            i += 2
            continue
        elif value.startswith("-") and value != "-":
            if not re.fullmatch(r"-[nrEsuzi][A-Za-z0-9.]*|--[a-z-]+(=.*)?", value):
                call.undecide("sed's option is not understood")
                return
        else:
            positional.append(args[i])
        i += 1
    if not scripts and not files:
        if not positional:
            return
        scripts.append(positional[0].value)
    for script in scripts:
        if script is None:
            call.undecide("sed runs a computed script")
            return
        verdict = _sed_script(script)
        if verdict != "reads":
            call.undecide("sed's script may run a command")
            return
    if files:
        call.runs_file()


def _awk(call: Call) -> None:
    call.writes()
    args = call.args
    program: str | None = None
    have_program = False
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            if not have_program or args[i].may_be_flag:
                call.undecide("awk's program or options are computed")
                return
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if value in ("-f", "--file") or value.startswith("-f"):
            have_program = True
            call.runs_file()
            i += 1 if len(value) > 2 and not value.startswith("--") else 2
            continue
        if value in ("-F", "-v") or value in ("--field-separator", "--assign"):
            i += 2
            continue
        if value.startswith(("-F", "-v")):
            i += 1
            continue
        if value.startswith("-") and value != "-":
            call.undecide("awk's option may carry code")
            return
        break
    if not have_program:
        if i >= len(args):
            return
        program = args[i].value
        if program is None:
            call.undecide("awk's program is computed")
            return
        if re.search(r"system|getline|@|(?<!\|)\|(?!\|)", program):
            call.undecide("awk's program may run a command")


def _console(call: Call) -> None:
    """A program that reads commands of its own language (a database shell, an
    editor, a debugger): understood when given at most one file and no option."""
    values = call.literal()
    if values is None or len(values) > 1 or any(v.startswith(("-", "+")) for v in values):
        call.undecide("a program that reads commands of its own is given some")
        return
    if values:
        call.runs_file()
    else:
        _reads_stdin(call, shell=False)


_CONSOLES = names(
    "dc ed ex vi vim nvim view emacs gdb lldb gnuplot sqlite3 psql mysql expect "
    "osascript tclsh wish"
)


def _interpreter_call(program: str) -> Handler:
    spec = interpreter(program)
    assert spec is not None

    def handler(call: Call) -> str | None:
        _interpreter(call, spec)
        return None

    return handler


def _sed_handler(call: Call) -> str | None:
    _sed(call)
    return None


def _awk_handler(call: Call) -> str | None:
    _awk(call)
    return None


def _console_handler(call: Call) -> str | None:
    _console(call)
    return None


_INERT = [
    ":",
    "true",
    "false",
    "pwd",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "umask",
    "ulimit",
    "times",
    "help",
    "logout",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
    "kill",
    "disown",
    "suspend",
    "caller",
    "fg",
    "bg",
    "type",
    "history",
    "unalias",
]
_HANDLERS: dict[str, Handler] = {
    **{name: _inert for name in _INERT},
    "echo": _echo,
    "printf": _printf,
    "read": _read,
    "getopts": _getopts,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "wait": _wait,
    "jobs": _jobs,
    "hash": _hash,
    "test": _test,
    "[": _test,
    "set": _set,
    "shopt": _shopt,
    "trap": _trap,
    "eval": _eval,
    "source": _source,
    ".": _source,
    "alias": _alias,
    "declare": _declare,
    "typeset": _declare,
    "local": _declare,
    "export": _declare,
    "readonly": _declare,
    "unset": _unset,
    "exec": _exec,
    **{
        name: _refused
        for name in ["let", "enable", "compgen", "complete", "compopt", "bind", "fc", "coproc"]
    },
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
    "git": _git,
    "make": _make,
    "gmake": _make,
    "cat": _cat,
    "tee": _tee,
    **{name: _subcommand_runner for name in _SUBCOMMAND_RUNNERS},
    **{name: _command_options for name in _COMMAND_OPTIONS},
    **{name: _sed_handler for name in ("sed", "gsed")},
    **{name: _awk_handler for name in ("awk", "gawk", "mawk", "nawk")},
    **{name: _console_handler for name in _CONSOLES},
}

#: Every name in a table (any other program takes its words as data), and the
#: first letters of the versioned interpreters' names (python3.12, luajit, nodejs).
_TABLED = frozenset(
    [*_HANDLERS, *WRAPPERS, *BUILTINS, *SHELLS, *FOREIGN_SHELLS, *RUNS_COMMANDS, *FILE_RUNNERS]
)
_VERSIONED_STARTS = frozenset("prlntw")
