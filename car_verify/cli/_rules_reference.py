"""The rule kinds' reference (``docs/rules.md``) and the tables of ``docs/policies.md``
that come from code, generated from the kinds themselves.

Each kind's module docstring is its documentation and each kind carries its own
examples (:mod:`car_verify.rules.kinds`): this module runs every example through
the gate (:func:`run_example`, which ``tests/test_rule_kinds.py`` runs too) and
renders the answers and reasons the gate really gives, so the reference cannot
drift from the code. The table of each face's answer to an undecided rule comes
from :data:`car_verify.plan.gate.FACES`. ``scripts/gen_docs.py`` writes them; a
test fails when they are stale.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Sequence
from typing import Any

from ..plan.gate import FACES, CallGate, Verdict
from ..rules.kinds import KINDS, Example, Kind, Step
from ..rules.kinds.registered import EXAMPLE_CALLBACK, EXAMPLE_CALLBACK_TEXT
from ..rules.policy import PolicyEngine, PolicySet, load_policy_text

__all__ = [
    "answer_of",
    "render_faces_table",
    "render_kinds_table",
    "render_rules_reference",
    "run_example",
    "update_policies_page",
]

_SECTION = re.compile(r"^(What it decides|Undecided|In policy diff):\s*$")


def run_example(example: Example) -> list[tuple[Step, Verdict]]:
    """Each step of ``example`` decided by a gate over its rules (an undecided rule
    refused, as every face but the hook refuses it), in order: an admitted call's
    outcome, when the step gives one, is reported before the next call."""
    rules = load_policy_text(example.policy, source="rules.toml") if example.policy else PolicySet()
    engine = PolicyEngine(rules)
    for name, kind, *rest in example.registered:
        if kind == "deny_tool_callback":
            engine.register_callback(name, EXAMPLE_CALLBACK, *rest)
        else:
            engine.register_policy(name, kind, *rest)
    gate = CallGate(engine, on_unknown="deny")
    out = []
    for step in example.steps:
        verdict = gate.decide(step.tool, step.params, step.state)
        if verdict.decision != "deny" and step.outcome is not None:
            gate.report(step.tool, step.params, step.outcome)
        out.append((step, verdict))
    return out


def answer_of(verdict: Verdict) -> str:
    """The rules' answer behind a verdict: ``deny`` (a rule denies), ``undecided``
    (none denies, one cannot decide), else ``allow``."""
    return "deny" if verdict.denied else "undecided" if verdict.undecided else "allow"


# --- the reference page --------------------------------------------------------------------------


def _sections(doc: str) -> tuple[str, dict[str, str]]:
    lines = doc.strip().splitlines()
    title = lines[0].strip()
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[1:]:
        match = _SECTION.match(line.strip())
        if match:
            current = sections.setdefault(match.group(1), [])
        elif current is not None:
            current.append(line.strip())
    return title, {k: _paragraphs(v) for k, v in sections.items()}


def _paragraphs(lines: Sequence[str]) -> str:
    """Lines joined into paragraphs (a blank line between them)."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line:
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return "\n\n".join(" ".join(p) for p in out if p)


def _call(step: Step) -> str:
    params = json.dumps(dict(step.params), ensure_ascii=False)
    text = f"{step.tool}({params})"
    if step.state is not None:
        text += f" with state {json.dumps(dict(step.state))}"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _example(example: Example) -> list[str]:
    out = [f"**Example: {example.title}**", ""]
    if example.policy:
        out += ["```toml", example.policy.rstrip(), "```"]
    else:
        out += ["```python"]
        for name, kind, *rest in example.registered:
            if kind == "deny_tool_callback":
                target = f", {rest[0]!r}" if rest else ""
                out.append(f"engine.register_callback({name!r}, {EXAMPLE_CALLBACK_TEXT}{target})")
            else:
                args = ", ".join(repr(a) for a in (name, kind, *rest))
                out.append(f"engine.register_policy({args})")
        out += ["```"]
    out += ["", "| call, in order | answer | what the gate says |", "|---|---|---|"]
    for step, verdict in run_example(example):
        call = _call(step)
        if step.outcome and verdict.decision != "deny":
            call += f", then {step.outcome}"
        said = f"`{_cell(verdict.reason())}`" if verdict.reason() else ""
        out.append(f"| `{_cell(call)}` | {answer_of(verdict)} | {said} |")
    return [*out, ""]


