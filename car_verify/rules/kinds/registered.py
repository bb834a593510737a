"""The rules registered in code, as the FFI's ``registerPolicy`` registers them.

``PolicyEngine.register_policy(name, kind, target, key, pattern, value_json)``
(``register_callback`` for a Python callable) adds one of four kinds, each named
by the name it was registered with. Their deny reasons are the runtime's own.

- ``deny_tool``: any call whose tool is ``target``;
- ``deny_tool_param``: a call of ``target`` whose parameter ``key``'s string form
  holds ``pattern``;
- ``require_state``: any call unless the run's state holds at ``key`` the JSON
  value ``value_json`` (in ``verify``: the state when the action's level begins);
- ``deny_tool_callback``: a call (of ``target``, or of any tool) for which the
  callable ``callback(tool, params, action)`` returns a truthy value (a non-empty
  string is the reason).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...base.errors import UsageError
from ...base.values import ABSENT, json_equal
from ._base import ALLOW, Answer, Call, Example, Kind, Step, denied
from ._values import NO_NEEDS, Needs, coerce

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ...ir.model import Action
    from ..policy_model import Model, Piece

    Callback = Callable[[str, Mapping[str, Any], Action], Any]


@dataclass(frozen=True, slots=True)
class Registered:
    name: str
    kind: str
    target: str | None = None
    key: str | None = None
    pattern: str | None = None
    value: Any = None
    callback: Callback | None = None


def _example_callback(tool: str, params: Mapping[str, Any], action: Action) -> Any:
    return params.get("rows", 0) > 10_000


#: The callback of the ``deny_tool_callback`` example, and its text as shown.
EXAMPLE_CALLBACK = _example_callback
EXAMPLE_CALLBACK_TEXT = "lambda tool, params, action: params.get('rows', 0) > 10_000"


class _Registered(Kind[Registered]):
    registered = True
    rule_type = Registered
    name_form = "the name it was registered with"

    def register(
        self,
        name: str,
        target: str | None,
        key: str | None,
        pattern: str | None,
        value_json: str | None,
        callback: Callback | None,
    ) -> Registered:
        """The rule ``register_policy`` registers; UsageError for what it lacks."""
        raise NotImplementedError(f"registered kind {self.name}: define register")

    def rule_name(self, rule: Registered, position: int) -> str:
        return rule.name

    def tool_of(self, rule: Registered) -> str | None:
        return rule.target

    def params(self, rule: Registered) -> frozenset[str] | None:
        return frozenset()

    def to_doc(self, rule: Registered) -> Any:
        raise TypeError("a registered rule lives in its engine, not in a policy file")


class RegisteredDenyTool(_Registered):
    name, key = "registered deny_tool", "deny_tool"
    summary = "any call of the target tool"
    examples = (
        Example(
            "a denied tool",
            (Step("shell", {"command": "ls"}, "deny"), Step("ls", {}, "allow")),
            registered=(("no_shell", "deny_tool", "shell"),),
        ),
    )

    def register(
        self,
        name: str,
        target: str | None,
        key: str | None,
        pattern: str | None,
        value_json: str | None,
        callback: Callback | None,
    ) -> Registered:
        if target is None:
            raise UsageError("deny_tool needs a target tool")
        return Registered(name, self.key, target)

    def decide(self, rule: Registered, call: Call, memory: Any) -> Answer:
        return denied(f"tool {call.tool!r} is denied")

    def pieces(self, rule: Registered, model: Model, label: str) -> list[Piece]:
        return model.every()


class RegisteredDenyToolParam(_Registered):
    name, key = "registered deny_tool_param", "deny_tool_param"
    summary = "a call of the target whose parameter's string form holds the pattern"
    examples = (
        Example(
            "a text in a parameter",
            (
                Step("shell", {"command": "sudo rm -rf /tmp/x"}, "deny"),
                Step("shell", {"command": "ls"}, "allow"),
            ),
            registered=(("no_rm_rf", "deny_tool_param", "shell", "command", "rm -rf"),),
        ),
    )

    def register(
        self,
        name: str,
        target: str | None,
        key: str | None,
        pattern: str | None,
        value_json: str | None,
        callback: Callback | None,
    ) -> Registered:
        if target is None or key is None or pattern is None:
            raise UsageError("deny_tool_param needs a target, a key and a pattern")
        return Registered(name, self.key, target, key, pattern)

    def decide(self, rule: Registered, call: Call, memory: Any) -> Answer:
        assert rule.key is not None and rule.pattern is not None
        if rule.key in call.params and rule.pattern in coerce(call.params[rule.key]):
            return denied(f"param {rule.key!r} matches a denied pattern")
        return ALLOW

    def params(self, rule: Registered) -> frozenset[str] | None:
        return frozenset({str(rule.key)})

    def needs(self, rule: Registered) -> Needs:
        return Needs(params={str(rule.key): []}, text=frozenset({str(rule.key)}))

    def pieces(self, rule: Registered, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece, contains_local

        slot = model.params[str(rule.key)]
        return [Piece.of(slot, contains_local(model.z3, slot, str(rule.pattern)))]


class RegisteredRequireState(_Registered):
    name, key = "registered require_state", "require_state"
    summary = "any call unless the state holds a value at a key"
    examples = (
        Example(
            "the tests passed, or not",
            (
                Step("deploy", {}, "allow", state={"tests_passed": True}),
                Step("deploy", {}, "deny", state={"tests_passed": 1}),
                Step("deploy", {}, "deny", state={}),
            ),
            registered=(("require_tests", "require_state", None, "tests_passed", None, "true"),),
        ),
    )

    def register(
        self,
        name: str,
        target: str | None,
        key: str | None,
        pattern: str | None,
        value_json: str | None,
        callback: Callback | None,
    ) -> Registered:
        if key is None or value_json is None:
            raise UsageError("require_state needs a key and value_json")
        try:
            value = json.loads(value_json)
        except ValueError:
            raise UsageError(f"require_state value_json is not JSON: {value_json!r}") from None
        return Registered(name, self.key, key=key, value=value)

    def tool_of(self, rule: Registered) -> str | None:
        return None

    def decide(self, rule: Registered, call: Call, memory: Any) -> Answer:
        actual = (call.state or {}).get(rule.key or "", ABSENT)
        if actual is ABSENT or not json_equal(actual, rule.value):
            return denied(f"requires state {rule.key!r} to hold the rule's value")
        return ALLOW

    def needs(self, rule: Registered) -> Needs:
        return Needs(state={str(rule.key): [rule.value]})

    def pieces(self, rule: Registered, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece, equals_local

        slot = model.state[str(rule.key)]
        return [Piece.of(slot, ~equals_local(model.z3, slot, rule.value))]


class RegisteredCallback(_Registered):
    name, key = "registered deny_tool_callback", "deny_tool_callback"
    summary = "a call for which a callable returns a truthy value"
    examples = (
        Example(
            "a callable on the rows of an import",
            (Step("import", {"rows": 50_000}, "deny"), Step("import", {"rows": 20}, "allow")),
            registered=(("big_imports", "deny_tool_callback", "import"),),
        ),
    )

    def register(
        self,
        name: str,
        target: str | None,
        key: str | None,
        pattern: str | None,
        value_json: str | None,
        callback: Callback | None,
    ) -> Registered:
        if callback is None:
            raise UsageError("deny_tool_callback needs a callback")
        return Registered(name, self.key, target, callback=callback)

    def decide(self, rule: Registered, call: Call, memory: Any) -> Answer:
        if rule.callback is None:
            return ALLOW
        action = call.action
        if action is None:
            from ...ir.model import Action

            action = Action(
                id="call", type="tool_call", tool=call.tool, parameters=dict(call.params)
            )
        verdict = rule.callback(call.tool or "", call.params, action)
        if verdict:
            return denied(verdict if isinstance(verdict, str) else "denied by callback")
        return ALLOW

    def params(self, rule: Registered) -> frozenset[str] | None:
        return None

    def needs(self, rule: Registered) -> Needs:
        return NO_NEEDS

    def pieces(self, rule: Registered, model: Model, label: str) -> list[Piece]:
        from ..policy_model import Piece

        return [Piece(None, model.free_choice(label, rule))]  # whatever it decides


KINDS = (
    RegisteredDenyTool(),
    RegisteredDenyToolParam(),
    RegisteredRequireState(),
    RegisteredCallback(),
)
