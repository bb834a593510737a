"""The command-line reference, ``docs/cli.md``: every command and flag, generated
from the commands' own declarations (``scripts/gen_docs.py`` writes it; a test
fails when it is stale)."""

from __future__ import annotations

__all__ = ["render_cli_reference"]


def render_cli_reference() -> str:
    """``docs/cli.md``: every command and every flag it takes, from the one
    declaration of the commands (:mod:`car_verify.cli`)."""
    import argparse

    out = [
        "# Command-line reference",
        "",
        "Generated from the commands' own declarations by `python scripts/gen_docs.py`;",
        "a test fails when it is stale. The arguments several commands take are",
        "declared once (`car_verify/cli/options.py`) and mean the same everywhere:",
        "`PROPOSAL` (a file, or `-` for stdin), `--state STATE.json`, `--tools",
        "TOOLS.json` (the tool registry), `--policies DIR`, `--profile car|strict`",
        "(default `car`; also `$CAR_VERIFY_PROFILE` or `profile` in the configuration),",
        "`--format` (also spelt `--output-format`; its values are the reporters' names:",
        "`text`, `json`, `sarif`, `github`), `--ledger` (also `--approvals`), `-q` (say",
        "less) and `-o` (where the output goes: the report itself, `--output-file`, or the",
        "file or folder the command makes, `--output`).",
        "",
    ]

    from . import _parser
    from .options import command_tree

    for name, parser, summary in command_tree(_parser()):
        out += [f"## `{name}`", "", summary, "", "| argument | value | default | meaning |"]
        out.append("|---|---|---|---|")
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            if action.option_strings:
                names = ", ".join(f"`{o}`" for o in action.option_strings)
            else:
                many = {"+": " (one or more)", "*": " (any number)", "?": " (optional)"}
                names = f"`{action.metavar or action.dest}`{many.get(str(action.nargs), '')}"
            if action.choices is not None:
                value = ", ".join(f"`{c}`" for c in action.choices)
            elif action.nargs == 0:
                value = ""
            else:
                value = f"`{action.metavar}`" if action.metavar and action.option_strings else ""
            default = action.default
            shown = (
                ""
                if default in (None, False, argparse.SUPPRESS) or not action.option_strings
                else f"`{default}`"
            )
            meaning = (action.help or "").replace("|", "\\|").replace("\n", " ")
            out.append(f"| {names} | {value} | {shown} | {meaning} |")
        out.append("")
    return "\n".join(out)
