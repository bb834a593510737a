"""``car-verify passes``: list the analysis passes."""

from __future__ import annotations

import argparse

from .options import (
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("passes", parents=[profiled], help="list the analysis passes")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_passes)


def cmd_passes(args: argparse.Namespace) -> int:
    from ..passes.registry import available_passes, default_passes, profiles_of

    passes = available_passes()
    profile = run_profile(args)
    runs = default_passes(profile.value)
    when = default_passes(profile.value, lambda _: True)
    doc = [
        {
            "name": name,
            "tier": cls.tier.value,
            "verifies": cls.verifies,
            "cannot_verify": cls.cannot_verify,
            "requires": sorted(cls.requires),
            "codes": list(cls.codes),
            "default": cls.default,
            "preserves": sorted(cls.preserves),
            "profiles": profiles_of(cls),
            "runs_by_default": cls in runs,
        }
        for name, cls in passes.items()
    ]

    def text() -> str:
        out = []
        for name, cls in passes.items():
            needs = f" (needs: {', '.join(sorted(cls.requires))})" if cls.requires else ""
            codes = ", ".join(cls.codes)
            if cls.dynamic_codes:  # a policies pass reports under the names of the rules
                codes = ", ".join([*cls.codes, "the name of each rule (deny_tool:rm, ...)"])
            reports = profiles_of(cls)
            only = f" [reports under {reports[0]} only]" if len(reports) == 1 else ""
            out.append(f"{name}{only}: {cls.verifies}{needs}\n    codes: {codes}\n")
        given = [c.name for c in when if c not in runs]
        more = f"; when their input is given: {', '.join(given)}" if given else ""
        chosen = ", ".join(c.name for c in runs)
        out.append(f"run by default (profile {profile}): {chosen}{more}\n")
        return "".join(out)

    emit(args, Report.of(doc, text))
    return EXIT_OK
