"""allow_tool_param: every call of a tool unless a parameter holds a listed value.

What it decides:
    A call of `tool` is allowed only when its parameter `param` is present and its
    string form (a string as it is, anything else as compact JSON) is exactly one
    of `allow`. It fails closed three ways: an absent parameter, an empty `allow`,
    a value not listed. Each rule is an allow list of its own: two rules on one
    parameter allow only what both list.

Undecided:
    Never.

In policy diff:
    Exact: membership of the string form in the list. `policy lint` reports an
    allowed value that another rule denies anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Example, Key, Kind, Needs, Step, coerce, denied

if TYPE_CHECKING:
    from ..policy_model import Model, Piece


@dataclass(frozen=True, slots=True)
class AllowRule:
    tool: str
    param: str
    allow: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"allow_tool_param:{self.tool}.{self.param}"


class AllowToolParam(Kind[AllowRule]):
    name = key = "allow_tool_param"
    summary = "every call of a tool unless a parameter is one of the listed values"
    name_form = "allow_tool_param:TOOL.PARAM"
    rule_type = AllowRule
    keys = (
        Key("tool", (str,), "the tool whose calls it judges", required=True),
        Key("param", (str,), "the parameter it reads", required=True),
        Key("allow", (list,), "the values allowed (string forms)", sample="staging",
            default="[]: nothing is allowed"),
    )  # fmt: skip
    examples = (
        Example(
            "a listed value, another, none",
            (
                Step("deploy", {"target": "staging"}, "allow"),
                Step("deploy", {"target": "prod"}, "deny"),
                Step("deploy", {}, "deny"),
            ),
            policy='[[allow_tool_param]]\ntool = "deploy"\nparam = "target"\n'
            'allow = ["staging", "dev"]\n',
        ),
    )

    def decide(self, rule: AllowRule, call: Call, memory: Any) -> Answer:
        param, tool = rule.param, call.tool
        listed = len(rule.allow)
        how = (
            f"give one of the rule's {listed} allowed values" if listed else "the rule allows none"
        )
        if param not in call.params:
            return denied(f"parameter {param!r} of {tool!r} is required and absent: {how}")
        if coerce(call.params[param]) not in rule.allow:
            return denied(f"parameter {param!r} of {tool!r} is not an allowed value: {how}")
        return ALLOW

    def needs(self, rule: AllowRule) -> Needs:
        return Needs(params={rule.param: []}, text=frozenset({rule.param}))

    def pieces(self, rule: AllowRule, model: Model, label: str) -> list[Piece]:
        from ...semantics.value_domain import one_of_language
        from ..policy_model import Piece

        slot = model.params[rule.param]
        allowed = slot.test(
            one_of_language(model.z3, rule.allow), lambda v: coerce(v) in rule.allow
        )
        return [Piece.of(slot, ~allowed)]

    def entries(self, rule: AllowRule, model: Model) -> list[tuple[str, Piece]]:
        from ..policy_model import Piece, text_is

        slot = model.params[rule.param]
        return [(entry, Piece.of(slot, text_is(model.z3, slot, entry))) for entry in rule.allow]


KIND = AllowToolParam()
