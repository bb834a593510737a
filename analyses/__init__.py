"""The built-in analysis passes of car-verify, one module per pass.

Installed as ``car_verify.analyses``. ``BUILTIN`` is their run order.
"""

from __future__ import annotations

from car_verify.analyses.budget import BudgetPass
from car_verify.analyses.compensation import CompensationPass
from car_verify.analyses.conflicts import ConflictPass
from car_verify.analyses.feasibility import FeasibilityPass
from car_verify.analyses.flow import FlowPass
from car_verify.analyses.intent import IntentPass
from car_verify.analyses.loops import LoopPass
from car_verify.analyses.operators import OperatorPass
from car_verify.analyses.policies import PolicyPass
from car_verify.analyses.references import ReferencePass
from car_verify.analyses.strips import StripsPass
from car_verify.analyses.structure import StructurePass
from car_verify.analyses.tool_schema import ToolSchemaPass
from car_verify.analyses.transactions import TransactionPass
from car_verify.passes import Pass

__all__ = [
    "BUILTIN",
    "BudgetPass",
    "CompensationPass",
    "ConflictPass",
    "FeasibilityPass",
    "FlowPass",
    "IntentPass",
    "LoopPass",
    "OperatorPass",
    "PolicyPass",
    "ReferencePass",
    "StripsPass",
    "StructurePass",
    "ToolSchemaPass",
    "TransactionPass",
]

BUILTIN: tuple[type[Pass], ...] = (
    StructurePass,
    OperatorPass,
    ReferencePass,
    StripsPass,
    ConflictPass,
    LoopPass,
    BudgetPass,
    ToolSchemaPass,
    CompensationPass,
    PolicyPass,
    TransactionPass,
    FeasibilityPass,
    FlowPass,
    IntentPass,
)
