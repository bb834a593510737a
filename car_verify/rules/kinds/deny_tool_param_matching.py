"""deny_tool_param_matching: a parameter in which an RE2 pattern is found.

What it decides:
    A call of `tool` is denied when its parameter `param` is present and the
    pattern is found (unanchored) in its string form or in any string inside it.
    Patterns are RE2 (the `google-re2` package): no backtracking, so a match takes
    time linear in the text and in the pattern's compiled program. A match only
    asks whether the pattern is found, never where its groups are (groups are read
    as non-capturing), which keeps RE2 on its fast automaton: `(.*a){20}` on
    100 kB took 140 ms with groups and takes a few ms without.

    The load fails, naming the file, the key and the rule, on a pattern RE2 cannot
    compile (a backreference `(a)\1`, a lookaround `(?=a)`, a repetition past
    1,000 `(?:[ab]{1,1000}){1,1000}c`) and on one whose compiled program is over
    1,000 instructions: a rule must never silently deny every call of its tool.
    `policy lint` reports such a pattern as `policy-invalid-pattern` with the
    other findings (it alone keeps the rule, failing closed).

Undecided:
    Never. A parameter too long to match within the work bound (its length times
    the pattern's program size over 100,000,000: RE2's worst case, about a second)
    is denied, never let through unread.

In policy diff:
    Exact where the pattern translates to a z3 regular expression
    (`car_verify.rules.policy_regex`), else a free choice inside a language that
    holds every match.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Example, Key, Kind, Needs, Reader, Step, denied

if TYPE_CHECKING:
    from ..policy_model import Model, Piece

#: The largest compiled RE2 program a policy pattern may have. RE2 is linear in the
#: input, but its DFA runs out of memory on large programs and falls back to the
#: NFA, whose cost is the program size times the input. The bound keeps a match on
#: 100 kB near 10 ms (the measurements are in docs/security.md).
MAX_PATTERN_PROGRAM = 1000
#: The most work one match may do: the pattern's program size times the length of
#: the text (RE2 runs in time linear in both; ``(.*a){40}``, 444 instructions, took
#: 14.5 s on a 5 MB command). Past it the call is denied, never let through unread.
MAX_MATCH_WORK = 100_000_000


def _options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 writes nothing to stderr
    options.never_capture = True  # found or not: no group's span to track
    return options


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """RE2 (linear time, no backtracking, groups not captured); None when the
    pattern does not compile. Compiled once per pattern: the engine, the load-time
    cost check and the schema ``pattern`` keyword (which checks every value it is
    given) share it; a compiled pattern is immutable."""
    import re2

    try:
        return re2.compile(pattern, options=_options())
    except Exception:
        return None


def compile_error(pattern: str) -> str | None:
    """Why RE2 cannot compile ``pattern`` (None: it compiles)."""
    import re2

    try:
        re2.compile(pattern, options=_options())
    except Exception as err:
        raw = err.args[0] if err.args else str(err)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return None


def pattern_cost(pattern: str) -> int | None:
    """The size of ``pattern``'s compiled RE2 program; None if it does not compile."""
    compiled = compile_pattern(pattern)
    return None if compiled is None else int(compiled.programsize)


@dataclass(frozen=True, slots=True)
class MatchRule:
    tool: str
    param: str
    matches: str

    @property
    def name(self) -> str:
        return f"deny_tool_param_matching:{self.tool}.{self.param}"


