"""car-verify: static verification for Agent IR action proposals.

>>> import car_verify
>>> result = car_verify.verify({"actions": [{"id": "a1", "type": "tool_call", "tool": "t"}]})
>>> result.valid
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .base import deferred as _deferred
from .base import display as _display

if TYPE_CHECKING:
    from .api import Evidence, Simulation, VerificationResult, simulate, verify
    from .base.codes import CODES, Code
    from .base.errors import CarVerifyError, InputError, PassError, UsageError
    from .base.findings import Applicability, Fix, Issue, Severity, Tier
    from .deciders.equivalence import EquivalenceResult, equivalent
    from .deciders.optimize import OptimizeResult, optimize
    from .deciders.predictions import simulate_with_predictions, transaction_check_with_predictions
    from .deciders.ranking import ScoredProposal, rank_proposals
    from .deciders.repair import Repaired, repair
    from .deciders.transactions import TransactionReport, transaction_check
    from .deciders.workflow import check_workflow_policies, verify_workflow, verify_workflow_graph
    from .deciders.wp import Condition, runs_unblocked
    from .executor import ExecutionResult, Executor, execute_sync
    from .ir.model import (
        Action,
        ActionProposal,
        ActionRefCompensation,
        ActionResult,
        ActionStatus,
        ActionType,
        CostSummary,
        CostTarget,
        FailureBehavior,
        PolicyViolation,
        Precondition,
        ProposalResult,
        Reversibility,
        StateAssumption,
        StateMutation,
        ToolCompensation,
        ToolHandle,
        ToolInvocationMode,
        ToolPollResult,
        ToolRateLimit,
        ToolSchema,
        ToolStatus,
        ToolStreamEvent,
        load,
        load_tools,
    )
    from .passes import Context, Example, Pass, Requirement
    from .passes.registry import available_passes
    from .plan.claims import check_plan, evaluate_goal, verify_tool_receipts
    from .plan.concurrency import analyze_concurrency, gate_concurrency
    from .plan.flow import check_information_flow, enforce_information_flow, gate_information_flow
    from .plan.intent import check_intent, check_intent_plan, enforce_intent, gate_intent
    from .plan.permissions import (
        Decision,
        Ledger,
        PermissionReport,
        permission_classify,
        permission_evaluate,
        record_decision,
    )
    from .plan.policy_diff import policy_diff
    from .plan.risk import RiskResult, risk
    from .plan.schedule_analysis import ScheduleAnalysis, analyze_schedule
    from .reporters.dot import to_dot
    from .rules.policy_analysis import lint_policies
    from .rules.tools import ToolRegistry
    from .semantics.dag import Dag


# Every name loads on first use: `import car_verify.rules.policy` (the agent hook, once per
# tool call) or `car-verify verify` in a pre-commit hook pays only for what it uses.
_LAZY = {
    **dict.fromkeys(["Evidence", "Simulation", "VerificationResult", "simulate", "verify"], "api"),
    **dict.fromkeys(["CODES", "Code"], "base.codes"),
    "Dag": "semantics.dag",
    **dict.fromkeys(["CarVerifyError", "InputError", "PassError", "UsageError"], "base.errors"),
    **dict.fromkeys(["Applicability", "Fix", "Issue", "Severity", "Tier"], "base.findings"),
    **dict.fromkeys(["Repaired", "repair"], "deciders.repair"),
    **dict.fromkeys(
        [
            "Action",
            "ActionProposal",
            "ActionRefCompensation",
            "ActionResult",
            "ActionStatus",
            "ActionType",
            "CostSummary",
            "CostTarget",
            "FailureBehavior",
            "PolicyViolation",
            "Precondition",
            "ProposalResult",
            "Reversibility",
            "StateAssumption",
            "StateMutation",
            "ToolCompensation",
            "ToolHandle",
            "ToolInvocationMode",
            "ToolPollResult",
            "ToolRateLimit",
            "ToolSchema",
            "ToolStatus",
            "ToolStreamEvent",
            "load",
            "load_tools",
        ],
        "ir.model",
    ),
    **dict.fromkeys(["OptimizeResult", "optimize"], "deciders.optimize"),
    **dict.fromkeys(["Context", "Example", "Pass", "Requirement"], "passes"),
    "ToolRegistry": "rules.tools",
    "available_passes": "passes.registry",
    "EquivalenceResult": "deciders.equivalence",
    "equivalent": "deciders.equivalence",
    "Decision": "plan.permissions",
    "Ledger": "plan.permissions",
    "PermissionReport": "plan.permissions",
    "permission_classify": "plan.permissions",
    "permission_evaluate": "plan.permissions",
    "record_decision": "plan.permissions",
    "TransactionReport": "deciders.transactions",
    "transaction_check": "deciders.transactions",
    "Condition": "deciders.wp",
    "runs_unblocked": "deciders.wp",
    **dict.fromkeys(["check_plan", "evaluate_goal", "verify_tool_receipts"], "plan.claims"),
    **dict.fromkeys(["analyze_concurrency", "gate_concurrency"], "plan.concurrency"),
    **dict.fromkeys(["ExecutionResult", "Executor", "execute_sync"], "executor"),
    **dict.fromkeys(["to_dot"], "reporters.dot"),
    **dict.fromkeys(
        ["check_information_flow", "enforce_information_flow", "gate_information_flow"], "plan.flow"
    ),
    **dict.fromkeys(
        ["check_intent", "check_intent_plan", "enforce_intent", "gate_intent"], "plan.intent"
    ),
    "lint_policies": "rules.policy_analysis",
    "policy_diff": "plan.policy_diff",
    **dict.fromkeys(["ScoredProposal", "rank_proposals"], "deciders.ranking"),
    **dict.fromkeys(["RiskResult", "risk"], "plan.risk"),
    **dict.fromkeys(["ScheduleAnalysis", "analyze_schedule"], "plan.schedule_analysis"),
    **dict.fromkeys(
        ["simulate_with_predictions", "transaction_check_with_predictions"], "deciders.predictions"
    ),
    **dict.fromkeys(
        ["check_workflow_policies", "verify_workflow", "verify_workflow_graph"], "deciders.workflow"
    ),
}


def _load_views() -> object:
    """The Jupyter views (``reporters.html``), imported from the package, the top
    layer, when a result is first shown: the results never import them."""
    from .reporters import html

    return html


_display.register_views_loader(_load_views)


def _load_derivers() -> object:
    """The repairs of a result's findings (``deciders.repair``), imported from the
    package, the top layer, when a result's ``fixes`` are first read."""
    from .deciders import repair

    return repair


