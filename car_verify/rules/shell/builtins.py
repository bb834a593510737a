"""The bash builtins a line may run, and the programs whose output is known text
(``echo``, ``cat`` and ``tee`` of a known stdin): what each reads of its words.

A builtin not in :data:`HANDLERS` is undecided (:mod:`.runners`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .calls import Call, Handler, assigns
from .model import Ctx
from .programs import SET_OPTIONS, SHELL_FLAGS, SHOPT_OPTIONS, names
from .words import Word

__all__ = ["HANDLERS", "TEST_SUBSCRIPTS", "test_words_problem"]


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
    """``printf``'s ``-v NAME`` (an assignment), and its output when its format
    has no conversion (:func:`_printf_output`)."""
    args = list(call.args)
    to_variable = False
    while args:
        value = args[0].value
        if value is None:
            call.undecide("printf's options are computed")
            return None
        if value == "--":
            break
        if value.startswith("-v"):
            name = value[2:] or (args[1].value if len(args) > 1 else "")
            assigns(call, name)
            args = args[1:] if value[2:] else args[2:]
            to_variable = True
            continue
        break
    if args and args[0].value == "--":
        args = args[1:]
    if to_variable or not args:
        return None
    return _printf_output(args[0].value)


_PRINTF_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def _printf_output(form: str | None) -> str | None:
    """What ``printf FORMAT`` writes when its format has no conversion and only
    the simple escapes (``printf 'rm -rf x\n'``); None for any other."""
    if form is None:
        return None
    out: list[str] = []
    i = 0
    while i < len(form):
        c = form[i]
        if c == "%":
            if form[i + 1 : i + 2] != "%":
                return None  # a conversion: its arguments, formatted
            out.append("%")
            i += 2
            continue
        if c == "\\":
            escaped = _PRINTF_ESCAPES.get(form[i + 1 : i + 2])
            if escaped is None:
                return None  # octal, hex, unicode ...: not evaluated
            out.append(escaped)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


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
                    assigns(call, given)
                i += 1 if value[2:] else 2
                continue
            i += 1
            continue
        operands.append(args[i])
        i += 1
    return_names = operands
    for word in return_names:
        assigns(call, word.value)


def _read(call: Call) -> str | None:
    _names(call, "adeinNptu", names_from="a")
    return None


def _getopts(call: Call) -> str | None:
    """``getopts OPTSTRING NAME [ARGS]``: NAME is assigned."""
    values = call.literal()
    if values is None:
        call.undecide("a builtin's option or variable name is computed")
        return None
    if values[:1] == ["--"]:
        values = values[1:]
    if len(values) >= 2:
        assigns(call, values[1])
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
    """``eval`` runs its words joined by spaces (after ``--``, which ends its
    options)."""
    texts = call.literal()
    if texts is None:
        call.undecide("eval runs a computed string")
    else:
        call.line(" ".join(texts[1:] if texts[:1] == ["--"] else texts))
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
                assigns(call, name, assigned if eq else "0")
            if assigned.startswith("("):
                call.undecide("a declaration's value may be read as an array")
    return None


def _unset(call: Call) -> str | None:
    for word in call.args:
        value = word.value
        if value is None or ("[" in value and not re.search(r"\[([0-9]+|@|\*)\]$", value)):
            call.undecide("unset of a computed name or a subscript")
    return None


def _refused(call: Call) -> str | None:
    call.undecide("a shell builtin that runs or binds commands the reader does not read")
    return None


_INERT = names(
    ": true false pwd cd pushd popd dirs umask ulimit times help logout exit return "
    "break continue shift kill disown suspend caller fg bg type history unalias"
)
_REFUSED = names("let enable compgen complete compopt bind fc coproc")
HANDLERS: dict[str, Handler] = {
    **{name: _inert for name in _INERT},
    **{name: _refused for name in _REFUSED},
    "echo": _echo,
    "printf": _printf,
    "cat": _cat,
    "tee": _tee,
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
}
