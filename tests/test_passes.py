"""Each pass's own VALID / INVALID examples, the pass framework, and the code table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import car_verify
from car_verify import CODES, Issue, Pass, PassError, Tier, UsageError
from car_verify.passes import Context, Example
from car_verify.passes.registry import available_passes, default_passes

PASSES = available_passes()


EXAMPLES = [
    pytest.param(cls, example, id=f"{name}:{example.title}")
    for name, cls in PASSES.items()
    for example in cls.examples
]


@pytest.mark.parametrize(("cls", "example"), EXAMPLES)
def test_pass_example(cls: type[Pass], example: Example) -> None:
    """The pass alone gives exactly the example's codes; so does the whole verifier."""
    alone = car_verify.verify(
        example.document(), passes=[cls.name], **example.inputs(), profile=example.profile
    )
    assert sorted(alone.codes()) == sorted(example.codes)
    everything = car_verify.verify(
        example.document(),
        passes=None
        if cls.default or cls.when_given is not None
        else [
            *(n.name for n in default_passes(example.profile)),
            cls.name,
        ],
        **example.inputs(),
        profile=example.profile,
    )
    assert set(example.codes) <= everything.codes()
    if example.valid:
        assert everything.valid


@pytest.mark.parametrize("name", list(PASSES))
def test_every_pass_declares_itself_and_documents_itself(name: str) -> None:
    cls = PASSES[name]
    assert cls.name == name and cls.verifies and cls.cannot_verify
    assert isinstance(cls.tier, Tier)
    doc = (cls.__module__ and __import__(cls.__module__, fromlist=["_"]).__doc__) or ""
    for section in ("What it checks:", "Why it matters:", "How to fix:", "Why this tier:"):
        assert section in doc, f"{name}'s module docstring lacks {section!r}"
    assert any(e.valid for e in cls.examples), f"{name} has no VALID example"
    if cls.dynamic_codes:
        assert any(e.codes for e in cls.examples), f"{name} has no INVALID example"
    for code in cls.codes:
        assert code in CODES
        assert CODES[code].tier == _tier_of(cls, code)
        assert any(code in e.codes for e in cls.examples), f"{code} has no INVALID example"


def _tier_of(cls: type[Pass], code: str) -> Tier:
    """The tier a pass gives a code: its own, or for CAR's eight checks (one pass of
    two tiers) the tier of the check that reports it."""
    from car_verify.passes.car import CAR_CHECKS, CHECK_OF_CODE, CarPass

    if cls is not CarPass or code not in CHECK_OF_CODE:
        return cls.tier
    return next(c.tier for c in CAR_CHECKS if c.name == CHECK_OF_CODE[code])


def test_code_table_and_passes_agree() -> None:
    emitted = [code for cls in PASSES.values() for code in cls.codes]
    for profile in ("car", "strict"):
        mine = [code for cls in PASSES.values() for code in cls.codes]
        assert len(mine) == len(set(mine)), f"two passes emit the same code under {profile}"
    from car_verify.passes.car import CAR_CODES

    only_car = {name for name, code in CODES.items() if code.severity is None}
    plan_codes = {name for name, code in CODES.items() if code.about == "plan"}
    assert set(emitted) | only_car == plan_codes, "a documented code no pass emits, or the reverse"
    assert only_car <= CAR_CODES, "a code of the car profile's own that it never emits"
    for name in CAR_CODES:
        assert CODES[name].car is not None, f"the car profile emits {name}; its column says never"


