"""``car-verify codes``: list every finding code, or explain one."""

from __future__ import annotations

import argparse

from ..base.errors import UsageError
from .options import (
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    write,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("codes", parents=[profiled], help="list every finding code, or explain one")
    p.add_argument("code", nargs="?", help="explain this code: what, why, how to fix")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_codes)


def cmd_codes(args: argparse.Namespace) -> int:
    from ..base.codes import CODES
    from ..corpora.lint import lint_column

    if args.code is not None:
        from .docgen import explain_code

        explained = explain_code(args.code)
        if explained is None:
            import difflib

            near = difflib.get_close_matches(args.code, sorted(CODES), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise UsageError(f"unknown code {args.code!r}; {hint}'car-verify codes' lists them")
        write(explained)
        return EXIT_OK
    codes = CODES  # verify's, then lint's own (about files)
    doc = [
        {
            "code": c.name,
            "severity": {"strict": c.column("strict"), "car": c.column("car")},
            "lint_severity": {
                "strict": lint_column(c.name, "strict"),
                "car": lint_column(c.name, "car"),
            },
            "tier": c.tier.value,
            "blocks": c.blocks,
            "summary": c.summary,
            "fix": {
                "kinds": list(c.repair.kinds) if c.repair else [],
                "how": c.repair.how if c.repair else "",
            },
        }
        for c in codes.values()
    ]

    def text() -> str:
        width = max(len(c) for c in codes)
        # The severity columns: under the strict profile, under car ("-": not reported
        # there), and lint's under car where it differs from verify's; then the tier.
        out = [
            f"{'code':<{width}}  {'strict':<7}  {'car':<7}  {'car lint':<8}  {'tier':<18}  "
            f"{'fix':<21}  summary\n"
        ]
        for c in codes.values():
            lint = lint_column(c.name, "car")
            severities = (
                f"{c.column('strict'):<7}  {c.column('car'):<7}  "
                f"{lint if lint != c.column('car') else '':<8}"
            )
            fix = c.repair.column if c.repair else "none"
            out.append(
                f"{c.name:<{width}}  {severities}  {c.tier.value:<18}  {fix:<21}  {c.summary}\n"
            )
        out.append(
            "\ncar lint: what `car-verify lint` reports under car where verify says info "
            "(docs/lint.md; [tool.car-verify.severity] sets it); blank: as verify.\n"
            "fix: what a finding's fix can be (safe: --fix applies it; unsafe: with "
            "--unsafe-fixes; display: shown only); none: why, in `car-verify codes CODE`.\n"
        )
        return "".join(out)

    emit(args, Report.of(doc, text))
    return EXIT_OK
