"""The command line declared once (issue 50).

Every option several commands take is declared by one function of
``car_verify/cli/options.py``, so an option's name means one thing in every
command; every ``--format`` choice is the name of a reporter, and the reporter
registry writes each command's report (no command chooses a layout itself); an
option renamed in one command (because its name meant another thing elsewhere)
still reads its old spelling there, with a deprecation warning on stderr.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from pathlib import Path

import pytest

from car_verify.cli import _parser, main
from car_verify.cli.options import command_tree
from car_verify.reporters.formats import FORMATS, REPORTERS, Report, render

pytestmark = pytest.mark.usefixtures("strict_cli")

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "car_verify" / "cli"
EXAMPLES = ROOT / "examples"
PROPOSAL = str(EXAMPLES / "payment" / "proposal.json")


def _commands() -> list[tuple[str, argparse.ArgumentParser, str]]:
    return command_tree(_parser())


def test_every_commands_format_choices_are_the_reporters_names() -> None:
    offered = 0
    for name, parser, _ in _commands():
        for action in parser._actions:
            if "--format" not in action.option_strings:
                continue
            offered += 1
            assert action.choices, name
            assert set(action.choices) <= set(REPORTERS), (name, action.choices)
            assert action.default in action.choices, name
    assert offered >= 20  # nearly every command writes a report
    assert tuple(REPORTERS) == FORMATS


def test_a_format_no_reporter_writes_cannot_be_declared() -> None:
    from car_verify.cli.options import format_option

    with pytest.raises(ValueError, match="not a reporter"):
        format_option(argparse.ArgumentParser(), ("text", "xml"))
    with pytest.raises(ValueError, match="not a reporter"):
        format_option(argparse.ArgumentParser(), ("text",), default="json")


def test_an_option_name_means_one_thing_in_every_command() -> None:
    """The same option string stores to the same place and is a flag everywhere or
    takes a value everywhere. ``-o`` is where the output goes either way: the report
    (``--output-file``: verify, lint) or the file a command makes (``--output``)."""
    meanings: defaultdict[str, defaultdict[tuple[str, bool], list[str]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for name, parser, _ in _commands():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:  # an old spelling, kept for one command
                continue
            for option in action.option_strings:
                meanings[option][(action.dest, action.nargs != 0)].append(name)
    two = {o: dict(m) for o, m in meanings.items() if len(m) > 1 and o != "-o"}
    assert not two, two
    assert {dest for dest, _ in meanings["-o"]} == {"output", "output_file"}
    assert {"--profile", "--format", "--state", "--tools", "--policies", "-q"} <= set(meanings)


def _raw_options(path: Path) -> set[str]:
    """The option strings ``path`` passes to ``add_argument`` itself."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            found.update(
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value[:1] == "-"
            )
    return found


def test_an_option_two_commands_take_is_declared_once_in_options() -> None:
    """A command module declares only the options no other command takes; the
    shared ones come from options.py. (The ``hook`` command's flags are declared by
    car_verify/hook.py, which the executable runs without loading the command line.)"""
    shared = _raw_options(CLI / "options.py")
    modules = {p.stem: _raw_options(p) for p in CLI.glob("*.py") if p.stem != "options"}
    by_option: defaultdict[str, list[str]] = defaultdict(list)
    for module, options in modules.items():
        for option in options:
            by_option[option].append(module)
    assert not {o: m for o, m in by_option.items() if len(m) > 1}
    assert not {o: m for o, m in by_option.items() if o in shared}


def test_no_command_chooses_a_format_itself() -> None:
    """The reporter registry is the only reader of ``args.format``."""
    readers = []
    for path in CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(ast.unparse(s) in ("args.format", "self.format") for s in sides):
                    readers.append(f"{path.name}:{node.lineno}")
    assert readers == []


def test_command_modules_import_the_shared_module_by_public_names() -> None:
    private = []
    for path in CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("options"):
                private += [f"{path.name}: {a.name}" for a in node.names if a.name[:1] == "_"]
    assert private == []
    assert not (CLI / "_common.py").exists()


def test_the_registry_writes_a_report_in_each_format() -> None:
    from car_verify.base.findings import Issue, Severity, Tier

    issue = Issue("duplicate-id", Severity.ERROR, Tier.DECISION_PROCEDURE, "twice", "a")
    report = Report(lambda: "the text\n", lambda: '{"doc": 1}\n', findings=[issue], artifact="p")
    assert render(report, "text") == "the text\n"
    assert render(report, "json") == '{"doc": 1}\n'
    sarif = json.loads(render(report, "sarif", docs_url="https://docs.example"))
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "duplicate-id"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "p"
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["duplicate-id"]["helpUri"] == "https://docs.example/codes.md#duplicate-id"
    assert render(report, "github") == "::error file=p,title=duplicate-id::a: twice\n"
    with pytest.raises(ValueError, match="no reporter 'xml'"):
        render(report, "xml")