def test_section5_table_severities_and_tiers() -> None:
    table = {
        "empty-proposal": ("warning", "decision_procedure"),
        "duplicate-id": ("error", "decision_procedure"),
        "unknown-action-type": ("error", "decision_procedure"),
        "missing-tool-name": ("error", "decision_procedure"),
        "state-write-without-key": ("error", "decision_procedure"),
        "unknown-dependency": ("error", "decision_procedure"),
        "dependency-cycle": ("error", "decision_procedure"),
        "unknown-operator": ("error", "decision_procedure"),
        "precondition-unsatisfied": ("error", "decision_procedure"),
        "missing-dependency": ("error", "decision_procedure"),
        "assertion-fails": ("error", "decision_procedure"),
        "write-conflict": ("warning", "decision_procedure"),
        "repeated-call": ("warning", "heuristic"),
        "too-many-actions": ("error", "decision_procedure"),
        "unknown-tool": ("error", "decision_procedure"),
        "param-schema": ("error", "decision_procedure"),
        "missing-compensation": ("warning", "decision_procedure"),
        "unknown-compensation-target": ("error", "decision_procedure"),
    }
    assert {k: (CODES[k].severity.value, CODES[k].tier.value) for k in table} == table
    default = {c for cls in default_passes("strict") for c in cls.codes}
    # Section 5's table, and unknown-field and duplicate-key (issue 25: nothing
    # passes silently), and param-undeclared, a note (issue 60: nor does a misspelled
    # parameter a schema lets through).
    assert default == {*table, "unknown-field", "duplicate-key", "param-undeclared"}, (
        "section 5's findings"
    )


def test_a_subset_of_passes_runs_alone_and_evidence_says_what_ran() -> None:
    doc = {
        "actions": [{"id": "a", "type": "tool_call", "tool": "t", "preconditions": [{"key": "k"}]}]
    }
    result = car_verify.verify(doc, passes=["structure"], profile="strict")
    assert result.issues == [] and [c.name for c in result.evidence.checks] == ["structure"]
    full = car_verify.verify(doc, profile="strict")
    checks = {c.name: c for c in full.evidence.checks}
    assert checks["strips"].ran and checks["strips"].findings == 1
    assert not checks["tools"].ran and checks["tools"].reason == "no tool registry was given"
    assert not checks["budget"].ran
    ran = sum(c.ran for c in full.evidence.checks)
    assert full.evidence.confidence == ran / len(full.evidence.checks)
    wire = full.to_dict()["evidence"]
    assert set(wire) == {
        "checks",
        "assumptions",
        "untested_regions",
        "residual_risks",
        "confidence",
        "runner",
    }
    # Which ran: the default passes fused over the flat plan, a selection the runner.
    assert wire["runner"] == "fused" and result.evidence.runner == "passes"
    assert {"name", "ran", "verifies", "cannot_verify", "findings", "tier"} <= set(
        wire["checks"][0]
    )
    assert any("tools" in region for region in wire["untested_regions"])
    with_tools = car_verify.verify(doc, tools=[{"name": "t"}], max_actions=5, profile="strict")
    assert with_tools.evidence.confidence == 1.0


def test_an_invalid_tool_schema_names_its_file_and_place(tmp_path: Path) -> None:
    """Validators are built lazily, during verify; the error still says where the
    schema is: the file (when the registry came from one) and the JSON path."""
    tools = [{"name": "t"}, {"name": "u", "parameters": {"type": "nope"}}]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "u"}]}
    by_name = {"t": {}, "u": {"parameters": {"type": "nope"}}}
    for registry, where in (
        (str(path), f"{path}: [1].parameters.type"),
        (tools, "[1].parameters"),
        (by_name, "u.parameters.type"),  # an object of schemas: by the tool's name
    ):
        with pytest.raises(car_verify.InputError) as caught:
            car_verify.verify(doc, tools=registry, profile="strict")
        assert str(caught.value).startswith(where), caught.value


def _schema_messages(schema: dict[str, object], value: object) -> list[str]:
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"p": schema}}}]
    doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "t", "parameters": {"p": value}}]}
    issues = car_verify.verify(doc, tools=tools, passes=["tools"], profile="strict").issues
    assert {issue.code for issue in issues} == {"param-schema"}
    return [issue.message for issue in issues]


