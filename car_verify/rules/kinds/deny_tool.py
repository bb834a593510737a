"""deny_tool: every call of a listed tool.

What it decides:
    A call whose tool is one of the listed names (compared exactly: `Bash` is not
    `bash`) is denied, whatever its parameters; any other call is allowed.

Undecided:
    Never: the tool's name is always known.

In policy diff:
    Exact: the condition is the tool's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Example, Kind, Reader, Step, denied

if TYPE_CHECKING:
    from ..policy_model import Model, Piece


class DenyTool(Kind[str]):
    name = key = "deny_tool"
    summary = "every call of a listed tool"
    name_form = "deny_tool:TOOL"
    sample = "rm"
    rule_type = str
    examples = (
        Example(
            "a denied tool, and another",
            (
                Step("deploy", {"env": "prod"}, "deny"),
                Step("run_tests", {}, "allow"),
            ),
            policy='deny_tool = ["deploy", "rm"]\n',
        ),
    )

    def entry(self, reader: Reader, value: str, index: int) -> str:
        return value

    def rule_name(self, rule: str, position: int) -> str:
        return f"deny_tool:{rule}"

    def to_doc(self, rule: str) -> Any:
        return rule

    def tool_of(self, rule: str) -> str | None:
        return rule

    def decide(self, rule: str, call: Call, memory: Any) -> Answer:
        if call.tool != rule:
            return ALLOW
        return denied(f"tool {rule!r} is denied: no call of it is admitted; use another tool")

    def params(self, rule: str) -> frozenset[str] | None:
        return frozenset()

    def pieces(self, rule: str, model: Model, label: str) -> list[Piece]:
        return model.every()


KIND = DenyTool()
