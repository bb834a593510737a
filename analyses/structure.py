"""Structure: the proposal is well-formed as a plan.

What it checks:
    That the proposal has actions (``empty-proposal``), that action ids are unique
    (``duplicate-id``, one finding per action after the first that repeats an id),
    that every ``type`` is one of ``tool_call``, ``state_write``, ``state_read``,
    ``assertion`` (``unknown-action-type``), that every ``tool_call`` names its
    tool (``missing-tool-name``) and every ``state_write`` names the key it sets
    in ``parameters.key`` (``state-write-without-key``).

    Under car, as the runtime reads a proposal: an empty one is no finding, one
    with an unknown action type is refused whole (an input error), and a duplicate
    id, a ``state_write`` without a key and an unknown field are ``info`` notes
    (the runtime runs the plan as written), a repeated key a warning.

Why it matters:
    A runtime resolves dependencies, compensations and results by action id, so a
    repeated id makes the plan ambiguous; an action of an unknown type or a tool
    call without a tool cannot be dispatched at all.

How to fix:
    Give every action a unique ``id``; use one of the four action types; add the
    ``tool`` of each ``tool_call`` and a string ``parameters.key`` to each
    ``state_write``.

Why this tier:
    ``decision_procedure``: each check is set membership over the given proposal.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from car_verify.base.findings import Issue, Tier
from car_verify.ir.model import Action, RepeatedKey, UnknownField, repeated_keys, unknown_fields
from car_verify.passes import Context, Example, Pass, Preserves


class StructurePass(Pass):
    name = "structure"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = (
        "empty-proposal",
        "duplicate-id",
        "unknown-action-type",
        "missing-tool-name",
        "state-write-without-key",
        "unknown-field",
        "duplicate-key",
    )
    verifies = (
        "actions exist, ids are unique, types are known, tool calls and state writes are complete"
    )
    cannot_verify = "whether an id is meaningful to the caller"
    examples = (
        Example(
            "a complete tool call",
            {"actions": [{"id": "a1", "type": "tool_call", "tool": "deploy"}]},
        ),
        Example("no actions at all", {"actions": []}, ("empty-proposal",)),
        Example(
            "two actions called a1",
            {
                "actions": [
                    {"id": "a1", "type": "tool_call", "tool": "build"},
                    {"id": "a1", "type": "tool_call", "tool": "deploy"},
                ]
            },
            ("duplicate-id",),
        ),
        Example(
            "an action type the IR does not have",
            {"actions": [{"id": "a1", "type": "shell_exec"}]},
            ("unknown-action-type",),
        ),
        Example(
            "a tool call that names no tool",
            {"actions": [{"id": "a1", "type": "tool_call"}]},
            ("missing-tool-name",),
        ),
        Example(
            "a misspelled field: the precondition is ignored",
            {
                "actions": [
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "precondition": [{"key": "tests_passed", "value": True}],
                    }
                ]
            },
            ("unknown-field",),
        ),
        Example(
            "a key written twice in one object: the gate is lost",
            '{"actions": [{"id": "deploy", "type": "tool_call", "tool": "deploy",\n'
            '  "preconditions": [{"key": "tests_passed", "value": true}],\n'
            '  "preconditions": []}]}',
            ("duplicate-key",),
        ),
        Example(
            "a state write with no key",
            {"actions": [{"id": "a1", "type": "state_write", "parameters": {"value": 1}}]},
            ("state-write-without-key",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        # What the document says that no check reads: a repeated key, an unknown field.
        said: tuple[tuple[str, Sequence[RepeatedKey | UnknownField]], ...] = (
            ("duplicate-key", repeated_keys(ctx.proposal)),
            ("unknown-field", unknown_fields(ctx.proposal)),
        )
        for code, found in said:
            for item in found:
                yield ctx.issue(
                    code,
                    item.message(),
                    index=item.index,
                    where=item.path[2:] if item.index is not None else item.path,
                )
        actions = ctx.proposal.actions
        if not actions:
            if ctx.reports("empty-proposal"):
                yield ctx.issue("empty-proposal", "the proposal has no actions")
            return
        ids = [action.id for action in actions]
        if len(set(ids)) < len(ids):
            first: dict[str, int] = {}
            for i, action_id in enumerate(ids):
                earlier = first.setdefault(action_id, i)
                if earlier != i:
                    yield ctx.issue(
                        "duplicate-id",
                        f"action id {action_id!r} is already used by action #{earlier}",
                        index=i,
                        where=("id",),
                    )
        for i, action in enumerate(actions):
            if action.type == "tool_call" and action.tool is not None:
                continue  # the common case, complete
            shape = self._shape(ctx, i, action)
            if shape is not None:
                yield shape

    @staticmethod
    def _shape(ctx: Context, i: int, action: Action) -> Issue | None:
        """The one finding on an action's type and completeness, if any."""
        if action.type not in Action.KNOWN_TYPES:
            if not ctx.reports("unknown-action-type"):
                ctx.semantics.refuse(ctx.proposal)  # the profile refuses the proposal whole
            return ctx.issue(
                "unknown-action-type",
                f"unknown action type {action.type!r}; expected one of "
                "tool_call, state_write, state_read, assertion",
                index=i,
                where=("type",),
            )
        if action.type == "tool_call" and action.tool is None:
            message = ctx.semantics.say("missing-tool-name") or "tool_call action has no `tool`"
            return ctx.issue("missing-tool-name", message, index=i, where=("type",))
        if action.type == "state_write" and action.param_key() is None:
            present = "key" in action.parameters
            return ctx.issue(
                "state-write-without-key",
                "state_write's parameters.key is not a string"
                if present
                else "state_write has no parameters.key",
                index=i,
                where=("parameters", "key") if present else ("parameters",),
            )
        return None