def test_a_long_quote_in_a_schema_message_is_cut_to_its_start_and_length() -> None:
    """jsonschema quotes the rejected value and the schema's value whole: a 5,000
    character parameter or an enum of 500 would make a finding of kilobytes."""
    from car_verify.rules.tools import QUOTE_LIMIT

    [long_value] = _schema_messages({"type": "integer"}, "x" * 5000)
    assert long_value == (
        f"parameters of 't' at $.p: \"{'x' * (QUOTE_LIMIT // 2 - 1)}... (5,002 characters) "
        'is not of type "integer"'
    )
    [long_enum] = _schema_messages({"enum": [f"m{i}" for i in range(500)]}, "zz")
    assert long_enum.startswith('parameters of \'t\' at $.p: "zz" is not one of ["m0", "m1", ')
    assert long_enum.endswith("... (3,890 characters)")
    assert _schema_messages({"type": "string"}, 3) == [
        "parameters of 't' at $.p: 3 is not of type \"string\""
    ]
    # values as JSON, not as Python (issue 25): true, null, "x"
    assert _schema_messages({"type": "string"}, True) == [
        "parameters of 't' at $.p: true is not of type \"string\""
    ]
    assert _schema_messages({"enum": ["a"]}, None) == [
        "parameters of 't' at $.p: null is not one of [\"a\"]"
    ]


@given(
    st.text(max_size=400)
    | st.lists(st.integers(0, 10**6), max_size=60)
    | st.dictionaries(st.text(max_size=8), st.integers(), max_size=30)
)
def test_a_schema_message_quotes_at_most_quote_limit_characters_of_a_value(value: object) -> None:
    """Whatever the rejected value, its quote in the message is whole when short and
    cut to QUOTE_LIMIT // 2 characters and its length when long."""
    import json

    from car_verify.rules.tools import QUOTE_LIMIT

    [message] = _schema_messages({"type": "null"}, value)
    quote = json.dumps(value, ensure_ascii=False)
    if len(quote) <= QUOTE_LIMIT:
        assert message == f"parameters of 't' at $.p: {quote} is not of type \"null\""
    else:
        cut = f"{quote[: QUOTE_LIMIT // 2]}... ({len(quote):,} characters)"
        assert message == f"parameters of 't' at $.p: {cut} is not of type \"null\""


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"t": 5}, "tools: expected an array of tool schemas, got an object"),
        (
            {"name": "t", "parameters": {}},
            "tools: expected an array of tool schemas (or an object of them by name), "
            "got one tool schema: put it in an array",
        ),
        (3, "tools: expected an array of tool schemas, got a number"),
        ({"t": {"parameters": 3}}, "tools.t.parameters: expected an object"),
        ({"t": {"name": "u"}}, "tools.t.name: the name 'u' differs from its key 't'"),
        ({"t": car_verify.ToolSchema(name="u")}, "tools.t.name: the name 'u' differs from its key"),
        ([{"name": "t"}, 4], "tools[1]: expected an object, got a number"),
    ],
)
def test_a_bad_tool_registry_is_named_by_index_or_name(tools: object, message: str) -> None:
    """A registry given as {name: schema} locates its errors by name, an array by
    index, each under the argument's name (`tools`)."""
    doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    with pytest.raises(car_verify.InputError) as caught:
        car_verify.verify(doc, tools=tools, profile="strict")
    assert str(caught.value).startswith(message)
    assert car_verify.verify(doc, tools={"t": {"name": "t"}}, profile="strict").valid


def test_unknown_pass_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown pass 'nope'"):
        car_verify.verify({"actions": []}, passes=["nope"], profile="strict")
    with pytest.raises(UsageError, match="unknown pass 'nope'"):
        car_verify.verify({"actions": []}, passes="strips, nope", profile="strict")


def test_a_string_of_pass_names_is_split_on_commas() -> None:
    """``passes="strips"`` is one pass, not the letters s, t, r, ..."""
    doc = {"actions": [{"id": "a", "type": "tool_call"}, {"id": "a", "type": "tool_call"}]}
    ran = {
        c.name
        for c in car_verify.verify(doc, passes="structure", profile="strict").evidence.checks
        if c.ran
    }
    assert ran == {"structure"}
    both = car_verify.verify(doc, passes=" structure,loops ", profile="strict").evidence.checks
    assert [c.name for c in both] == ["structure", "loops"]