def test_a_report_with_no_findings_is_its_text_in_the_formats_that_list_findings() -> None:
    settings = Report(lambda: 'profile = "car"\n', lambda: "{}\n")
    assert render(settings, "sarif") == render(settings, "github") == 'profile = "car"\n'
    with pytest.raises(ValueError, match="nothing to count"):
        settings.counted("summary")


def test_statistics_count_in_text_and_json_and_leave_sarif_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}] * 2}
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps(doc))
    outs = {}
    for fmt in ("json", "sarif"):
        for statistics in ([], ["--statistics"]):
            main(["verify", str(plan), "--format", fmt, "--no-policies", *statistics])
            outs[fmt, bool(statistics)] = capsys.readouterr().out
    rows = json.loads(outs["json", True])
    assert {"code": "duplicate-id", "severity": "error", "count": 1} in rows
    assert outs["sarif", True] == outs["sarif", False]


@pytest.mark.parametrize(
    ("old", "new", "argv"),
    [
        (
            "--config",
            "--risk-config",
            ["risk", PROPOSAL, "--format", "json", "--method", "sampled", "--trials", "20"],
        ),
        (
            "--policies",
            "--workflow-policies",
            ["workflow", str(EXAMPLES / "workflow" / "graph.json"), "--format", "json"],
        ),
    ],
)
def test_a_renamed_option_reads_its_old_spelling_with_a_warning(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    argv: list[str],
) -> None:
    if new == "--risk-config":
        given = tmp_path / "config.json"
        given.write_text(json.dumps({"seed": 7}))
    else:
        given = EXAMPLES / "workflow" / "policies.json"
    code_new = main([*argv, new, str(given)])
    out_new, err_new = capsys.readouterr()
    code_old = main([*argv, old, str(given)])
    out_old, err_old = capsys.readouterr()
    assert (code_old, out_old) == (code_new, out_new)
    assert "deprecated" not in err_new
    assert f"warning: car-verify {argv[0]} {old} is deprecated: use {new}" in err_old
    help_text = _help(argv[0])
    assert new in help_text and f"{old} " not in help_text.replace(new, "")


def _help(command: str) -> str:
    for name, parser, _ in _commands():
        if name == f"car-verify {command}":
            return parser.format_help()
    raise AssertionError(command)


def test_a_renamed_option_keeps_its_meaning_where_it_was_not_renamed() -> None:
    """``--config`` is lint's configuration file and ``--policies`` a policy
    directory: neither warns there."""
    lint = _help("lint")
    assert "--config FILE" in lint
    verify = _help("verify")
    assert "--policies DIR" in verify
    risk = _help("risk")
    assert "--risk-config CONFIG.json" in risk


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[object, ...]:
    import contextlib
    import io

    from car_verify.cli.options import ArgumentError

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parsed: object = vars(parser.parse_args(argv))
        except ArgumentError as refused:
            parsed = ("refused", str(refused), refused.usage)
        except SystemExit as done:
            parsed = ("exit", done.code)
    return parsed, out.getvalue(), err.getvalue()


def test_a_command_line_parses_the_same_with_only_its_command_declared() -> None:
    """The speed path (only the command named is loaded and declared) against the
    plain one (every command declared): the same values, the same refusals, the
    same help, for every command and at the top level."""
    from car_verify.cli import COMMANDS, _parser_for

    lines = [
        [],
        ["-h"],
        ["--help"],
        ["--he"],
        ["--version"],
        ["nope"],
        ["verif", "p.json"],
        ["verify"],
        ["verify", "p.json", "--format", "sarif", "-q", "--statistics", "--profile", "strict"],
        ["verify", "p.json", "--format", "xml"],
        ["lint", ".", "--select", "a,b", "--workers", "2", "--config", "pyproject.toml"],
        ["lint", "--workers", "0"],
        ["risk", "p.json", "--config", "c.json", "--trials", "5"],
        ["risk", "p.json", "--risk-config", "c.json"],
        ["workflow", "--policies", "w.json"],
        ["policy", "check", "p.json", "--format", "sarif"],
        ["policy", "diff", "a", "b", "--max-states", "3"],
        ["policy"],
        ["mcp", "--workers", "3"],
        ["flow", "p.json", "--policy", "f.json", "--approve", "x", "--reject", "y"],
        *([name, "--help"] for name in COMMANDS),
    ]
    for argv in lines:
        assert _outcome(_parser_for(argv), argv) == _outcome(_parser(), argv), argv


def test_the_commands_named_are_the_commands_declared_in_that_order() -> None:
    from car_verify.cli import COMMANDS

    names = [name.split()[1] for name, _, _ in _commands()]
    assert list(dict.fromkeys(names)) == list(COMMANDS)


def test_a_command_line_loads_only_the_command_it_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from car_verify.cli import main; main(sys.argv[1:]);"
        "print(sorted(m for m in sys.modules if m.startswith('car_verify.cli.')))"
    )
    for argv, loaded in (
        (["--version"], ["car_verify.cli.options"]),
        (["schema"], ["car_verify.cli.options", "car_verify.cli.schema", "car_verify.cli.sources"]),
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.stdout.splitlines()[-1] == repr(loaded), done.stderr
