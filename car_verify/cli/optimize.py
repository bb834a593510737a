"""``car-verify optimize``: prune phantom state_dependencies."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._common import (
    EXIT_OK,
    _load_proposal,
    _load_state,
    _profile,
    _write,
    format_option,
    proposal_argument,
    state_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("optimize", parents=[profiled], help="prune phantom state_dependencies")
    proposal_argument(p)
    state_option(p)
    p.add_argument("--diff", action="store_true", help="show what was removed (or kept) and why")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_optimize)


def cmd_optimize(args: argparse.Namespace) -> int:
    from ..deciders.optimize import optimize

    result = optimize(
        _load_proposal(args.proposal),
        initial_state=_load_state(args.state),
        profile=_profile(args),
    )
    if args.diff:
        if args.format == "json":
            doc = result.to_dict()
            del doc["proposal"]
            doc["profile"] = _profile(args)
            _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        else:
            _write(f"{result.diff()}\n(profile {_profile(args)})\n")
    else:
        _write(json.dumps(_as_written(args.proposal, result), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _as_written(name: str, result: Any) -> Any:
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
