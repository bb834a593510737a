"""The modules' old paths: each module moved into the folder of its layer
(docs/architecture.md), and the name it had at the package's top level still
imports it, with a DeprecationWarning that names the new path.

``import car_verify.model`` gives the very module ``car_verify.ir.model`` (one
object under two names: its classes, its state and ``mock.patch`` are shared), so
code written against the old paths keeps working unchanged until it moves.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["MOVED", "OldPaths"]

MOVED: dict[str, str] = {
    "car_verify.values": "car_verify.base.values",
    "car_verify.errors": "car_verify.base.errors",
    "car_verify.findings": "car_verify.base.findings",
    "car_verify.locate": "car_verify.base.locate",
    "car_verify.codes": "car_verify.base.codes",
    "car_verify.config": "car_verify.base.config",
    "car_verify.events": "car_verify.base.events",
    "car_verify.progress": "car_verify.base.progress",
    "car_verify.display": "car_verify.base.display",
    "car_verify._accept": "car_verify.base._accept",
    "car_verify.schedules": "car_verify.base.schedules",
    "car_verify.model": "car_verify.ir.model",
    "car_verify._codec": "car_verify.ir._codec",
    "car_verify.schema": "car_verify.ir.schema",
    "car_verify.dag": "car_verify.semantics.dag",
    "car_verify._reach": "car_verify.semantics._reach",
    "car_verify.walk": "car_verify.semantics.walk",
    "car_verify.symbolic": "car_verify.semantics.symbolic",
    "car_verify.value_domain": "car_verify.semantics.value_domain",
    "car_verify.policy": "car_verify.rules.policy",
    "car_verify.trace": "car_verify.rules.trace",
    "car_verify.tools": "car_verify.rules.tools",
    "car_verify.shell_words": "car_verify.rules.shell_words",
    "car_verify.policy_regex": "car_verify.rules.policy_regex",
    "car_verify.trace_automata": "car_verify.rules.trace_automata",
    "car_verify.rate_compare": "car_verify.rules.rate_compare",
    "car_verify.policy_analysis": "car_verify.rules.policy_analysis",
    "car_verify.flow": "car_verify.plan.flow",
    "car_verify.intent": "car_verify.plan.intent",
    "car_verify.permissions": "car_verify.plan.permissions",
    "car_verify.concurrency": "car_verify.plan.concurrency",
    "car_verify.claims": "car_verify.plan.claims",
    "car_verify.risk": "car_verify.plan.risk",
    "car_verify.schedule_analysis": "car_verify.plan.schedule_analysis",
    "car_verify.registry": "car_verify.passes.registry",
    "car_verify.car": "car_verify.passes.car",
    "car_verify.equivalence": "car_verify.deciders.equivalence",
    "car_verify.optimize": "car_verify.deciders.optimize",
    "car_verify.fix": "car_verify.deciders.fix",
    "car_verify.transactions": "car_verify.deciders.transactions",
    "car_verify.predictions": "car_verify.deciders.predictions",
    "car_verify.wp": "car_verify.deciders.wp",
    "car_verify.ranking": "car_verify.deciders.ranking",
    "car_verify.workflow": "car_verify.deciders.workflow",
    "car_verify.export": "car_verify.reporters.dot",
    "car_verify.audit": "car_verify.corpora.audit",
    "car_verify.audit_report": "car_verify.corpora.audit_report",
    "car_verify.lint": "car_verify.corpora.lint",
    "car_verify.discover": "car_verify.corpora.discover",
    "car_verify.sources": "car_verify.cli.sources",
    "car_verify.mcp_server": "car_verify.cli.mcp_server",
    "car_verify.docgen": "car_verify.cli.docgen",
}


class OldPaths:
    """A finder and loader for the old paths, consulted after the regular finders
    (so it costs nothing for a module that exists). It keeps to the import system's
    protocols without subclassing ``importlib.abc``, whose import alone costs a
    command's start-up 10 ms."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return ModuleSpec(fullname, cast("Loader", self))

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there",
            DeprecationWarning,
            stacklevel=2,  # the importing line: warnings skips the import system's frames
        )
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the module's spec to the old name's; give it its own back.
        old = module.__spec__
        assert old is not None and isinstance(old.loader_state, ModuleSpec)
        module.__spec__ = old.loader_state
