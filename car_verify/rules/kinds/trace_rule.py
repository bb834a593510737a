"""trace_rule: a call refused by what happened earlier in the run.

What it decides:
    One sentence of the trace-rule language (grammar
    `grammars/trace_rules.lark`; the language and its events are in policies.md):
    `never CALL`, `never CALL after EVENT`, `CALL only after EVENT`, `at most N
    CALL`. It is asked only about a call that every rule of one call admits, and
    decides it on the run's trace so far (the calls admitted, and their outcomes
    once reported), with one flag or counter per rule
    (`car_verify.rules.trace.TraceGate`). The deny reason names the call that must
    come first (`deploy is allowed only after run_tests succeeded`), never a
    literal of the rule nor a value of the call.

    A rule is named by its `name`; an unnamed rule by its text when the text holds
    no literal, else by its file and line (`trace_rule:deploys.toml:7`).

Undecided:
    Never at run time. Before the run (`policy check`), a test on a parameter that
    is another action's output is undecided (`policy-undecided`).

In policy diff:
    Exact: each set's trace rules are a finite automaton over calls, and two sets
    a product searched from the start (`car_verify.rules.trace_automata`), each
    counterexample replayed through the gate.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from ...base.errors import InputError
from ..trace import TraceRule, parse_trace_rule, rule_to_dict
from ._base import Answer, Call, Example, Key, Kind, Reader, Step


class TraceRuleKind(Kind[TraceRule]):
    name = key = "trace_rule"
    stage = "trace"
    summary = "a call refused by what happened earlier in the run"
    name_form = "trace_rule:NAME (or its text, or FILE:LINE)"
    rule_type = TraceRule
    keys = (
        Key("rule", (str,), "the rule, one sentence of the trace-rule language", required=True,
            sample='"deploy only after run_tests succeeded"'),
        Key("name", (str,), "its name (else its text, or where it is written)"),
    )  # fmt: skip
    examples = (
        Example(
            "the tests before the deploy",
            (
                Step("deploy", {}, "deny"),
                Step("run_tests", {}, "allow", outcome="failed"),
                Step("deploy", {}, "deny"),
                Step("run_tests", {}, "allow", outcome="succeeded"),
                Step("deploy", {}, "allow"),
            ),
            policy='[[trace_rule]]\nname = "tested"\n'
            'rule = "deploy only after run_tests succeeded"\n',
        ),
        Example(
            "no message out once a secret was read",
            (
                Step("send_message", {"to": "a"}, "allow", outcome="succeeded"),
                Step("read_secret", {"key": "db"}, "allow", outcome="succeeded"),
                Step("send_message", {"to": "a"}, "deny"),
            ),
            policy="[[trace_rule]]\nrule = 'never send_message after read_secret'\n",
        ),
    )

    def build(self, reader: Reader, table: Mapping[str, Any], index: int) -> TraceRule:
        text, file = table["rule"], reader.path
        where = f"{self.key}[{index}].rule"
        after = reader.cursor.get(self.key, 0)
        start = None if reader.text is None else _position_of(reader.text, text, after)
        if start is not None:
            reader.cursor[self.key] = start[2]
        try:
            parsed = parse_trace_rule(text, name=table.get("name", ""), source=str(file))
        except InputError as err:
            if start is None:  # written with escapes: only the rule's own position is known
                problem = f"{where}, line {err.line} column {err.column} of the rule: {err.problem}"
                raise InputError(problem, source=str(file)) from None
            line, column, _ = start
            at_line = err.line or 1
            raise InputError(
                f"{where}: {err.problem}",
                source=str(file),
                line=line + at_line - 1,
                column=(column if at_line == 1 else 1) + (err.column or 1) - 1,
            ) from None
        origin = f"{file.name}:{start[0]}" if start is not None else f"{file.name}:{where[:-5]}"
        return dataclasses.replace(parsed, origin=origin)

    def rule_name(self, rule: TraceRule, position: int) -> str:
        return rule.policy_name

    def to_doc(self, rule: TraceRule) -> Any:
        doc = rule_to_dict(rule)
        doc.pop("origin", None)  # where it was written is not what it says
        return doc

    def tool_of(self, rule: TraceRule) -> str | None:
        return None

    def decide(self, rule: TraceRule, call: Call, memory: Any) -> Answer:
        raise TypeError("a trace rule is decided on the run's trace, by the trace monitor")

    def params(self, rule: TraceRule) -> frozenset[str] | None:
        return frozenset(
            t.param
            for c in (rule.call, rule.event)
            if c is not None
            for t in c.tests
            if t.op != "present"
        )

    def names(self, rule: TraceRule) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for call in (rule.call, rule.event):
            if call is not None and call.tool is not None:
                out.append((call.tool, None))
                out += [(call.tool, t.param) for t in call.tests]
        return out


def _position_of_plain(text: str, needle: str, after: int = 0) -> tuple[int, int, int] | None:
    """The file line and column where a rule's text starts, and the offset past it
    (TOML gives no positions: found by its text, as the value of a ``rule`` key, at
    or after offset ``after``; a rule written with escapes is not found). A comment
    or a ``name`` that holds the same text, or an earlier rule that holds it whole,
    is not taken for it. The plain version of :func:`_position_of`."""
    quote = r"(?:\"\"\"\r?\n?|'''\r?\n?|\"|')"
    value = re.compile(r"(?<![\w-])rule\s*=\s*" + quote + re.escape(needle))
    for found in value.finditer(text, after):
        line_start = text.rfind("\n", 0, found.start()) + 1
        if "#" in text[line_start : found.start()]:  # inside a comment
            continue
        index = found.end() - len(needle)
        line_start = text.rfind("\n", 0, index) + 1
        return text.count("\n", 0, index) + 1, index - line_start + 1, found.end()
    return None


#: A ``rule`` key before the opening quote of its value; then the quotes that
#: :func:`_position_of_plain`'s pattern tries, in the order it tries them.
_RULE_KEY = re.compile(r"(?<![\w-])rule\s*=\s*(?=[\"'])")
_QUOTES = (
    *(q + end for q in ('"""', "'''") for end in ("\r\n", "\r", "\n", "")),
    '"',
    "'",
)


def _position_of(text: str, needle: str, after: int = 0) -> tuple[int, int, int] | None:
    """:func:`_position_of_plain` with one pattern for every rule, compiled once (a
    pattern made of each rule's text cost the hook's start one compilation per
    trace rule): the key found by it, the quote and the rule's text compared as
    strings. ``tests/test_hook_startup.py`` holds the two to the same answers."""
    at = after
    while (key := _RULE_KEY.search(text, at)) is not None:
        start = key.end()
        for quote in _QUOTES:
            if text.startswith(quote, start) and text.startswith(needle, start + len(quote)):
                end = start + len(quote) + len(needle)
                break
        else:
            at = start  # no value here: the plain pattern's next try is past the key
            continue
        line_start = text.rfind("\n", 0, key.start()) + 1
        if "#" in text[line_start : key.start()]:  # inside a comment
            at = end
            continue
        index = end - len(needle)
        line_start = text.rfind("\n", 0, index) + 1
        return text.count("\n", 0, index) + 1, index - line_start + 1, end
    return None


KIND = TraceRuleKind()
