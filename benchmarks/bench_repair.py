"""How often the findings' fixes repair the mistakes agents make, and how often a
safe fix changes a valid plan (issue 60).

The corpus: the bundled examples (each ``examples/*/proposal.json`` with its
``tools.json`` and ``state.json``), the bundled tau-bench airline runs of gpt-4o
lifted to plans (each call after the one before it, through its result's key:
docs/audit.md), and public function-calling data, BFCL's test
cases (a bundled sample of 140, ``benchmarks/data/bfcl_sample.jsonl``, Apache 2.0;
the whole set with ``--bfcl DIR``, the ``bfcl_eval/data`` folder of ``bfcl-eval``).
A BFCL case becomes a plan of its ground-truth calls (each parameter's first
answer; BFCL's ``dict``/``float``/``tuple``/``any`` types as JSON Schema's) and a
tool registry of its function documents, each object closed
(``additionalProperties: false``: BFCL's checker rejects a parameter the document
does not declare).

Each plan a profile calls valid (no error, no warning) is copied and corrupted,
one mistake per copy, the mistakes agents make, each keeping the information the
original had (a seeded choice of where):

- ``type-drift``: a value in another JSON type that says the same (5 as "5", true
  as "true", "94103" as 94103, [x] as x);
- ``param-name``: a parameter misspelled or re-cased (``userId`` for ``user_id``,
  one letter dropped, doubled or swapped);
- ``tool-name``: the tool's name misspelled or re-cased likewise;
- ``enum-case``: an ``enum`` value in another case;
- ``extra-param``: a parameter the tool's schema does not declare (and forbids);
- ``missing-dependency``: a ``state_dependencies`` entry dropped that a
  precondition of the action still reads;
- ``wrong-order``: an action swapped with the one before it, whose effect it reads.

A copy the profile cannot tell from the original (the same findings and levels:
the mistake changes nothing the profile checks) is left out and counted. Each
copy is repaired as ``car-verify verify COPY --tools T --fix --unsafe-fixes``
repairs it (:func:`car_verify.deciders.fix.fix_document`, its edits applied to the
copy's text) and compared with the original (JSON equality: 5 is not 5.0). Each
valid original is also given to ``--fix`` (safe fixes only): a change is a safe fix
that changed a valid plan, which must not happen.

Prints, per profile and kind, the copies, the share repaired exactly and the time
per copy; then the share over all kinds and the changes to valid plans. The
targets (issue 60): 70% overall, 50% for each kind, no change to a valid plan.
Run: python benchmarks/bench_repair.py [--profile car|strict|both] [--bfcl DIR]
[--per-kind N] [--seed N] [--open]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "data" / "bfcl_sample.jsonl"
BFCL_FILES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
KINDS = (
    "type-drift",
    "param-name",
    "tool-name",
    "enum-case",
    "extra-param",
    "missing-dependency",
    "wrong-order",
)

Plan = dict[str, Any]
Case = tuple[str, Plan, list[dict[str, Any]] | None, dict[str, Any] | None]


# --- the corpus ---------------------------------------------------------------------------


def examples() -> Iterator[Case]:
    for folder in sorted((ROOT / "examples").iterdir()):
        plan = folder / "proposal.json"
        if not plan.is_file():
            continue
        tools = folder / "tools.json"
        state = folder / "state.json"
        yield (
            f"examples/{folder.name}",
            json.loads(plan.read_text()),
            json.loads(tools.read_text()) if tools.is_file() else None,
            json.loads(state.read_text()) if state.is_file() else None,
        )


_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


#: ``--open``: BFCL's objects as published, taking parameters they do not declare.
CLOSED = True


def _schema(node: Any) -> Any:
    """A BFCL parameter document as JSON Schema: its Python type names as JSON
    Schema's, ``any`` as no type, every object closed (unless ``--open``)."""
    if isinstance(node, list):
        return [_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _schema(v) for k, v in node.items() if k not in ("type", "properties")}
    kind = node.get("type")
    if isinstance(kind, str) and kind != "any":
        out["type"] = _TYPES.get(kind, kind)
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _schema(v) for k, v in node["properties"].items()}
        if CLOSED:
            out["additionalProperties"] = False
    return out


def _answer(choices: Any) -> tuple[bool, Any]:
    """A parameter's first possible answer (``""`` means: may be left out); inside an
    object, each member's first answer likewise."""
    for choice in choices if isinstance(choices, list) else [choices]:
        if choice == "":
            continue
        if isinstance(choice, dict):
            inner = {}
            for key, nested in choice.items():
                given, value = _answer(nested)
                if given:
                    inner[key] = value
            return True, inner
        return True, choice
    return False, None