class DenyToolParamMatching(Kind[MatchRule]):
    name = key = "deny_tool_param_matching"
    summary = "a parameter in which a regular expression (RE2) is found"
    name_form = "deny_tool_param_matching:TOOL.PARAM"
    rule_type = MatchRule
    keys = (
        Key("tool", (str,), "the tool whose calls it judges", required=True),
        Key("param", (str,), "the parameter it reads", required=True),
        Key("matches", (str,), "the RE2 pattern, found anywhere in the text", required=True),
    )
    examples = (
        Example(
            "a pattern found in a nested string",
            (
                Step("post", {"body": "key AKIA0123456789ABCDEF"}, "deny"),
                Step("post", {"body": ["notes", "AKIA0123456789ABCDEF"]}, "deny"),
                Step("post", {"body": "nothing here"}, "allow"),
            ),
            policy='[[deny_tool_param_matching]]\ntool = "post"\nparam = "body"\n'
            "matches = 'AKIA[0-9A-Z]{16}'\n",
        ),
    )

    def build(self, reader: Reader, table: Any, index: int) -> MatchRule:
        rule = MatchRule(table["tool"], table["param"], table["matches"])
        where: list[str | int] = [self.key, index, "matches"]
        why = compile_error(rule.matches)
        if why is not None and not reader.strict:
            return rule  # policy lint reports it (see lint)
        if why is not None:
            raise reader.fail(
                where,
                f"rule {rule.name}: RE2 cannot compile the pattern ({why}); write it without "
                "backreferences, lookarounds or repetitions past 1,000 (RE2 syntax: "
                "https://github.com/google/re2/wiki/Syntax)",
            )
        cost = pattern_cost(rule.matches)
        if cost is not None and cost > MAX_PATTERN_PROGRAM:
            raise reader.fail(
                where,
                f"rule {rule.name}: the pattern compiles to {cost:,} RE2 instructions, over "
                f"the bound of {MAX_PATTERN_PROGRAM:,}: matching it could take seconds per "
                "value; write a shorter pattern (fewer counted repetitions)",
            )
        return rule

    def start(self, rule: MatchRule) -> Any:
        return compile_pattern(rule.matches)

    def decide(self, rule: MatchRule, call: Call, memory: Any) -> Answer:
        tool, param = call.tool, rule.param
        if memory is None:  # only a rule built in code: a file's pattern compiles
            return denied(
                f"the pattern for {tool!r}.{param} does not compile: every call is denied "
                "(fix the rule)"
            )
        if param not in call.params:
            return ALLOW
        texts = call.texts(param)
        length = sum(len(t) for t in texts)
        if length * int(memory.programsize) > MAX_MATCH_WORK:
            return denied(
                f"parameter {param!r} of {tool!r} is too long ({length:,} characters) to "
                "match the rule's pattern within its work bound: denied (fails closed); "
                "send a shorter value"
            )
        if any(memory.search(t) for t in texts):
            return denied(
                f"parameter {param!r} of {tool!r} matches a denied pattern: send a value without it"
            )
        return ALLOW

    def needs(self, rule: MatchRule) -> Needs:
        return Needs(params={rule.param: []}, text=frozenset({rule.param}))

    def pieces(self, rule: MatchRule, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece
        from ..policy_regex import Untranslatable, search_language
        from ._base import texts_of

        compiled = compile_pattern(rule.matches)
        if compiled is None:
            return model.every()  # it does not compile: every call is denied
        z3 = model.z3
        slot = model.params[rule.param]

        def matched(v: Any) -> bool:  # as the engine reads it (texts_of)
            return any(compiled.search(t) for t in texts_of(v))

        try:
            language = search_language(rule.matches)
        except Untranslatable:
            # Whatever RE2 decides, within a language that holds every match.
            try:
                on_text = z3.And(
                    model.free_choice(label, rule),
                    z3.InRe(slot.text, search_language(rule.matches, over=True)),
                )
            except Untranslatable:
                on_text = model.free_choice(label, rule)
            return [Piece(slot, slot.where(on_text, matched))]
        return [Piece.of(slot, slot.test(language, matched))]

    def lint(self, rule: MatchRule) -> list[tuple[str, str]]:
        why = compile_error(rule.matches)
        if why is None:
            return []
        return [
            (
                "policy-invalid-pattern",
                f"RE2 cannot compile the pattern ({why}): the rule denies every call of "
                f"{rule.tool!r}",
            )
        ]


KIND = DenyToolParamMatching()