class _Broken(Pass):
    name = "broken"
    tier = Tier.HEURISTIC
    codes = ()
    verifies = "nothing"
    cannot_verify = "anything"

    def run(self, ctx: Context) -> Iterable[Issue]:
        raise ZeroDivisionError("oops")


class _Liar(_Broken):
    name = "liar"

    def run(self, ctx: Context) -> Iterable[Issue]:
        yield ctx.issue("duplicate-id", "not mine to emit")


def test_internal_errors_name_the_pass() -> None:
    with pytest.raises(PassError, match="broken"):
        car_verify.verify({"actions": []}, passes=[_Broken], profile="strict")
    with pytest.raises(PassError, match="undeclared code 'duplicate-id'"):
        car_verify.verify({"actions": []}, passes=[_Liar()], profile="strict")


@pytest.fixture
def restore_codes() -> Iterable[None]:
    """The codes a test's pass registers are the process's from then on: take them
    back, so that a later test (the generated reference's) sees the built-in table."""
    from car_verify.base import codes

    before = set(codes._codes)
    yield
    for name in set(codes._codes) - before:
        del codes._codes[name]


@pytest.mark.usefixtures("restore_codes")
def test_a_third_party_pass_can_run_by_instance_with_new_codes() -> None:
    from car_verify.base.codes import Code
    from car_verify.base.findings import Severity

    class NoDeploy(Pass):
        name = "no-deploy"
        tier = Tier.DECISION_PROCEDURE
        codes = ("deploy-forbidden",)
        new_codes = (
            Code("deploy-forbidden", Severity.ERROR, Tier.DECISION_PROCEDURE, "no deploys"),
        )
        verifies = "no deploys"
        cannot_verify = "-"

        def run(self, ctx: Context) -> Iterable[Issue]:
            for i, a in enumerate(ctx.proposal.actions):
                if a.tool == "deploy":
                    yield ctx.issue(
                        "deploy-forbidden", "deploy is forbidden", index=i, where=("tool",)
                    )

    result = car_verify.verify(
        {"actions": [{"id": "d", "type": "tool_call", "tool": "deploy"}]},
        passes=[NoDeploy, "structure"],
        profile="strict",
    )
    assert [(i.code, i.action_id, i.pointer) for i in result.issues] == [
        ("deploy-forbidden", "d", "/actions/0/tool")
    ]


def test_pointers_locate_findings() -> None:
    doc = {
        "actions": [
            {
                "id": "a",
                "type": "tool_call",
                "tool": "t",
                "preconditions": [{"key": "x"}, {"key": "y", "operator": "EQ"}],
                "state_dependencies": ["m"],
            },
        ]
    }
    pointers = {(i.code, i.pointer) for i in car_verify.verify(doc, profile="strict").issues}
    assert pointers == {
        ("precondition-unsatisfied", "/actions/0/preconditions/0"),
        ("unknown-operator", "/actions/0/preconditions/1/operator"),
        ("missing-dependency", "/actions/0/state_dependencies/0"),
    }


def test_pointer_tokens_escape_tilde_and_slash() -> None:
    from car_verify.base.errors import json_pointer

    assert json_pointer(["actions", 3, "a/b~c"]) == "/actions/3/a~1b~0c"
    assert json_pointer([]) == ""
    ctx = Context(car_verify.load({"actions": [{"id": "a", "type": "t"}]}), semantics="strict")
    issue = ctx.issue("unknown-action-type", "m", index=0, where=("parameters", "x/y"))
    assert issue.pointer == "/actions/0/parameters/x~1y"


def test_repeat_threshold_is_configurable() -> None:
    doc = {"actions": [{"id": f"p{i}", "type": "tool_call", "tool": "poll"} for i in range(3)]}
    assert "repeated-call" in car_verify.verify(doc, profile="strict").codes()
    assert (
        "repeated-call" not in car_verify.verify(doc, repeat_threshold=4, profile="strict").codes()
    )
    issue = car_verify.verify(doc, repeat_threshold=2, profile="strict").issues[0]
    assert issue.action_id == "p1"