def bfcl_case(entry: dict[str, Any]) -> Case | None:
    tools = []
    for function in entry["function"]:
        tools.append(
            {
                "name": function["name"],
                "description": function.get("description", ""),
                "parameters": _schema(function.get("parameters", {})),
            }
        )
    actions = []
    for n, call in enumerate(entry["ground_truth"]):
        ((name, arguments),) = call.items()
        parameters = {}
        for key, choices in arguments.items():
            given, value = _answer(choices)
            if given:
                parameters[key] = value
        actions.append(
            {"id": f"call_{n}", "type": "tool_call", "tool": name, "parameters": parameters}
        )
    if len({t["name"] for t in tools}) != len(tools):
        return None
    plan = {"id": entry["id"], "timestamp": "2026-01-01T00:00:00Z", "actions": actions}
    return f"bfcl/{entry['id']}", plan, tools, None


def trajectories() -> Iterator[Case]:
    """The bundled tau-bench airline runs (gpt-4o), each lifted to a plan (a call
    after the one before it, through its result's key): real agents' plans."""
    from car_verify.importers import read_file
    from car_verify.importers.base import Trajectory

    source = ROOT / "examples" / "tau-bench-airline" / "gpt-4o-airline.json.gz"
    for n, run in enumerate(read_file(source)):
        if isinstance(run, Trajectory) and len(run.calls) >= 2:
            yield f"tau-bench/{n}", run.proposal(), None, None


def bfcl(folder: Path | None) -> Iterator[Case]:
    if folder is None:
        lines = SAMPLE.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
    else:
        entries = []
        for name in BFCL_FILES:
            answers = {
                a["id"]: a
                for a in map(
                    json.loads, (folder / "possible_answer" / f"BFCL_v4_{name}.json").open()
                )
            }
            for question in map(json.loads, (folder / f"BFCL_v4_{name}.json").open()):
                if question["id"] in answers:
                    entries.append(
                        {**question, "ground_truth": answers[question["id"]]["ground_truth"]}
                    )
    for entry in entries:
        case = bfcl_case(entry)
        if case is not None:
            yield case


# --- the mistakes -------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def misspell(name: str, rng: random.Random) -> str:
    """Another spelling an agent writes: re-cased (camel, snake, capitalised) or one
    letter dropped, doubled or swapped with its neighbour."""
    options = []
    if "_" in name:
        options.append(_camel(name))
    if _snake(name) != name:
        options.append(_snake(name))
    if name[:1].islower():
        options.append(name[:1].upper() + name[1:])
    letters = [i for i, c in enumerate(name) if c.isalpha()]
    if len(letters) >= 4:
        i = rng.choice(letters[1:-1])
        options.append(name[:i] + name[i + 1 :])  # dropped
        options.append(name[:i] + name[i] + name[i:])  # doubled
        if name[i + 1 : i + 2].isalpha() and name[i] != name[i + 1]:
            options.append(name[:i] + name[i + 1] + name[i] + name[i + 2 :])  # swapped
    options = [o for o in options if o != name]
    return rng.choice(options) if options else name


def _properties(tools: dict[str, Any], tool: str | None) -> dict[str, Any]:
    schema = tools.get(tool or "", {}).get("parameters") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _calls(plan: Plan, tools: dict[str, Any]) -> list[int]:
    return [
        i
        for i, a in enumerate(plan["actions"])
        if a.get("type") == "tool_call" and a.get("tool") in tools
    ]


