"""``car-verify optimize``: prune phantom state_dependencies."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .options import (
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    diff_option,
    emit,
    format_option,
    load_proposal,
    load_state,
    proposal_argument,
    run_profile,
    state_option,
)

if TYPE_CHECKING:
    from ..base.values import JSONValue
    from ..deciders.optimize import OptimizeResult


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("optimize", parents=[profiled], help="prune phantom state_dependencies")
    proposal_argument(p)
    state_option(p)
    diff_option(p, "show what was removed (or kept) and why")
    format_option(
        p,
        ("json", "text"),
        "json",
        "json: the optimized proposal (the default); text: what was removed (or kept) and "
        "why, as --diff prints it (--diff --format json: that account as JSON)",
    )
    p.set_defaults(run=cmd_optimize)


def cmd_optimize(args: argparse.Namespace) -> int:
    from ..deciders.optimize import optimize

    result = optimize(
        load_proposal(args.proposal),
        initial_state=load_state(args.state),
        profile=run_profile(args),
    )
    profile = run_profile(args)

    def account() -> str:
        return f"{result.diff()}\n(profile {profile})\n"

    if not args.diff:  # json: the optimized proposal; text: what was done, and why
        from ..reporters.json import dump

        emit(args, Report(account, lambda: dump(_as_written(args.proposal, result))))
        return EXIT_OK
    if not getattr(args, "format_given", False):  # --diff reads as text unless told
        args.format = "text"
    doc = result.to_dict()
    del doc["proposal"]
    doc["profile"] = profile
    emit(args, Report.of(doc, account))
    return EXIT_OK


def _as_written(name: str, result: OptimizeResult) -> JSONValue:
    """The optimized proposal as the user wrote it: their own document (a JSON or
    YAML file) with only the removed entries gone, no default filled in and nothing
    invented (an id, a timestamp); from stdin, the model's full form."""
    if name == "-":
        return result.proposal.to_dict()
    text = Path(name).read_text(encoding="utf-8")
    if name.lower().endswith((".yaml", ".yml")):
        import yaml

        doc = yaml.safe_load(text)
    else:
        doc = json.loads(text)
    actions = doc.get("actions") if isinstance(doc, dict) else None
    if not isinstance(actions, list):
        return result.proposal.to_dict()
    for change in result.removed:
        action = actions[change.index]
        deps = action.get("state_dependencies", [])
        action["state_dependencies"] = [k for k in deps if k != change.key]
    return doc
