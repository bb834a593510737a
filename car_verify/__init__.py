"""car-verify: static verification for Agent IR action proposals.

>>> import car_verify
>>> result = car_verify.verify({"actions": [{"id": "a1", "type": "tool_call", "tool": "t"}]})
>>> result.valid
True
"""

from __future__ import annotations

from .api import Evidence, Simulation, VerificationResult, simulate, verify
from .codes import CODES, Code
from .dag import Dag
from .equivalence import EquivalenceResult, equivalent
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
from .optimize import OptimizeResult, optimize
from .passes import Context, Example, Pass, Requirement, available_passes
from .tools import ToolRegistry
from .transactions import TransactionReport, transaction_check
from .wp import Condition, runs_unblocked

__version__ = "0.1.0"

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
    "EquivalenceResult",
    "Evidence",
    "Example",
    "FailureBehavior",
    "InputError",
    "Issue",
    "OptimizeResult",
    "Pass",
    "PassError",
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
    "available_passes",
    "equivalent",
    "load",
    "load_tools",
    "optimize",
    "runs_unblocked",
    "simulate",
    "transaction_check",
    "verify",
]
