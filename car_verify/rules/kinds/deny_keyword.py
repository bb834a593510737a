"""deny_keyword: a call any of whose parameters holds a listed text.

What it decides:
    A call of any tool is denied when one of its parameters holds the text, as a
    case-sensitive substring: in a parameter's name, in its string form (a string
    as it is, anything else as compact JSON), or in any string inside it (nested
    values and object keys, as they are, so a quote JSON would escape is still
    found). It catches the text exactly as written, never the same thing written
    another way (for a shell line, use `deny_command` or `allow_command`).

    A rule is named by its number in the merged list (`deny_keyword:2`), never by
    its text: the text may be a secret, and names are written to event logs.

Undecided:
    Never. The work of every content rule on one call is bounded (the characters
    of the call's parameters times the rules that read them): past the bound the
    call is denied (`deny_keyword:work-bound`), never let through unread.

In policy diff:
    Exact: z3 string containment on every parameter's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Example, Kind, Needs, Reader, Step, denied

if TYPE_CHECKING:
    from ..policy_model import Model, Piece


def keyword_rule_name(position: int) -> str:
    """The name of the ``deny_keyword`` entry at ``position`` (0-based, in the merged
    rules' order): its number, never its text, so that a secret a rule guards never
    shows in a deny reason, a finding, SARIF or an event log."""
    return f"deny_keyword:{position + 1}"


class DenyKeyword(Kind[str]):
    name = key = "deny_keyword"
    summary = "a call holding a listed text in any parameter"
    name_form = "deny_keyword:N (its number in the merged list)"
    sample = "rm -rf"
    rule_type = str
    reads_content = True
    examples = (
        Example(
            "a keyword anywhere in a call, and a call without it",
            (
                Step("sql", {"query": "DROP TABLE users"}, "deny"),
                Step("post", {"payload": {"note": ["ok", "drop table"]}}, "allow"),
                Step("post", {"payload": {"steps": ["DROP TABLE x"]}}, "deny"),
            ),
            policy='deny_keyword = ["DROP TABLE"]\n',
        ),
    )

    def entry(self, reader: Reader, value: str, index: int) -> str:
        return value

    def rule_name(self, rule: str, position: int) -> str:
        return keyword_rule_name(position)

    def to_doc(self, rule: str) -> Any:
        return rule

    def tool_of(self, rule: str) -> str | None:
        return None

    def decide(self, rule: str, call: Call, memory: Any) -> Answer:
        for name in call.params:
            if rule in str(name):
                return denied(
                    "a parameter's name holds a denied keyword: the call is admitted without "
                    "that parameter"
                )
            if any(rule in t for t in call.texts(name)):
                return denied(
                    f"parameter {name!r} holds a denied keyword: the call is admitted without it"
                )
        return ALLOW

    def params(self, rule: str) -> frozenset[str] | None:
        return None

    def needs(self, rule: str) -> Needs:
        return Needs(every_param=True)

    def pieces(self, rule: str, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece, contains_local

        slots = [*model.params.values(), model.other]
        return [Piece.of(s, contains_local(model.z3, s, rule)) for s in slots]


KIND = DenyKeyword()
