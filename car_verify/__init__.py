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
from .api import Evidence, Simulation, VerificationResult, simulate, verify
from .codes import CODES, Code
from .dag import Dag
from .errors import CarVerifyError, InputError, PassError, UsageError
from .findings import Issue, Severity, Tier
from .model import (
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

# Eager: the submodule `car_verify.optimize` would otherwise shadow the function.
from .optimize import OptimizeResult, optimize
from .passes import Context, Example, Pass, Requirement
from .reporters import html as _html  # noqa: F401  (registers the Jupyter views)
from .tools import ToolRegistry

if TYPE_CHECKING:
    from .equivalence import EquivalenceResult, equivalent
    from .permissions import (
        Decision,
        Ledger,
        PermissionReport,
        permission_classify,
        permission_evaluate,
        record_decision,
    )
    from .registry import available_passes
    from .transactions import TransactionReport, transaction_check
    from .wp import Condition, runs_unblocked


# The deciding tools load on first use: `car-verify verify` in a pre-commit hook
# never pays for them.
_LAZY = {
    "available_passes": "registry",
    "EquivalenceResult": "equivalence",
    "equivalent": "equivalence",
    "Decision": "permissions",
    "Ledger": "permissions",
    "PermissionReport": "permissions",
    "permission_classify": "permissions",
    "permission_evaluate": "permissions",
    "record_decision": "permissions",
    "TransactionReport": "transactions",
    "transaction_check": "transactions",
    "Condition": "wp",
    "runs_unblocked": "wp",
}


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
    "FailureBehavior",
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
    "Requirement",
    "Reversibility",
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
    "available_passes",
    "equivalent",
    "load",
    "load_tools",
    "optimize",
    "permission_classify",
    "permission_evaluate",
    "record_decision",
    "runs_unblocked",
    "simulate",
    "transaction_check",
    "verify",
]