def _keys(kind: Kind[Any]) -> list[str]:
    if not kind.keys:
        return [f'An array of strings: `{kind.key} = ["{kind.sample}"]`.', ""]
    out = [f"`[[{kind.key}]]`, one table per rule:", "", "| key | type | meaning |",
           "|---|---|---|"]  # fmt: skip
    for key in kind.keys:
        needed = "required" if key.required else f"optional (default {key.default})" if (
            key.default) else "optional"  # fmt: skip
        out.append(f"| `{key.name}` | {key.type_name()}, {needed} | {key.meaning} |")
    return [*out, ""]


def _kind_section(kind: Kind[Any]) -> list[str]:
    module = importlib.import_module(type(kind).__module__)
    title, sections = _sections(module.__doc__ or "")
    title = title.removeprefix(f"{kind.key}: ")
    out = [f'<a id="{kind.key}"></a>', f"## `{kind.key}`", "", f"*Denies {title}*", ""]
    out += _keys(kind)
    out += [f"Each rule is named `{kind.name_form}`.", ""]
    for name in ("What it decides", "Undecided", "In policy diff"):
        out += [f"**{name}.** {sections.get(name, '')}", ""]
    for example in kind.examples:
        out += _example(example)
    return out


def _registered_section(kinds: Sequence[Kind[Any]]) -> list[str]:
    module = importlib.import_module(type(kinds[0]).__module__)
    doc = (module.__doc__ or "").strip().splitlines()
    out = ['<a id="registered"></a>', "## Registered rules", "", f"*{doc[0]}*", ""]
    out += [_paragraphs([line.strip() for line in doc[1:]]).replace("``", "`"), ""]
    out += ["Each is named by the name it was registered with; their reasons are the "
            "runtime's own.", ""]  # fmt: skip
    for kind in kinds:
        out += [f'<a id="registered-{kind.key}"></a>', f"### `{kind.key}`", "",
                f"Denies {kind.summary}.", ""]  # fmt: skip
        for example in kind.examples:
            out += _example(example)
    return out


def render_kinds_table() -> str:
    """The table of the file kinds (``docs/policies.md`` shows it)."""
    out = ["| key | rule name | denies |", "|---|---|---|"]
    for kind in KINDS:
        if not kind.registered:
            out.append(f"| [`{kind.key}`](rules.md#{kind.key}) | `{kind.name_form}` "
                       f"| {kind.summary} |")  # fmt: skip
    return "\n".join(out) + "\n"


def render_faces_table() -> str:
    """The table of each face's answer to a rule it cannot decide (``docs/policies.md``
    shows it)."""
    out = ["| face | where | undecided is answered | so that |", "|---|---|---|---|"]
    for face in FACES:
        out.append(f"| {face.key} | {face.where} | **{face.undecided}** | {face.why} |")
    return "\n".join(out) + "\n"


def render_rules_reference() -> str:
    """The Markdown text of ``docs/rules.md``."""
    out = [
        "# Rule kinds",
        "",
        "<!-- Generated by scripts/gen_docs.py from car_verify/rules/kinds; do not edit. -->",
        "",
        "Every kind of rule is one module of `car_verify/rules/kinds/`: its keys in a",
        "policy file (read strictly: an unknown key or a wrong type fails the load, naming",
        "the file and the key), its decision on a call (`allow`, `deny`, or `undecided`:",
        "what each face answers then is the table in [policies.md](policies.md#undecided)),",
        "the parameters it reads, and its model for `policy diff`. The engine asks the",
        "rules of a call's tool in the order below; trace rules come last, for a call the",
        "others allow. The examples below are run through the gate when this page is",
        "generated (and by `tests/test_rule_kinds.py`): the answers and the reasons are",
        "the gate's own. A reason names the rule and says what would satisfy it, never a",
        "literal of the rule nor a value of the call.",
        "",
        render_kinds_table().rstrip(),
        "| [registered](#registered) | the name it was registered with | "
        "`register_policy(...)` in code |",
        "",
    ]
    for kind in KINDS:
        if not kind.registered:
            out += _kind_section(kind)
    out += _registered_section([k for k in KINDS if k.registered])
    return "\n".join(out).rstrip() + "\n"


_REGION = re.compile(r"(<!-- (\w+):begin[^>]*-->\n)(.*?)(<!-- \2:end -->)", re.S)


def update_policies_page(text: str) -> str:
    """``docs/policies.md`` with its generated tables rendered anew (each between
    ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``)."""
    tables = {"kinds": render_kinds_table, "faces": render_faces_table}

    def one(match: re.Match[str]) -> str:
        render = tables[match.group(2)]
        return f"{match.group(1)}{render()}{match.group(4)}"

    return _REGION.sub(one, text)