class _FromEntryPoint(_Broken):
    name = "from-entry-point"

    def run(self, ctx: Context) -> Iterable[Issue]:
        return []


def test_entry_point_passes_are_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from car_verify.passes import registry as passes_module

    class FakeEntryPoint:
        name = "from-entry-point"
        value = "tests:_FromEntryPoint"

        def load(self) -> type[Pass]:
            return _FromEntryPoint

    def fake_entry_points(group: str) -> list[FakeEntryPoint]:
        return [FakeEntryPoint()] if group == "car_verify.passes" else []

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    monkeypatch.setattr(passes_module, "_registry", None)
    registry = available_passes()
    assert "from-entry-point" in registry and "strips" in registry
    checks = [c.name for c in car_verify.verify({"actions": []}, profile="strict").evidence.checks]
    assert checks[-1] == "from-entry-point"

    class NotAPass:
        pass

    FakeEntryPoint.load = lambda self: NotAPass  # type: ignore[method-assign,assignment,return-value]
    monkeypatch.setattr(passes_module, "_registry", None)
    with pytest.raises(UsageError, match="is not a car_verify Pass"):
        available_passes()
    monkeypatch.setattr(passes_module, "_registry", None)


_DEMO_PASS = """
from car_verify.base.findings import Tier
from car_verify.passes import Pass


class DemoPass(Pass):
    name = "demo"
    tier = Tier.HEURISTIC
    codes = ()
    verifies = "nothing"
    cannot_verify = "anything"

    def run(self, ctx):
        return []
"""


def _installed_demo_pass(site: Path, group: str = "car_verify.passes") -> None:
    """A folder laid out like site-packages, with one distribution declaring a pass."""
    (site / "demo_pass.py").write_text(_DEMO_PASS)
    info = site / "demo_pass-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pass\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\ndemo = demo_pass:DemoPass\n")


def _fresh_interpreter(code: str, site: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.split()


_DISCOVER = (
    "import sys, car_verify; "
    "print('demo' in car_verify.available_passes(), 'importlib.metadata' in sys.modules)"
)


def test_an_installed_distribution_s_pass_is_found_in_a_fresh_interpreter(
    tmp_path: Path,
) -> None:
    _installed_demo_pass(tmp_path)
    assert _fresh_interpreter(_DISCOVER, tmp_path) == ["True", "True"]


def test_without_declared_passes_importlib_metadata_is_not_imported(tmp_path: Path) -> None:
    _installed_demo_pass(tmp_path, group="console_scripts")
    assert _fresh_interpreter(_DISCOVER, tmp_path) == ["False", "False"]


@pytest.mark.parametrize(
    ("layout", "maybe"),
    [
        ("nothing", False),
        ("other group", False),
        ("dist-info", True),
        ("egg-info", True),
        ("egg", True),
        ("zip", True),
    ],
)
def test_the_entry_point_prefilter_says_maybe_wherever_a_pass_may_be_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, maybe: bool
) -> None:
    from car_verify.passes.registry import _may_declare_passes

    entry = tmp_path
    declares = "[car_verify.passes]\ndemo = demo_pass:DemoPass\n"
    if layout == "other group":
        (tmp_path / "x-1.dist-info").mkdir()
        (tmp_path / "x-1.dist-info" / "entry_points.txt").write_text("[console_scripts]\n")
    elif layout in ("dist-info", "egg-info"):
        (tmp_path / f"x-1.{layout}").mkdir()
        (tmp_path / f"x-1.{layout}" / "entry_points.txt").write_text(declares)
    elif layout == "egg":
        entry = tmp_path / "x-1.egg"
        (entry / "EGG-INFO").mkdir(parents=True)
        (entry / "EGG-INFO" / "entry_points.txt").write_text(declares)
    elif layout == "zip":
        entry = tmp_path / "bundle.zip"
        entry.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    monkeypatch.delitem(sys.modules, "importlib.metadata", raising=False)
    monkeypatch.setattr(sys, "path", [str(entry), str(tmp_path / "absent")])
    monkeypatch.setattr(sys, "meta_path", [m for m in sys.meta_path if m is PathFinder])
    assert _may_declare_passes() is maybe