_deferred.register_derivers_loader(_load_derivers)


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'car_verify' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CODES",
    "Action",
    "ActionProposal",
    "ActionRefCompensation",
    "ActionResult",
    "ActionStatus",
    "ActionType",
    "Applicability",
    "CarVerifyError",
    "Code",
    "Condition",
    "Context",
    "CostSummary",
    "CostTarget",
    "Dag",
    "Decision",
    "EquivalenceResult",
    "Evidence",
    "Example",
    "ExecutionResult",
    "Executor",
    "FailureBehavior",
    "Fix",
    "InputError",
    "Issue",
    "Ledger",
    "OptimizeResult",
    "Pass",
    "PassError",
    "PermissionReport",
    "PolicyViolation",
    "Precondition",
    "ProposalResult",
    "Repaired",
    "Requirement",
    "Reversibility",
    "RiskResult",
    "ScheduleAnalysis",
    "ScoredProposal",
    "Severity",
    "Simulation",
    "StateAssumption",
    "StateMutation",
    "Tier",
    "ToolCompensation",
    "ToolHandle",
    "ToolInvocationMode",
    "ToolPollResult",
    "ToolRateLimit",
    "ToolRegistry",
    "ToolSchema",
    "ToolStatus",
    "ToolStreamEvent",
    "TransactionReport",
    "UsageError",
    "VerificationResult",
    "__version__",
    "analyze_concurrency",
    "analyze_schedule",
    "available_passes",
    "check_information_flow",
    "check_intent",
    "check_intent_plan",
    "check_plan",
    "check_workflow_policies",
    "enforce_information_flow",
    "enforce_intent",
    "equivalent",
    "evaluate_goal",
    "execute_sync",
    "gate_concurrency",
    "gate_information_flow",
    "gate_intent",
    "lint_policies",
    "load",
    "load_tools",
    "optimize",
    "permission_classify",
    "permission_evaluate",
    "policy_diff",
    "rank_proposals",
    "record_decision",
    "repair",
    "risk",
    "runs_unblocked",
    "simulate",
    "simulate_with_predictions",
    "to_dot",
    "transaction_check",
    "transaction_check_with_predictions",
    "verify",
    "verify_tool_receipts",
    "verify_workflow",
    "verify_workflow_graph",
]