def drift(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` in another JSON type saying the same, or None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and json.dumps(value) == repr(value):
        return json.dumps(value)
    if isinstance(value, str) and re.fullmatch(r"[1-9][0-9]{0,8}", value):
        return int(value)
    if isinstance(value, list) and len(value) == 1 and not isinstance(value[0], (list, dict)):
        return value[0]
    return None


Corrupt = Callable[[Plan, dict[str, Any], random.Random], list[Plan]]


def type_drift(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i in _calls(plan, tools):
        props = _properties(tools, plan["actions"][i]["tool"])
        for key, value in plan["actions"][i].get("parameters", {}).items():
            if key in props and drift(value, props[key]) is not None:
                broken = copy.deepcopy(plan)
                broken["actions"][i]["parameters"][key] = drift(value, props[key])
                out.append(broken)
    return out


def param_name(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i in _calls(plan, tools):
        props = _properties(tools, plan["actions"][i]["tool"])
        params = plan["actions"][i].get("parameters", {})
        for key in params:
            wrong = misspell(key, rng)
            if wrong != key and wrong not in props and wrong not in params:
                broken = copy.deepcopy(plan)
                items = list(params.items())
                broken["actions"][i]["parameters"] = {wrong if k == key else k: v for k, v in items}
                out.append(broken)
    return out


def tool_name(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i in _calls(plan, tools):
        name = plan["actions"][i]["tool"]
        wrong = misspell(name, rng)
        if wrong != name and wrong not in tools:
            broken = copy.deepcopy(plan)
            broken["actions"][i]["tool"] = wrong
            out.append(broken)
    return out


def enum_case(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i in _calls(plan, tools):
        props = _properties(tools, plan["actions"][i]["tool"])
        for key, value in plan["actions"][i].get("parameters", {}).items():
            enum = props.get(key, {}).get("enum") if isinstance(props.get(key), dict) else None
            if not (isinstance(value, str) and isinstance(enum, list) and value in enum):
                continue
            cases = [value.upper(), value.capitalize(), value.lower(), value.title()]
            others = [c for c in cases if c != value and c not in enum]
            if others:
                broken = copy.deepcopy(plan)
                broken["actions"][i]["parameters"][key] = rng.choice(others)
                out.append(broken)
    return out


_EXTRAS = (("verbose", True), ("format", "json"), ("timeout", 30), ("debug", False), ("limit", 10))


def extra_param(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i in _calls(plan, tools):
        props = _properties(tools, plan["actions"][i]["tool"])
        params = plan["actions"][i].get("parameters", {})
        name, value = rng.choice(_EXTRAS)
        if name not in props and name not in params:
            broken = copy.deepcopy(plan)
            broken["actions"][i]["parameters"] = {**params, name: value}
            out.append(broken)
    return out


def missing_dependency(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    out = []
    for i, action in enumerate(plan["actions"]):
        read = {p.get("key") for p in action.get("preconditions", []) if isinstance(p, dict)}
        for n, key in enumerate(action.get("state_dependencies", [])):
            if key in read:
                broken = copy.deepcopy(plan)
                del broken["actions"][i]["state_dependencies"][n]
                out.append(broken)
    return out


def wrong_order(plan: Plan, tools: dict[str, Any], rng: random.Random) -> list[Plan]:
    actions = plan["actions"]
    out = []
    for i in range(1, len(actions)):
        writes = set(actions[i - 1].get("expected_effects", {}))
        reads = set(actions[i].get("state_dependencies", []))
        reads |= {p.get("key") for p in actions[i].get("preconditions", []) if isinstance(p, dict)}
        if writes & reads:
            broken = copy.deepcopy(plan)
            broken["actions"][i - 1], broken["actions"][i] = actions[i], actions[i - 1]
            broken["actions"] = copy.deepcopy(broken["actions"])
            out.append(broken)
    return out


CORRUPTIONS: dict[str, Corrupt] = {
    "type-drift": type_drift,
    "param-name": param_name,
    "tool-name": tool_name,
    "enum-case": enum_case,
    "extra-param": extra_param,
    "missing-dependency": missing_dependency,
    "wrong-order": wrong_order,
}


# --- the measure --------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """JSON equality, type for type (5 is not 5.0, true is not 1), key order aside."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def seen(plan: Plan, tools: Any, state: Any, profile: str) -> tuple[Any, ...]:
    """What the profile sees of a plan: its findings (code, action, severity) and levels."""
    import car_verify

    result = car_verify.verify(plan, tools=tools, initial_state=state, profile=profile)
    found = sorted((i.code, i.action_id or "", i.severity.value) for i in result.issues)
    return tuple(found), tuple(map(tuple, result.execution_levels))


def blocking(plan: Plan, tools: Any, state: Any, profile: str) -> bool:
    import car_verify

    result = car_verify.verify(plan, tools=tools, initial_state=state, profile=profile)
    return any(i.severity.value in ("error", "warning") for i in result.issues)


def fixed(plan: Plan, tools: Any, state: Any, profile: str, unsafe: bool) -> Plan:
    """The plan as ``verify --fix [--unsafe-fixes]`` leaves its file."""
    from car_verify.base.patch import apply_to_text
    from car_verify.deciders.fix import fix_document

    text = json.dumps(plan, indent=2) + "\n"
    repaired = fix_document(
        plan, tools=tools, initial_state=state, profile=profile, unsafe=unsafe, timeout_ms=5_000
    )
    return json.loads(apply_to_text(text, repaired.edits)) if repaired.changed else plan


def measure(cases: list[Case], profile: str, per_kind: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    valid = [c for c in cases if not blocking(c[1], c[2], c[3], profile)]
    changed_valid = []
    for name, plan, tools, state in valid:
        if not same(fixed(plan, tools, state, profile, unsafe=False), plan):
            changed_valid.append(name)
    rows: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        corrupt = CORRUPTIONS[kind]
        order = []  # every place of every valid plan, a copy each, in a seeded order
        for name, plan, tools, state in valid:
            registry = {t["name"]: t for t in tools or []}
            order += [(name, plan, tools, state, b) for b in corrupt(plan, registry, rng)]
        rng.shuffle(order)
        copies = repaired = unseen = 0
        misses: list[str] = []
        spent = 0.0
        for name, plan, tools, state, broken in order:
            if copies >= per_kind:
                break
            if seen(broken, tools, state, profile) == seen(plan, tools, state, profile):
                unseen += 1
                continue
            copies += 1
            start = time.perf_counter()
            after = fixed(broken, tools, state, profile, unsafe=True)
            spent += time.perf_counter() - start
            if same(after, plan):
                repaired += 1
            else:
                misses.append(name)
        rows[kind] = {
            "copies": copies,
            "repaired": repaired,
            "unseen": unseen,
            "ms_per_copy": 1000 * spent / copies if copies else 0.0,
            "misses": misses[:5],
        }
    return {"valid": len(valid), "changed_valid": changed_valid, "kinds": rows}


def report(profile: str, out: dict[str, Any], verbose: bool) -> bool:
    kinds = out["kinds"]
    print(f"\nprofile {profile}: {out['valid']} valid plans")
    print(f"  {'kind':<20} {'copies':>6} {'repaired':>9} {'share':>7} {'unseen':>7} {'ms/copy':>8}")
    ok = True
    total = good = 0
    for kind, row in kinds.items():
        share = row["repaired"] / row["copies"] if row["copies"] else float("nan")
        total += row["copies"]
        good += row["repaired"]
        ok &= row["copies"] == 0 or share >= 0.5
        print(
            f"  {kind:<20} {row['copies']:>6} {row['repaired']:>9} {share:>7.0%} "
            f"{row['unseen']:>7} {row['ms_per_copy']:>8.0f}"
        )
        if verbose and row["misses"]:
            print(f"  {'':<20} not repaired: {', '.join(row['misses'])}")
    overall = good / total if total else float("nan")
    changed = out["changed_valid"]
    print(
        f"  overall: {good} of {total} repaired exactly ({overall:.0%}; target 70%, each kind 50%)"
    )
    print(f"  safe fixes that changed a valid plan: {len(changed)} (target 0)")
    if changed:
        print(f"    {', '.join(changed[:10])}")
    return ok and overall >= 0.7 and not changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=("car", "strict", "both"), default="both")
    parser.add_argument("--bfcl", type=Path, help="the bfcl_eval/data folder (default: the sample)")
    parser.add_argument("--per-kind", type=int, default=60, help="copies per kind (default 60)")
    parser.add_argument("--seed", type=int, default=60)
    parser.add_argument("-v", "--verbose", action="store_true", help="name the misses")
    parser.add_argument(
        "--open",
        action="store_true",
        help="BFCL's objects as published (an undeclared parameter then passes: an extra "
        "one is no mistake the schema can tell, and is left out as unseen)",
    )
    args = parser.parse_args(argv)
    global CLOSED
    CLOSED = not args.open
    cases = [*examples(), *trajectories(), *bfcl(args.bfcl)]
    count = {k: sum(1 for c in cases if c[0].startswith(k)) for k in ("examples/", "tau", "bfcl")}
    print(
        f"corpus: {len(cases)} plans ({count['examples/']} bundled examples, {count['tau']} "
        f"tau-bench runs lifted to plans, {count['bfcl']} BFCL cases); at most "
        f"{args.per_kind} copies per kind"
    )
    profiles = ("car", "strict") if args.profile == "both" else (args.profile,)
    met = True
    for profile in profiles:
        met &= report(profile, measure(cases, profile, args.per_kind, args.seed), args.verbose)
    print("\ntargets met" if met else "\ntargets NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