def test_the_prefilter_scans_a_path_once_and_answers_as_the_plain_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from car_verify.passes import registry

    (tmp_path / "x-1.dist-info").mkdir()
    (tmp_path / "x-1.dist-info" / "entry_points.txt").write_text("[car_verify.passes]\nd = m:P\n")
    monkeypatch.delitem(sys.modules, "importlib.metadata", raising=False)
    monkeypatch.setattr(sys, "meta_path", [m for m in sys.meta_path if m is PathFinder])
    for path in ([str(tmp_path)], [str(tmp_path / "absent")], sys.path[:]):
        monkeypatch.setattr(sys, "path", path)
        first = registry._may_declare_passes()
        assert first is registry._declared_on(tuple(path))  # the plain reading agrees
        with monkeypatch.context() as scanless:  # the second answer reads no folder
            scanless.setattr(os, "listdir", lambda _: pytest.fail("scanned again"))
            assert registry._may_declare_passes() is first


def test_the_prefilter_defers_to_a_loaded_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.metadata

    from car_verify.passes.registry import _may_declare_passes

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert "importlib.metadata" in sys.modules and importlib.metadata is not None
    assert _may_declare_passes() is True  # it may be patched: ask it


@pytest.mark.parametrize(("count", "says"), [(1, "has 1 action;"), (2, "has 2 actions;")])
def test_too_many_actions_counts_in_words(count: int, says: str) -> None:
    doc = {"actions": [{"type": "tool_call", "tool": "t"} for _ in range(count)]}
    (issue,) = car_verify.verify(doc, max_actions=0, passes=["budget"], profile="strict").issues
    assert says in issue.message


def test_one_instance_of_the_car_pass_serves_several_contexts_at_once() -> None:
    """The car pass sums up each context's findings into CAR's evidence: one instance
    handed to verify from several threads mixes none."""
    from concurrent.futures import ThreadPoolExecutor

    from car_verify.passes.car import CarPass

    shared = CarPass()
    small = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    large = {
        "actions": [
            {"id": f"a{i}", "type": "tool_call", "tool": "t", "parameters": {"i": i}}
            for i in range(40)
        ]
    }  # over CAR's default limit of 30: one resource_bounds finding
    docs = [small, large] * 25

    def bounds(doc: dict[str, object]) -> int:
        checks = car_verify.verify(doc, passes=["budget", shared], profile="car").evidence.checks
        return next(c.findings for c in checks if c.name == "resource_bounds")

    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(bounds, docs))
    assert found == [0 if doc is small else 1 for doc in docs]


BUILTIN_EVERYWHERE = [
    pytest.param(cls, example, profile, id=f"{name}:{profile}:{example.title}")
    for name, cls in PASSES.items()
    if cls.__module__.startswith("car_verify.")
    for example in cls.examples
    for profile in ("car", "strict")
]


@pytest.mark.parametrize(("cls", "example", "profile"), BUILTIN_EVERYWHERE)
def test_every_built_in_pass_runs_alone_under_each_profile(
    cls: type[Pass], example: Example, profile: str
) -> None:
    """No pass refuses a profile: alone, under either, on every example, it runs (its
    evidence record says ran, unless an input it needs is missing), reports only
    codes it declares, each with the severity the profile's semantics gives it
    (the code table: the only source of severity) and its action id."""
    from car_verify.semantics import semantics_of

    sem = semantics_of(profile)
    try:
        result = car_verify.verify(
            example.document(), passes=[cls.name], **example.inputs(), profile=profile
        )
    except car_verify.InputError as err:  # the profile refuses the proposal (car: a type)
        assert profile == "car" and "unknown action type" in str(err)
        return
    records = {c.name: c for c in result.evidence.checks}
    record = records.get(cls.name)
    if record is not None and not record.ran:
        assert record.reason and "profile" not in record.reason  # an input, never a profile
    actions = car_verify.load(example.document()).actions
    for issue in result.issues:
        if cls.dynamic_codes and issue.code not in CODES:
            continue
        assert issue.code in cls.codes
        on = None if issue.index is None else actions[issue.index]
        assert issue.severity == sem.severity(issue.code, on), issue
        if issue.index is None:
            assert issue.action_id == sem.placement.proposal_id


