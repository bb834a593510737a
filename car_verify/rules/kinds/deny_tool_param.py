"""deny_tool_param: a parameter present, equal to a value, or holding a text.

What it decides:
    A call of `tool` is denied when its parameter `param` is present and, with
    `equals`, is exactly that JSON value (deep JSON equality: `1` is not `true`);
    with `contains`, its string form (a string as it is, anything else as compact
    JSON, and every string inside it) holds the text, case-sensitive; with both,
    both hold; with neither, when the parameter is present at all. An absent
    parameter is never denied.

Undecided:
    Never. Its work on a call counts against the content rules' bound (see
    `deny_keyword`).

In policy diff:
    Exact: JSON equality over every text-distinct form of the value, and z3 string
    containment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...base.values import ABSENT, json_equal
from ._base import ALLOW, Answer, Call, Example, Key, Kind, Needs, Reader, Step, denied, json_value

if TYPE_CHECKING:
    from ..policy_model import Model, Piece


@dataclass(frozen=True, slots=True)
class ParamRule:
    """``deny_tool_param`` (equals / contains / presence)."""

    tool: str
    param: str
    equals: Any = ABSENT
    contains: str | None = None

    @property
    def name(self) -> str:
        return f"deny_tool_param:{self.tool}.{self.param}"


class DenyToolParam(Kind[ParamRule]):
    name = key = "deny_tool_param"
    summary = "a parameter present, equal to a value, or holding a text"
    name_form = "deny_tool_param:TOOL.PARAM"
    rule_type = ParamRule
    reads_content = True
    keys = (
        Key("tool", (str,), "the tool whose calls it judges", required=True),
        Key("param", (str,), "the parameter it reads", required=True),
        Key("equals", None, "deny when the parameter is exactly this JSON value", sample="3"),
        Key("contains", (str,), "deny when the parameter's string form holds this text"),
    )
    examples = (
        Example(
            "a text in one parameter",
            (
                Step("http_request", {"url": "http://169.254.169.254/latest"}, "deny"),
                Step("http_request", {"url": "https://example.org"}, "allow"),
                Step("http_request", {}, "allow"),
            ),
            policy='[[deny_tool_param]]\ntool = "http_request"\nparam = "url"\n'
            'contains = "169.254.169.254"\n',
        ),
        Example(
            "a value, compared as JSON",
            (
                Step("deploy", {"env": "prod"}, "deny"),
                Step("deploy", {"env": "staging"}, "allow"),
            ),
            policy='[[deny_tool_param]]\ntool = "deploy"\nparam = "env"\nequals = "prod"\n',
        ),
    )

    def build(self, reader: Reader, table: Any, index: int) -> ParamRule:
        equals = (
            json_value(reader, table["equals"], [self.key, index, "equals"])
            if "equals" in table
            else ABSENT
        )
        return ParamRule(table["tool"], table["param"], equals, table.get("contains"))

    def decide(self, rule: ParamRule, call: Call, memory: Any) -> Answer:
        param = rule.param
        if param not in call.params:
            return ALLOW
        if rule.equals is not ABSENT and not json_equal(call.params[param], rule.equals):
            return ALLOW
        if rule.contains is not None and not any(rule.contains in t for t in call.texts(param)):
            return ALLOW
        what = (
            "is denied: the call is admitted without it"
            if rule.equals is ABSENT and rule.contains is None
            else "matches a denied value: send another value, or leave the parameter out"
        )
        return denied(f"parameter {param!r} of {call.tool!r} {what}")

    def needs(self, rule: ParamRule) -> Needs:
        values = [] if rule.equals is ABSENT else [rule.equals]
        text = frozenset() if rule.contains is None else frozenset({rule.param})
        return Needs(params={rule.param: values}, text=text)

    def pieces(self, rule: ParamRule, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece, contains_local, equals_local

        z3 = model.z3
        slot = model.params[rule.param]
        local = slot.every(absent=False)
        if rule.equals is not ABSENT:
            local &= equals_local(z3, slot, rule.equals)
        if rule.contains is not None:
            local &= contains_local(z3, slot, rule.contains)
        return [Piece.of(slot, local)]


KIND = DenyToolParam()
