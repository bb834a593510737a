"""Programs that run code of a language of their own: interpreters, ``sed`` and
``awk``, and the programs that read commands (a database shell, an editor). The
code is not read: a program is understood when it runs a file, or (``sed``,
``awk``) a script that runs no command."""

from __future__ import annotations

import re

from ...base.patterns import LazyPattern
from .calls import Call, Handler, reads_stdin, run_script
from .options import long_option, short_options
from .programs import Interpreter, names
from .words import Word

__all__ = ["HANDLERS", "interpret"]


def interpret(call: Call, spec: Interpreter) -> None:
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
        run_script(call, rest[0], shell=False)
    else:
        reads_stdin(call, shell=False)


_SED_SIMPLE = frozenset("=dDgGhHlnNpPqQxzF")
_SED_LABEL_END = LazyPattern(r"[;\n]")


_SED_ADDRESS = LazyPattern(
    r"(?:[0-9]+(?:~[0-9]+)?|\$|/(?:\\.|[^/\\])*/[IM]*|\\(.)(?:(?!\1).|\\.)*\1[IM]*)"
)
_SED_SECOND_ADDRESS = LazyPattern(r"\s*,\s*(?:[0-9]+|\$|~[0-9]+|\+[0-9]+|/(?:\\.|[^/\\])*/[IM]*)")
_SED_FLAGS = LazyPattern(r"[gpiImM0-9e]*")


def _sed_script(script: str) -> str:
    """Whether a sed script runs a command: "runs" (an ``e`` command or an ``e``
    flag), "reads" (it runs nothing), or "unknown" (a form not parsed)."""
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        address = _SED_ADDRESS().match(script, i)
        if c in " \t\n;{}!":
            i += 1
        elif address is not None and address.end() > i:
            second = _SED_SECOND_ADDRESS().match(script, address.end())
            i = address.end() if second is None else second.end()
        elif c in ("s", "y"):
            after = _sed_substitution(script, i)
            if after is None or after < 0:
                return "unknown" if after is None else "runs"
            i = after
        elif c == "e":
            return "runs"
        elif c in "#aicrRwW":  # a comment, text or a file's name, to the end of the line
            end = script.find("\n", i)
            i = n if end < 0 else end + 1
        elif c in ":btTv":  # a label, to a semicolon or the end of the line
            found = _SED_LABEL_END().search(script, i)
            i = n if found is None else found.end()
        elif c in _SED_SIMPLE:
            i += 1
            while i < n and script[i].isdigit():
                i += 1
        else:
            return "unknown"
    return "reads"


def _sed_substitution(script: str, i: int) -> int | None:
    """Past an ``s`` or ``y`` command at ``i``: where the next command may start;
    -1 when it has the ``e`` flag (it runs its pattern space), None when not read."""
    n = len(script)
    if i + 1 >= n or script[i + 1] in "\\\n":
        return None
    delim = script[i + 1]
    at = i + 2
    for _ in range(2):  # the pattern, then the replacement
        while at < n and script[at] != delim:
            at += 2 if script[at] == "\\" else 1
        at += 1
    if script[i] == "y":
        return at
    flags = _SED_FLAGS().match(script, at)
    given = flags.group(0) if flags else ""
    if "e" in given:
        return -1
    at += len(given)
    if script[at : at + 1] == "w":  # a file to write, to the end of the line
        end = script.find("\n", at)
        return n if end < 0 else end + 1
    return at


#: GNU sed's short options: those taking a value, an optional attached one, none.
_SED_VALUES = "efl"
_SED_OPTIONAL = "i"
_SED_LETTERS = "nrEsuzb"
#: Its long options taking a value (in the next word when no ``=`` is given),
#: those whose value is optional (attached only), and those taking none; any
#: prefix of one is that one (an ambiguous one read as the one carrying code).
_SED_LONG_VALUES = ("--expression", "--file", "--line-length")
_SED_LONG_OPTIONAL = ("--in-place",)
_SED_LONG_FLAGS = sorted(
    names(
        "--quiet --silent --debug --posix --regexp-extended --separate --unbuffered "
        "--null-data --zero-terminated --follow-symlinks --binary --help --version --sandbox"
    )
)


def _sed(call: Call) -> None:
    """Every script sed is given (each ``-e``, attached or not, inside a cluster:
    ``-ne SCRIPT``, ``-Ee SCRIPT``, ``--exp=SCRIPT``; or its first word when none
    is) is read for the commands that run one (``e``, the ``s///e`` flag)."""
    call.writes()
    args = call.args
    scripts: list[str | None] = []
    script_files: list[str | None] = []
    files = sandbox = False
    i = 0
    positional: list[Word] = []
    while i < len(args):
        value = args[i].value
        following = args[i + 1].value if i + 1 < len(args) else ""
        if value is None:
            if args[i].may_be_flag:
                call.undecide("sed's options are computed")
                return
            positional.append(args[i])
            i += 1
            continue
        if value == "--":
            positional.extend(args[i + 1 :])
            break
        if value.startswith("--"):
            name, eq, attached = value.partition("=")
            long = long_option(name, (*_SED_LONG_VALUES, *_SED_LONG_OPTIONAL, *_SED_LONG_FLAGS))
            if long is None:
                call.undecide("sed's option is not understood")
                return
            given = attached if eq else following
            if long == "--expression":
                scripts.append(given)
            elif long == "--file":
                files = True
                script_files.append(given)
            sandbox = sandbox or name == "--sandbox"
            i += 2 if long in _SED_LONG_VALUES and not eq else 1
            continue
        if value.startswith("-") and value != "-":
            cluster = short_options(
                value, following, values=_SED_VALUES, flags=_SED_LETTERS, optional=_SED_OPTIONAL
            )
            if cluster.unknown:
                call.undecide("sed's option is not understood")
                return
            for letter, given_value in cluster.letters:
                if letter == "e":
                    scripts.append(given_value)
                elif letter == "f":
                    files = True
                    script_files.append(given_value)
            i += cluster.used
            continue
        positional.append(args[i])
        i += 1
    if sandbox:
        return  # no e, r or w commands
    if any(f is None or f == "-" or f.startswith(("/dev/", "/proc/")) for f in script_files):
        call.undecide("sed reads its script from its stdin or a descriptor")
        return
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
        reads_stdin(call, shell=False)


_CONSOLES = names(
    "dc ed ex vi vim nvim view emacs gdb lldb gnuplot sqlite3 psql mysql expect "
    "osascript tclsh wish"
)


def _sed_handler(call: Call) -> str | None:
    _sed(call)
    return None


def _awk_handler(call: Call) -> str | None:
    _awk(call)
    return None


def _console_handler(call: Call) -> str | None:
    _console(call)
    return None


HANDLERS: dict[str, Handler] = {
    **{name: _sed_handler for name in ("sed", "gsed")},
    **{name: _awk_handler for name in ("awk", "gawk", "mawk", "nawk")},
    **{name: _console_handler for name in _CONSOLES},
}