@pytest.mark.usefixtures("restore_codes")
def test_a_third_party_pass_runs_under_car_beside_cars_evidence() -> None:
    """A pass nobody built in, handed to verify under car, runs on CAR's DAG and walk
    (its semantics), and its record stands beside CAR's eight."""
    from car_verify.base.codes import Code
    from car_verify.base.findings import Severity

    class Levels(Pass):
        name = "level-count"
        tier = Tier.DECISION_PROCEDURE
        codes = ("many-levels",)
        new_codes = (Code("many-levels", Severity.WARNING, Tier.DECISION_PROCEDURE, "levels"),)
        verifies = "the plan has one level"
        cannot_verify = "anything else"

        def run(self, ctx: Context) -> Iterable[Issue]:
            if len(ctx.dag.levels) > 1:
                yield ctx.issue("many-levels", f"{len(ctx.dag.levels)} levels", index=0)

    # dependencies order b after a under strict; CAR ignores them: one level
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t"},
            {"id": "b", "type": "tool_call", "tool": "u", "dependencies": ["a"]},
        ]
    }
    names = [c.name for c in default_passes("car")]
    car = car_verify.verify(doc, passes=[*names, Levels], profile="car")
    records = {c.name: c for c in car.evidence.checks}
    assert records["level-count"].ran and records["level-count"].findings == 0
    assert len(car.evidence.checks) == 9 and "loop_detection" in records
    strict = car_verify.verify(doc, passes=[Levels], profile="strict")
    assert [i.code for i in strict.issues] == ["many-levels"]
    assert strict.issues[0].severity is Severity.WARNING  # the table's, under both


@given(
    st.lists(
        st.tuples(
            st.sets(st.sampled_from("abcd"), max_size=2),  # expected_effects' keys
            st.lists(st.sampled_from("abcd"), max_size=3),  # state_dependencies
        ),
        max_size=40,
    )
)
def test_car_race_notes_name_each_earlier_writer_the_dag_leaves_unordered(
    shape: list[tuple[set[str], list[str]]],
) -> None:
    """The car profile's note of a reader that can race earlier writers of a key it
    depends on, against the plain rule: each earlier writer, asked of the DAG one by
    one (plans with many writers per key take the DAG's bitset and chain counts)."""
    from car_verify.semantics import semantics_of

    plan = {
        "actions": [
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "expected_effects": dict.fromkeys(sorted(writes), 1),
                "state_dependencies": reads,
            }
            for i, (writes, reads) in enumerate(shape)
        ]
    }
    model = car_verify.load(plan)
    dag = semantics_of("car").order(model)
    expected = []
    for index, action in enumerate(model.actions):
        for key in dict.fromkeys(action.state_dependencies):
            racing = [
                w for w in dag.writers.get(key, ()) if w < index and not dag.reaches(w, index)
            ]
            if racing:
                expected.append((index, key, racing))
    notes = [
        (issue.index, issue.message)
        for issue in car_verify.verify(plan, profile="car").issues
        if issue.code == "car-spec-deviation" and "can race" in issue.message
    ]
    assert len(notes) == len(expected)
    for at, key, racing in expected:
        [message] = [m for index, m in notes if index == at and f"of {key!r} it" in m]
        names = ", ".join(f"a{w}" for w in racing[:3])
        more = f" and {len(racing) - 3:,} more" if len(racing) > 3 else ""
        levels = ", ".join(str(dag.level_of(w)) for w in racing[:3])
        assert f"after {names}{more}, " in message
        assert f"of {key!r} it depends on (levels {levels} and {dag.level_of(at)})" in message
