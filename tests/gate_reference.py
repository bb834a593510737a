"""A reference gate, written plainly: one rule at a time, each rule kind by its
definition over the whole history of the run, no shared state, no monitor, no
parser of its own.

The one gate (``car_verify.plan.gate.CallGate``) and every face that asks it (the
executor, the agent hook) are held to this in ``tests/test_gate.py``. There is a
definition here for every kind of the registry (``car_verify.rules.kinds.KINDS``):
:data:`DEFINITIONS`, keyed by the kind's name; a test fails on a kind without one.

A call is a tool, its parameters and the run's state. A shell line is never
parsed here: the lines the tests send are built from :class:`Segment` values whose
commands (each command's words as the shell gives them, and the programs whose
output reaches it) are written out by hand, and the definitions of ``deny_command``
and ``allow_command`` read those.

The definitions (each answers ``allow``, ``deny`` or ``undecided``):

* ``deny_tool T``: a call of ``T`` is denied.
* ``deny_keyword K``: a call is denied when a parameter's name holds ``K``, or its
  value's text does (a string as it is; anything else as compact JSON, and every
  string inside it, object keys too).
* ``deny_tool_param T.p [== v] [contains s]``: a call of ``T`` is denied when ``p``
  is present and equals ``v`` (JSON equality) and a text of it holds ``s``.
* ``allow_tool_param T.p in [...]``: a call of ``T`` is denied unless ``p`` is
  present and its text (a string, or compact JSON) is listed.
* ``deny_tool_param_matching T.p ~ re``: a call of ``T`` is denied when ``p`` is
  present and Python's ``re.search`` finds ``re`` in a text of it (the patterns
  the tests use mean the same in RE2).
* ``deny_command T.p program flags args input_from``: a call of ``T`` (without
  case) whose ``p`` is a line is denied when a command of the line has ``program``
  as its first word's base name, every flag (in the flag table's spellings),
  every arg among its words, and one of ``input_from`` feeding it; else undecided
  when a part of the line is not understood for that program (or for any); a
  line that cannot be read is denied.
* ``allow_command T.p prefixes``: such a call is denied when a command of the line
  starts with no prefix (word for word; a command with a computed word, when its
  first word starts none), or the line cannot be read; else undecided when a part
  of it is not understood, a word is computed, or it assigns a variable; else
  allowed.
* ``rate_limit_tool T max N`` (a window longer than the run): a call of ``T`` is
  denied when ``N`` calls of ``T`` took a slot before it; a call takes a slot
  when this rule admits it, whatever the other rules say.
* Registered: ``deny_tool T``; ``deny_tool_param T.k`` (the text of ``k`` holds a
  pattern); ``require_state k == v`` (denied unless the state holds ``v`` at
  ``k``); a callback (denied when ``p`` is 2, on its tool or any).
* Trace rules are asked only about a call no rule above denies:
  * ``never C``: a call matching ``C`` is denied;
  * ``never C after E``: denied when some earlier dispatched call matches ``E``;
  * ``never C after E <outcome>``: denied when some earlier call matching ``E``
    reported that outcome;
  * ``C only after E``: denied unless some earlier call matching ``E`` reported an
    outcome (``E <outcome>``: that outcome);
  * ``at most N C``: denied when ``N`` dispatched calls matched ``C`` before it.
* The decision: ``deny`` when a rule of one call denies, or (none does) a trace
  rule does; else, when a rule is undecided, the face's answer to that
  (``on_unknown``); else ``allow``. A call not denied is dispatched. The rules
  named are the deniers of the first stage that denies, and the undecided ones.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Outcome = Literal["succeeded", "failed"]
Answer = Literal["allow", "deny", "undecided"]


@dataclass(frozen=True)
class Call:
    tool: str
    params: dict[str, Any]
    state: dict[str, Any] | None = None


# --- what a content rule reads -------------------------------------------------------------------


def text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"),
                                                           ensure_ascii=False)  # fmt: skip


def texts(value: Any) -> list[str]:
    """The value's text, and every string inside it (object keys too)."""
    out = [text(value)]

    def inside(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                out.append(k)
                inside(x)
        elif isinstance(v, list):
            for x in v:
                inside(x)

    if not isinstance(value, str):
        inside(value)
    return out


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def q(value: Any) -> str:
    """A TOML value."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {q(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(q(v) for v in value) + "]"
    return json.dumps(value)


# --- shell lines, written out by hand ------------------------------------------------------------


@dataclass(frozen=True)
class Cmd:
    words: tuple[str, ...]
    inputs: frozenset[str] = frozenset()
    known: bool = True  # False: the shell computes one of its words (``ls $DIR``)


@dataclass(frozen=True)
class Segment:
    """A piece of a line: its text, the commands it runs, the programs for which
    something in it is not understood (``ANY``: for every program), whether it
    assigns a variable, whether bash could not even parse it, whether it runs a
    file or may write one (a line where one piece runs a file another may write is
    not understood)."""

    text: str
    commands: tuple[Cmd, ...] = ()
    unknown: frozenset[str] = frozenset()
    assigns: bool = False
    unreadable: bool = False
    #: It runs what a file holds (``git push``: its hooks; ``npm run``: the scripts of
    #: package.json; ``PATH=. ls``: ``./ls``), or it may write a file (``rm``, ``curl``).
    runs_file: bool = False
    writes: bool = False
    #: It runs what git's configuration names (``git status``: ``core.fsmonitor``),
    #: a file no other git subcommand writes.
    runs_config: bool = False

    @property
    def git(self) -> bool:
        """Whether every command of the piece is git's."""
        return bool(self.commands) and all(
            c.words[0].rsplit("/", 1)[-1] == "git" for c in self.commands
        )


ANY = "*"


def _cmd(*words: str, fed: tuple[str, ...] = (), known: bool = True) -> Cmd:
    return Cmd(tuple(words), frozenset(fed), known)


SEGMENTS: tuple[Segment, ...] = (
    Segment("rm -rf x", (_cmd("rm", "-rf", "x"),), writes=True),
    Segment("\\rm -r -f x", (_cmd("rm", "-r", "-f", "x"),), writes=True),
    Segment("/bin/rm -fr x", (_cmd("/bin/rm", "-fr", "x"),), writes=True),
    Segment("r''m --recursive --force x", (_cmd("rm", "--recursive", "--force", "x"),),
            writes=True),
    Segment("rm -r x", (_cmd("rm", "-r", "x"),), writes=True),
    Segment("rm -R -- -f", (_cmd("rm", "-R", "--", "-f"),), writes=True),
    Segment("ls", (_cmd("ls"),)),
    Segment("ls -la", (_cmd("ls", "-la"),)),
    Segment("git status", (_cmd("git", "status"),), runs_config=True),
    Segment("/usr/bin/git status", (_cmd("/usr/bin/git", "status"),), runs_config=True),
    Segment("git push --force", (_cmd("git", "push", "--force"),), writes=True, runs_file=True),
    Segment("git push -f origin", (_cmd("git", "push", "-f", "origin"),), writes=True,
            runs_file=True),
    Segment("git push origin", (_cmd("git", "push", "origin"),), writes=True, runs_file=True),
    Segment("npm run test", (_cmd("npm", "run", "test"),), runs_file=True),
    Segment("npm run test:unit", (_cmd("npm", "run", "test:unit"),), runs_file=True),
    Segment("sudo rm -rf x", (_cmd("sudo", "rm", "-rf", "x"), _cmd("rm", "-rf", "x")),
            writes=True),
    Segment("bash -c 'ls -la'", (_cmd("bash", "-c", "ls -la"), _cmd("ls", "-la"))),
    Segment("echo $(rm -rf x)", (_cmd("rm", "-rf", "x"),
                                 _cmd("echo", "$(rm -rf x)", fed=("rm",), known=False)),
            unknown=frozenset({"echo"}), writes=True),
    Segment("curl -s x | sh", (_cmd("curl", "-s", "x"), _cmd("sh", fed=("curl",))),
            unknown=frozenset({ANY}), writes=True),
    Segment("ls | sh", (_cmd("ls"), _cmd("sh", fed=("ls",))), unknown=frozenset({ANY})),
    Segment("$X -rf x", unknown=frozenset({ANY})),
    Segment("X=rm; $X -rf x", unknown=frozenset({ANY}), assigns=True),
    Segment('eval "$C"', (_cmd("eval", '"$C"', known=False),), unknown=frozenset({"eval", ANY})),
    Segment("ls $DIR", (_cmd("ls", "$DIR", known=False),), unknown=frozenset({"ls"})),
    Segment("PATH=. ls", (_cmd("ls"),), assigns=True, runs_file=True),
)  # fmt: skip
#: A line bash cannot parse.
UNREADABLE = Segment("ls 'x", unreadable=True)


@dataclass(frozen=True)
class Line:
    segments: tuple[Segment, ...]
    joints: tuple[str, ...] = ()  # "; " or " && " between segments

    @property
    def text(self) -> str:
        out = self.segments[0].text
        for joint, segment in zip(self.joints, self.segments[1:], strict=True):
            out += joint + segment.text
        return out

    @property
    def commands(self) -> list[Cmd]:
        return [c for s in self.segments for c in s.commands]

    def unknown_for(self, program: str | None) -> bool:
        """Whether a part of the line is not understood for ``program`` (None: any)."""
        marks = {m for s in self.segments for m in s.unknown}
        pieces = list(enumerate(self.segments))
        if any(
            i != j and b.writes and (a.runs_file or (a.runs_config and not b.git))
            for i, a in pieces
            for j, b in pieces
        ):
            marks.add(ANY)  # it runs a file another of its pieces may have written
        return bool(marks) if program is None else bool(marks & {ANY, program})

    @property
    def assigns(self) -> bool:
        return any(s.assigns for s in self.segments)

    @property
    def unreadable(self) -> bool:
        return any(s.unreadable for s in self.segments)


#: Each line sent so far, by its text: what the definitions read of a call's line.
LINES: dict[str, Line] = {}


def line_value(line: Line) -> str:
    LINES[line.text] = line
    return line.text


def _flags(words: tuple[str, ...]) -> set[str]:
    out: set[str] = set()
    for w in words:
        if w == "--":
            break
        if w.startswith("--") and len(w) > 2:
            out.add(w.split("=", 1)[0])
        elif w.startswith("-") and len(w) > 1:
            out.update(f"-{c}" for c in w[1:])
        elif w.startswith("+") and len(w) > 1:
            out.add("+REFSPEC")
    return out


#: Equal spellings of a flag (the few the tests use): docs/policies.md's table.
SPELLINGS = {
    "rm": [{"-r", "-R", "--recursive"}, {"-f", "--force"}],
    "git push": [{"-f", "--force", "--force-with-lease", "--mirror", "+REFSPEC"}],
}


def _has_flags(program: str, words: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    table = program
    given = words[1:]
    if program == "git" and "push" in given:
        table, given = "git push", given[given.index("push") + 1 :]
    have = _flags(given)
    for flag in _flags(wanted):  # a rule's -rf is -r and -f, as a command's is
        spellings = next((s for s in SPELLINGS.get(table, []) if flag in s), {flag})
        if not have & spellings:
            return False
    return True


# --- the definitions, one per kind ---------------------------------------------------------------


class Rule:
    """A rule of one kind: ``kind`` is the registry's name for it."""

    kind: ClassVar[str]
    name: str

    def toml(self) -> str:
        """The rule as a policy file's table ("" for a registered rule)."""
        return ""

    def register(self, engine: Any) -> None:
        raise NotImplementedError

    def renamed(self, prefix: str) -> Rule:
        """The rule with ``prefix`` before the name it was given (a trace rule's, a
        registered rule's), to tell it from the same rule of another set; a rule
        named by what it says keeps its name."""
        import dataclasses

        given = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        for field_name in ("label", "name"):
            if field_name in given:
                renamed: Rule = dataclasses.replace(
                    self,  # type: ignore[type-var]
                    **{field_name: prefix + getattr(self, field_name)},
                )
                return renamed
        return self

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        raise NotImplementedError


@dataclass
class DenyTool(Rule):
    tool: str
    kind = "deny_tool"

    def __post_init__(self) -> None:
        self.name = f"deny_tool:{self.tool}"

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        return "deny" if call.tool == self.tool else "allow"


@dataclass
class DenyKeyword(Rule):
    word: str
    number: int  # its place in the merged list, from 1
    kind = "deny_keyword"

    def __post_init__(self) -> None:
        self.name = f"deny_keyword:{self.number}"

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        for key, value in call.params.items():
            if self.word in key or any(self.word in t for t in texts(value)):
                return "deny"
        return "allow"


@dataclass
class DenyToolParam(Rule):
    tool: str
    param: str
    equals: Any = None
    contains: str | None = None
    has_equals: bool = False
    kind = "deny_tool_param"

    def __post_init__(self) -> None:
        self.name = f"deny_tool_param:{self.tool}.{self.param}"

    def toml(self) -> str:
        out = f"[[deny_tool_param]]\ntool = {q(self.tool)}\nparam = {q(self.param)}\n"
        if self.has_equals:
            out += f"equals = {q(self.equals)}\n"
        if self.contains is not None:
            out += f"contains = {q(self.contains)}\n"
        return out

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if call.tool != self.tool or self.param not in call.params:
            return "allow"
        value = call.params[self.param]
        if self.has_equals and not json_equal(value, self.equals):
            return "allow"
        if self.contains is not None and not any(self.contains in t for t in texts(value)):
            return "allow"
        return "deny"


@dataclass
class AllowToolParam(Rule):
    tool: str
    param: str
    allow: tuple[str, ...]
    kind = "allow_tool_param"

    def __post_init__(self) -> None:
        self.name = f"allow_tool_param:{self.tool}.{self.param}"

    def toml(self) -> str:
        return (f"[[allow_tool_param]]\ntool = {q(self.tool)}\nparam = {q(self.param)}\n"
                f"allow = {q(list(self.allow))}\n")  # fmt: skip

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if call.tool != self.tool:
            return "allow"
        if self.param not in call.params or text(call.params[self.param]) not in self.allow:
            return "deny"
        return "allow"


@dataclass
class DenyToolParamMatching(Rule):
    tool: str
    param: str
    pattern: str
    kind = "deny_tool_param_matching"

    def __post_init__(self) -> None:
        self.name = f"deny_tool_param_matching:{self.tool}.{self.param}"

    def toml(self) -> str:
        return (f"[[deny_tool_param_matching]]\ntool = {q(self.tool)}\nparam = {q(self.param)}\n"
                f"matches = {q(self.pattern)}\n")  # fmt: skip

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if call.tool != self.tool or self.param not in call.params:
            return "allow"
        found = any(re.search(self.pattern, t) for t in texts(call.params[self.param]))
        return "deny" if found else "allow"


def _line_of(call: Call, tool: str, param: str) -> Line | Literal["none"] | None:
    """The line a shell rule reads of ``call`` (None: the rule does not judge it;
    "none": the parameter holds no line)."""
    if call.tool.casefold() != tool.casefold() or param not in call.params:
        return None
    value = call.params[param]
    if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
        return Line((Segment(" ".join(value), (Cmd(tuple(value)),)),))  # an argv: its words
    if not isinstance(value, str):
        return "none"
    return LINES[value]


@dataclass
class DenyCommand(Rule):
    program: str
    flags: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    input_from: tuple[str, ...] = ()
    tool: str = "Bash"
    kind = "deny_command"

    def __post_init__(self) -> None:
        self.name = f"deny_command:{self.tool}.{self.program}"

    def toml(self) -> str:
        return (f"[[deny_command]]\ntool = {q(self.tool)}\nprogram = {q(self.program)}\n"
                f"flags = {q(list(self.flags))}\nargs = {q(list(self.args))}\n"
                f"input_from = {q(list(self.input_from))}\n")  # fmt: skip

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        line = _line_of(call, self.tool, "command")
        if line is None:
            return "allow"
        if line == "none":
            return "undecided"
        if line.unreadable:
            return "deny"
        for c in line.commands:
            if (
                os.path.basename(c.words[0]) == self.program
                and _has_flags(self.program, c.words, self.flags)
                and all(a in c.words[1:] for a in self.args)
                and (not self.input_from or bool(c.inputs & set(self.input_from)))
            ):
                return "deny"
        return "undecided" if line.unknown_for(self.program) else "allow"


@dataclass
class AllowCommand(Rule):
    prefixes: tuple[str, ...]
    tool: str = "Bash"
    kind = "allow_command"

    def __post_init__(self) -> None:
        self.name = f"allow_command:{self.tool}.command"

    def toml(self) -> str:
        return f"[[allow_command]]\ntool = {q(self.tool)}\nprefixes = {q(list(self.prefixes))}\n"

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        line = _line_of(call, self.tool, "command")
        if line is None:
            return "allow"
        if line == "none":
            return "undecided"
        if line.unreadable:
            return "deny"
        computed = False
        for c in line.commands:
            words = [tuple(p.split()) for p in self.prefixes]
            if c.known and not any(c.words[: len(w)] == w for w in words):
                return "deny"
            if not c.known and not any(c.words[0] == w[0] for w in words):
                return "deny"  # its program is on no prefix: whatever its words
            computed |= not c.known
        return "undecided" if line.unknown_for(None) or line.assigns or computed else "allow"


@dataclass
class RateLimit(Rule):
    tool: str
    limit: int
    kind = "rate_limit_tool"

    def __post_init__(self) -> None:
        self.name = f"rate_limit_tool:{self.tool}"

    def toml(self) -> str:
        return (f"[[rate_limit_tool]]\ntool = {q(self.tool)}\nmax_calls = {self.limit}\n"
                "interval_secs = 86400\n")  # fmt: skip

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if call.tool != self.tool:
            return "allow"
        if slots.get(me, 0) >= self.limit:
            return "deny"
        slots[me] = slots.get(me, 0) + 1
        return "allow"


@dataclass
class RegisteredDenyTool(Rule):
    name: str
    target: str
    kind = "registered deny_tool"

    def register(self, engine: Any) -> None:
        engine.register_policy(self.name, "deny_tool", self.target)

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        return "deny" if call.tool == self.target else "allow"


@dataclass
class RegisteredDenyToolParam(Rule):
    name: str
    target: str
    key: str
    pattern: str
    kind = "registered deny_tool_param"

    def register(self, engine: Any) -> None:
        engine.register_policy(self.name, "deny_tool_param", self.target, self.key, self.pattern)

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if call.tool != self.target or self.key not in call.params:
            return "allow"
        return "deny" if self.pattern in text(call.params[self.key]) else "allow"


@dataclass
class RegisteredRequireState(Rule):
    name: str
    key: str
    value: Any
    kind = "registered require_state"

    def register(self, engine: Any) -> None:
        engine.register_policy(self.name, "require_state", None, self.key, None,
                               json.dumps(self.value))  # fmt: skip

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        state = call.state or {}
        ok = self.key in state and json_equal(state[self.key], self.value)
        return "allow" if ok else "deny"


@dataclass
class RegisteredCallback(Rule):
    name: str
    target: str | None
    kind = "registered deny_tool_callback"

    @staticmethod
    def refuses(params: dict[str, Any]) -> bool:
        return params.get("p") == 2 and not isinstance(params.get("p"), bool)

    def register(self, engine: Any) -> None:
        def callback(tool: str, params: Any, action: Any) -> Any:
            return "p is two" if self.refuses(dict(params)) else None

        engine.register_callback(self.name, callback, self.target)

    def decide(self, call: Call, slots: dict[int, int], me: int) -> Answer:
        if self.target is not None and call.tool != self.target:
            return "allow"
        return "deny" if self.refuses(call.params) else "allow"


# --- trace rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    tool: str | None  # None: any tool
    test: tuple[str, Any] | None = None  # (param, value): param == value
    outcome: Outcome | None = None  # for an event pattern

    def matches(self, tool: str, params: dict[str, Any]) -> bool:
        if self.tool is not None and self.tool != tool:
            return False
        if self.test is None:
            return True
        param, value = self.test
        return param in params and json_equal(params[param], value)

    def text(self) -> str:
        out = self.tool or "any tool"
        if self.test is not None:
            out += f" where {self.test[0]} == {json.dumps(self.test[1])}"
        if self.outcome is not None:
            out += f" {self.outcome}"
        return out


@dataclass
class TraceRule(Rule):
    form: Literal["never", "never_after", "only_after", "at_most"]
    label: str
    call: Pattern
    event: Pattern | None = None
    limit: int = 0
    kind = "trace_rule"

    def __post_init__(self) -> None:
        self.name = f"trace_rule:{self.label}"

    def sentence(self) -> str:
        if self.form == "never":
            return f"never {self.call.text()}"
        if self.form == "at_most":
            return f"at most {self.limit} {self.call.text()}"
        assert self.event is not None
        if self.form == "never_after":
            return f"never {self.call.text()} after {self.event.text()}"
        return f"{self.call.text()} only after {self.event.text()}"

    def toml(self) -> str:
        return f"[[trace_rule]]\nname = {q(self.label)}\nrule = '{self.sentence()}'\n"

    def refuses(self, gate: ReferenceGate, call: Call) -> bool:
        if not self.call.matches(call.tool, call.params):
            return False
        if self.form == "never":
            return True
        if self.form == "at_most":
            return gate.dispatched(self.call) >= self.limit
        assert self.event is not None
        if self.form == "never_after":
            if self.event.outcome is None:
                return gate.dispatched(self.event) > 0
            return gate.reported(self.event, self.event.outcome)
        return not gate.reported(self.event, self.event.outcome)


#: The definition of every kind, by the registry's name for it.
DEFINITIONS: dict[str, type[Rule]] = {
    cls.kind: cls
    for cls in (
        DenyTool, DenyKeyword, DenyToolParam, AllowToolParam, DenyToolParamMatching,
        DenyCommand, AllowCommand, RateLimit, RegisteredDenyTool, RegisteredDenyToolParam,
        RegisteredRequireState, RegisteredCallback, TraceRule,
    )
}  # fmt: skip


def toml(rules: list[Rule]) -> str:
    """The file rules of ``rules`` as a policy file (its arrays of strings first)."""
    lines: list[str] = []
    denied = [r.tool for r in rules if isinstance(r, DenyTool)]
    if denied:
        lines.append(f"deny_tool = {q(denied)}\n")
    words = sorted((r for r in rules if isinstance(r, DenyKeyword)), key=lambda r: r.number)
    if words:
        lines.append(f"deny_keyword = {q([r.word for r in words])}\n")
    lines += [r.toml() for r in rules]
    return "".join(lines) or "\n"


def register(rules: list[Rule], engine: Any) -> None:
    """Register the registered rules of ``rules`` on ``engine``."""
    for r in rules:
        if r.kind.startswith("registered "):
            r.register(engine)


# --- the gate -------------------------------------------------------------------------------------


@dataclass
class ReferenceGate:
    rules: list[Rule]
    #: What a rule that cannot be decided gets (the face's answer).
    on_unknown: Literal["deny", "ask"] = "deny"
    #: The events so far: ("dispatch", n) and ("outcome", n, outcome), n a call number.
    events: list[tuple[Any, ...]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    slots: dict[int, int] = field(default_factory=dict)  # rate rule index -> slots taken
    #: The undecided rules of the last call (the faces say them apart).
    undecided: list[str] = field(default_factory=list)

    def pre(
        self, tool: str, params: dict[str, Any], state: dict[str, Any] | None = None
    ) -> tuple[str, list[str], int]:
        """Decide a call: (decision, the rules behind it, its call number)."""
        call = Call(tool, dict(params), state)
        denied: list[str] = []
        undecided: list[str] = []
        for index, r in enumerate(self.rules):
            if r.kind == "trace_rule":
                continue
            answer = r.decide(call, self.slots, index)
            if answer == "deny":
                denied.append(r.name)
            elif answer == "undecided":
                undecided.append(r.name)
        trace = [r for r in self.rules if isinstance(r, TraceRule)]
        tracing = [] if denied else [r.name for r in trace if r.refuses(self, call)]
        if denied or tracing:
            decision = "deny"
        elif undecided:
            decision = self.on_unknown
        else:
            decision = "allow"
        number = len(self.calls)
        self.calls.append(call)
        if decision != "deny":
            self.events.append(("dispatch", number))
        self.undecided = undecided
        names = list(dict.fromkeys([*(denied or tracing), *undecided]))
        return decision, names, number

    def post(self, number: int, outcome: Outcome) -> None:
        self.events.append(("outcome", number, outcome))

    def dispatched(self, pattern: Pattern) -> int:
        return sum(
            1
            for e in self.events
            if e[0] == "dispatch"
            and pattern.matches(self.calls[e[1]].tool, self.calls[e[1]].params)
        )

    def reported(self, pattern: Pattern, outcome: Outcome | None) -> bool:
        return any(
            e[0] == "outcome"
            and (outcome is None or e[2] == outcome)
            and pattern.matches(self.calls[e[1]].tool, self.calls[e[1]].params)
            for e in self.events
        )
