"""The runtime's stateless verification functions, as a drop-in module.

Code written against ``car_runtime`` runs unchanged on car-verify with::

    import car_verify.runtime as car_runtime

Each function has the runtime's name, parameters and defaults, takes JSON text
and returns JSON text (``equivalent`` a bool, as the runtime's does), with the
answers of the ``car`` profile (docs/semantics.md §9): the runtime's, where it
is deterministic. Rejected input raises ``ValueError`` with the runtime's message
class (``invalid proposal JSON: ...``, ``invalid state JSON: ...``). No compiled
wheel is needed: it runs wherever Python does.

Where car-verify goes beyond the runtime, so does this module: the key order of
the output is fixed (the runtime's varies between processes), and
``simulate_monte_carlo`` gives the exact probabilities where they can be
computed (``car_verify.risk``), the runtime's sampled estimate otherwise.
``verify`` gives the runtime's result, with each issue's ``code`` added; what
car-verify says besides (its ``info`` notes, the profile) is in
:func:`car_verify.verify`, the Python-object API every feature has in the
top-level :mod:`car_verify`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .base.errors import CarVerifyError, InputError

if TYPE_CHECKING:
    from .passes.fused import Fused

__all__ = [
    "analyze_concurrency",
    "analyze_schedule",
    "check_information_flow",
    "check_intent",
    "check_intent_plan",
    "check_plan",
    "check_workflow_policies",
    "enforce_information_flow",
    "enforce_intent",
    "equivalent",
    "evaluate_goal",
    "gate_concurrency",
    "gate_information_flow",
    "gate_intent",
    "optimize",
    "permission_classify",
    "permission_evaluate",
    "rank_proposals",
    "simulate",
    "simulate_monte_carlo",
    "simulate_with_predictions",
    "transaction_check",
    "transaction_check_with_predictions",
    "verify",
    "verify_tool_receipts",
    "verify_workflow",
    "verify_workflow_graph",
]

T = TypeVar("T")
PROFILE: Final = "car"


def _read(text: str | None, what: str, error: type[Exception] = ValueError) -> Any:
    """One JSON argument (None stays None), or ``error`` (ValueError but for
    ``verify_workflow``'s RuntimeError) as the runtime says it."""
    if text is None:
        return None
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"{what} JSON must be a str, not {type(text).__name__}")
    from .ir.model import loads_finite

    try:
        return loads_finite(text if isinstance(text, str) else bytes(text).decode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise error(f"invalid {what} JSON: {err}") from None


def _map(text: str | None, what: str) -> Any:
    """A JSON argument the runtime reads as an object (a state, a version map): any
    other value, ``null`` included, is refused in its reader's words."""
    doc = _read(text, what)
    if text is None or isinstance(doc, dict):
        return doc
    from .semantics.car import rust_debug_str

    source = text if isinstance(text, str) else bytes(text).decode("utf-8")
    body = source.lstrip()
    lead = source[: len(source) - len(body)]
    line = 1 + lead.count("\n")
    start = len(lead) - (lead.rfind("\n") + 1)  # the value's offset in its line
    if isinstance(doc, list):
        kind, column = "sequence", start
    else:
        if doc is None:
            kind = "null"
        elif isinstance(doc, bool):
            kind = f"boolean `{'true' if doc else 'false'}`"
        elif isinstance(doc, int):
            kind = f"integer `{doc}`"
        elif isinstance(doc, float):
            kind = f"floating point `{doc!r}`"
        else:
            kind = f"string {rust_debug_str(str(doc))}"
        column = start + len(body.rstrip())
    raise ValueError(
        f"invalid {what} JSON: invalid type: {kind}, expected a map at line {line} column {column}"
    )


def _proposal(text: str, what: str = "proposal") -> Any:
    """The proposal argument modelled as the runtime models it, first of all the
    arguments (the runtime reads it before the others)."""
    from .ir.model import load
    from .semantics.car import CAR

    doc = _read(text, what)
    with _rejected_as(what):
        model = load(doc)
        CAR.refuse(model)
    return model


@contextlib.contextmanager
def _rejected_as(what: str, error: type[Exception] = ValueError) -> Iterator[None]:
    """car-verify's refusal of a value (an input error) as the runtime's error."""
    try:
        yield
    except CarVerifyError as err:
        raise error(f"invalid {what} JSON: {err}") from None


def _text(doc: Any) -> str:
    """The runtime's JSON text of an answer: compact, and without the ``profile``
    car-verify's own reports name (here it is always ``car``)."""
    if isinstance(doc, dict) and "profile" in doc:
        doc = {k: v for k, v in doc.items() if k != "profile"}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def _answer(what: str, compute: Callable[[], T]) -> T:
    with _rejected_as(what):
        return compute()


# --- proposals -------------------------------------------------------------------------------


def verify(
    proposal_json: str,
    initial_state_json: str | None = None,
    tool_names: list[str] | None = None,
    max_actions: int | None = None,
    tool_schemas_json: str | None = None,
) -> str:
    """``car_runtime.verify``: the verification result."""
    from .api import verify as run
    from .semantics.car import runtime_words

    if tool_names is None and tool_schemas_json is None and type(proposal_json) is str:
        answer = _verify_flat(proposal_json, initial_state_json, max_actions)
        if answer is not None:
            return answer
    proposal = _proposal(proposal_json)
    state = _map(initial_state_json, "state")
    schemas = _read(tool_schemas_json, "tool schemas")
    if schemas is None and tool_names is not None:  # names without schemas: as the runtime,
        from .rules.tools import ToolRegistry  # existence is checked, parameters are not

        schemas = ToolRegistry.of_names(tool_names)
    with runtime_words():  # a failed precondition worded as the runtime words it
        result = _answer(
            "proposal",
            lambda: run(
                proposal,
                tools=schemas,
                initial_state=state,
                max_actions=max_actions,
                profile=PROFILE,
            ),
        )
    from .passes.car import ADDED_CODES

    doc = result.to_dict()
    # The runtime's object: car-verify's own notes (its `info` findings) and its own
    # warning (dependency-overtaken) are car-verify's, in car_verify.verify; `code` is
    # kept, an added field.
    doc["issues"] = [
        i for i in doc["issues"] if i["severity"] != "info" and i["code"] not in ADDED_CODES
    ]
    doc["evidence"].pop("runner")
    return _text(doc)


def _verify_flat(text: str, state_text: str | None, max_actions: int | None) -> str | None:
    """``verify`` of JSON text by the fused kernel (:mod:`car_verify.passes.fused`),
    JSON out without the result's objects (its notes never made); None where the
    kernel does not model the document, and the plain path answers."""
    from .api import _fused
    from .ir.flat import flat_plan_text
    from .semantics.car import CAR, runtime_words

    if max_actions is not None and (type(max_actions) is not int or max_actions < 0):
        return None  # the plain path says what is wrong
    plan = flat_plan_text(text)
    if plan is None or CAR.refuses_flat(plan):
        return None
    state = _map(state_text, "state")  # read after the proposal, as the runtime reads it
    with runtime_words():  # a failed precondition worded as the runtime words it
        result = _answer(
            "proposal", lambda: _fused(plan, PROFILE, state, max_actions, 3, complete=True)
        )
    if result is None:
        return None
    return _answer_text(result._run)  # type: ignore[attr-defined]


def _answer_text(run: Fused) -> str:
    """The runtime's answer as JSON text, written from the kernel's findings: what
    :func:`_text` writes of the result's dictionary without the info findings (its
    plain twin: tests/test_fused.py holds the drop-in's answer to it, byte for
    byte), without making the dictionary, its ``Issue`` objects or its notes. Fixed
    texts (the check records' words, the assumptions) are written once a process."""
    q = _quoted
    ids = run.plan.ids
    quoted = [q(i) for i in ids]
    out = ['{"valid":', "true" if run.errors == 0 else "false", ',"issues":[']
    sep = ""
    for at, severity, message, tier, code in run.issue_fields(added=False):
        out += (
            sep, '{"action_id":', "null" if at is None else q(at), ',"severity":"', severity,
            '","message":', q(message), ',"tier":"', tier, '","code":', q(code), "}",
        )  # fmt: skip
        sep = ","
    out += ('],"simulated_state":', _compact(run.state), ',"execution_levels":[')
    out.append(",".join("[" + ",".join([quoted[i] for i in level]) + "]" for level in run.levels))
    out.append('],"conflicts":[')
    out.append(",".join(f"[{quoted[a]},{quoted[b]},{q(key)}]" for a, b, key in run.conflicts))
    out.append('],"evidence":')
    out.append(_evidence_text(run))
    out.append("}")
    return "".join(out)


def _evidence_text(run: Fused) -> str:
    """The evidence of :func:`_answer_text`, as ``Evidence.to_dict`` has it (but the
    runner): from CAR's evidence in parts, its check records' text made once for
    each way a run can be, the counts put in."""
    from .passes.fused import car_parts, evidence_parts

    parts = car_parts(run)
    if parts is not None:
        checks = _checks_text(parts.rows) % parts.counts
        assumptions: Sequence[str] = parts.assumptions
        untested, risks, score = parts.untested, parts.risks, parts.confidence
    else:  # not CAR's summary alone: from the records (a run of the drop-in has it)
        records, assumptions, untested, risks, found = evidence_parts(run)
        checks = ",".join(
            _checks_text(((c.name, c.ran, c.verifies, c.cannot_verify, c.tier, c.reason),))
            % (c.findings,)
            for c in records
        )
        score = found if found is not None else (
            sum(1 for c in records if c.ran) / len(records) if records else 0.0
        )  # fmt: skip
    return "".join(
        (
            '{"checks":[', checks, '],"assumptions":[', ",".join(map(_fixed_text, assumptions)),
            '],"untested_regions":[', ",".join(map(_quoted, untested)),
            '],"residual_risks":[', ",".join(map(_quoted, risks)),
            '],"confidence":', repr(float(score)), "}",
        )
    )  # fmt: skip


def _checks_text(rows: tuple[tuple[str, bool, str, str, Any, str | None], ...]) -> str:
    """Check records' JSON text, comma-separated, with ``%d`` in the place of each
    count (one text for each of the few ways a run can be). CAR's rows are one
    object for each way (:func:`~car_verify.passes.car.car_evidence_parts` keeps
    them), so they are known by identity first, without hashing them."""
    known = _CHECKS_TEXTS.get(id(rows))
    if known is not None and known[0] is rows:
        return known[1]
    text = _rows_text(rows)
    if len(_CHECKS_TEXTS) >= 256:
        _CHECKS_TEXTS.clear()
    _CHECKS_TEXTS[id(rows)] = (rows, text)  # the rows held: their id is not reused
    return text


#: :func:`_checks_text`'s texts by the id of their rows (with the rows).
_CHECKS_TEXTS: dict[int, tuple[tuple[Any, ...], str]] = {}


@functools.lru_cache(maxsize=256)
def _rows_text(rows: tuple[tuple[str, bool, str, str, Any, str | None], ...]) -> str:
    texts = []
    for name, ran, verifies, cannot_verify, tier, reason in rows:
        head = _compact({"name": name, "ran": ran, "verifies": verifies,
                         "cannot_verify": cannot_verify, "findings": 0})  # fmt: skip
        tail = _compact({"tier": tier.value, **({} if reason is None else {"reason": reason})})
        texts.append(head[: -len("0}")].replace("%", "%%") + "%d," + tail[1:].replace("%", "%%"))
    return ",".join(texts)


@functools.lru_cache(maxsize=512)
def _fixed_text(text: str) -> str:
    """A string of the evidence that is one of a few (an assumption), as JSON."""
    return _quoted(text)


#: JSON text as the runtime's answer has it (compact, not ASCII-escaped): a string,
#: and any value.
_quoted = encode_basestring
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def simulate(proposal_json: str, initial_state_json: str | None = None) -> str:
    """``car_runtime.simulate``: the end state."""
    from .api import simulate as run

    proposal = _proposal(proposal_json)
    state = _map(initial_state_json, "state")
    end = _answer("proposal", lambda: run(proposal, initial_state=state, profile=PROFILE))
    return _text(end.to_dict())


def optimize(proposal_json: str) -> str:
    """``car_runtime.optimize``: the proposal with its phantom dependencies removed."""
    from .deciders.optimize import optimize as run

    proposal = _proposal(proposal_json)
    result = _answer("proposal", lambda: run(proposal, profile=PROFILE))
    doc = result.proposal.to_dict()
    for action in doc["actions"]:  # not in the runtime's IR: written only when given
        if not action.get("dependencies"):
            action.pop("dependencies", None)
    return _text(doc)


def equivalent(p1_json: str, p2_json: str) -> bool:
    """``car_runtime.equivalent``: the two proposals' end states agree on the
    runtime's probe states (sampled, as the runtime compares them)."""
    from .deciders.equivalence import equivalent as run

    first, second = _proposal(p1_json, "proposal1"), _proposal(p2_json, "proposal2")
    result = _answer(
        "proposal",
        lambda: run(first, second, method="sampled", profile=PROFILE, probe_constants=False),
    )
    return result.no_difference_found  # the runtime's True: no difference on its probes


def transaction_check(
    proposal_json: str, versions_json: str | None = None, state_json: str | None = None
) -> str:
    """``car_runtime.transaction_check``: the proposal's transactional conflicts."""
    from .deciders.transactions import transaction_check as run

    proposal = _proposal(proposal_json)
    versions, state = _map(versions_json, "versions"), _map(state_json, "state")
    report = _answer(
        "proposal", lambda: run(proposal, versions=versions, state=state, profile=PROFILE)
    )
    return _text(report.runtime_answer())


def simulate_monte_carlo(
    proposal_json: str,
    initial_state_json: str | None = None,
    tool_success_rates_json: str | None = None,
    goal_json: str | None = None,
    config_json: str | None = None,
) -> str:
    """``car_runtime.simulate_monte_carlo``: the chance of each outcome when tools
    fail (exact where it can be computed; see the module docs)."""
    from .plan.risk import risk

    proposal = _proposal(proposal_json)
    state = _map(initial_state_json, "state")
    rates = _read(tool_success_rates_json, "tool success rates")
    goal = _read(goal_json, "goal")
    config = _read(config_json, "monte carlo config")
    result = _answer(
        "proposal", lambda: risk(proposal, state, rates, goal, config, profile=PROFILE)
    )
    doc = result.to_dict()
    for extra in _RISK_EXTRAS:  # car-verify's own, in car_verify.risk's result
        doc.pop(extra, None)
    return _text(doc)


#: What ``car_verify.risk`` says beyond the runtime's ``simulate_monte_carlo``.
_RISK_EXTRAS = (
    "rate_provenance",
    "method",
    "tier",
    "reason",
    "intervals",
    "critical_actions",
    "sensitivity",
)


# --- permissions -----------------------------------------------------------------------------


def permission_classify(proposal_json: str) -> str:
    """``car_runtime.permission_classify``: each action's tier and reversibility."""
    from .plan.permissions import permission_classify as run

    proposal = _proposal(proposal_json)
    report = _answer("proposal", lambda: run(proposal))
    return _text([row.to_dict() for row in report.classifications])


def permission_evaluate(
    proposal_json: str, granted_tier: str, ledger_path: str | None = None
) -> str:
    """``car_runtime.permission_evaluate``: each action's decision at a standing tier."""
    from .plan.permissions import TIERS
    from .plan.permissions import permission_evaluate as run

    proposal = _proposal(proposal_json)
    if granted_tier not in TIERS:
        raise ValueError(f"invalid tier {granted_tier!r} (expected {'|'.join(TIERS)})")
    decisions = _answer("proposal", lambda: run(proposal, granted_tier, ledger_path))
    return _text([d.to_dict() for d in decisions])


# --- information flow and intent -------------------------------------------------------------


def check_information_flow(
    proposal_json: str, labels_json: str, policy_json: str | None = None
) -> str:
    """``car_runtime.check_information_flow``: the plan's information-flow report."""
    from .plan.flow import check_information_flow as run

    proposal = _proposal(proposal_json)
    labels, policy = _read(labels_json, "labels"), _read(policy_json, "policy")
    report = _answer("proposal", lambda: run(proposal, labels, policy, profile=PROFILE))
    return _text(report.to_dict())


def gate_information_flow(report_json: str, gate_policy_json: str | None = None) -> str:
    """``car_runtime.gate_information_flow``: the report's enforcement decision."""
    from .plan.flow import gate_information_flow as run

    report, policy = _read(report_json, "report"), _read(gate_policy_json, "gate policy")
    return _text(_answer("report", lambda: run(report, policy)).to_dict())


def enforce_information_flow(decision_json: str, approvals_json: str | None = None) -> str:
    """``car_runtime.enforce_information_flow``: the decision settled by approvals."""
    from .plan.flow import enforce_information_flow as run

    decision, approvals = _read(decision_json, "decision"), _read(approvals_json, "approvals")
    return _text(_answer("decision", lambda: run(decision, approvals)).to_dict())


def check_intent(request_json: str) -> str:
    """``car_runtime.check_intent``: does each call stay inside the intent."""
    from .plan.intent import check_intent as run

    request = _read(request_json, "request")
    return _text(_answer("request", lambda: run(request)).to_dict())


def check_intent_plan(request_json: str) -> str:
    """``car_runtime.check_intent_plan``: the intent check over a plan's actions."""
    from .plan.intent import check_intent_plan as run

    request = _read(request_json, "request")
    return _text(_answer("request", lambda: run(request, profile=PROFILE)).to_dict())


def gate_intent(report_json: str, gate_policy_json: str | None = None) -> str:
    """``car_runtime.gate_intent``: the intent report's disposition."""
    from .plan.intent import gate_intent as run

    report, policy = _read(report_json, "report"), _read(gate_policy_json, "gate policy")
    return _text(_answer("report", lambda: run(report, policy)).to_dict())


def enforce_intent(decision_json: str, approvals_json: str | None = None) -> str:
    """``car_runtime.enforce_intent``: the intent decision settled by approvals."""
    from .plan.intent import enforce_intent as run

    decision, approvals = _read(decision_json, "decision"), _read(approvals_json, "approvals")
    return _text(_answer("decision", lambda: run(decision, approvals)).to_dict())


# --- agents, workflows, plans, claims --------------------------------------------------------


def analyze_concurrency(ops_json: str) -> str:
    """``car_runtime.analyze_concurrency``: the schedule's concurrency anomalies."""
    from .plan.concurrency import analyze_concurrency as run

    ops = _read(ops_json, "ops")
    return _text(_answer("ops", lambda: run(ops, profile=PROFILE)).to_dict())


def gate_concurrency(report_json: str, policy_json: str | None = None) -> str:
    """``car_runtime.gate_concurrency``: each anomaly's remediation and disposition."""
    from .plan.concurrency import gate_concurrency as run

    report, policy = _read(report_json, "report"), _read(policy_json, "policy")
    return _text(_answer("report", lambda: run(report, policy)).to_dict())


def verify_workflow_graph(graph_json: str) -> str:
    """``car_runtime.verify_workflow_graph``: a workflow graph's structural defects."""
    from .deciders.workflow import verify_workflow_graph as run

    graph = _read(graph_json, "graph")
    return _text(_answer("graph", lambda: run(graph)).to_dict())


def check_workflow_policies(graph_json: str, policies_json: str) -> str:
    """``car_runtime.check_workflow_policies``: temporal policies over a workflow graph."""
    from .deciders.workflow import check_workflow_policies as run

    graph, policies = _read(graph_json, "graph"), _read(policies_json, "policies")
    return _text(_answer("graph", lambda: run(graph, policies)).to_dict())


def verify_workflow(workflow_json: str) -> str:
    """``car_runtime.verify_workflow``: the static check of a workflow definition."""
    from .deciders.workflow import verify_workflow as run
    from .semantics.car import runtime_words

    workflow = _read(workflow_json, "workflow", RuntimeError)  # the runtime's own type here
    # a nested proposal's errors are quoted as the runtime words them
    with _rejected_as("workflow", RuntimeError), runtime_words():
        return _text(run(workflow).to_dict(runtime=True))


def check_plan(request_json: str) -> str:
    """``car_runtime.check_plan``: a plan's sequential feasibility."""
    from .plan.claims import check_plan as run

    request = _read(request_json, "request")
    return _text(_answer("request", lambda: run(request)).to_dict())


def evaluate_goal(request_json: str) -> str:
    """``car_runtime.evaluate_goal``: a goal condition's verdict on gathered inputs."""
    from .plan.claims import evaluate_goal as run

    request = _read(request_json, "request")
    return _text(_answer("request", lambda: run(request, profile=PROFILE)).to_dict())


def verify_tool_receipts(claims_json: str, receipts_json: str, window_complete: bool = True) -> str:
    """``car_runtime.verify_tool_receipts``: a model's claims against the receipts."""
    from .plan.claims import verify_tool_receipts as run

    claims, receipts = _read(claims_json, "claims"), _read(receipts_json, "receipts")
    return _text(_answer("claims", lambda: run(claims, receipts, window_complete)).to_dict())


def analyze_schedule(graph_json: str) -> str:
    """``car_runtime.analyze_schedule``: a static execution DAG's critical path,
    makespan, parallelism, levels, the serial pathology and cycles."""
    from .plan.schedule_analysis import analyze_schedule as run

    graph = _read(graph_json, "graph")
    return _text(_answer("graph", lambda: run(graph)).to_dict())


def simulate_with_predictions(
    proposal_json: str,
    predictions_json: str,
    min_accuracy: float,
    initial_state_json: str | None = None,
) -> str:
    """``car_runtime.simulate_with_predictions``: the end state when each action
    does what a model predicts, where the prediction is accurate enough."""
    from .deciders.predictions import simulate_with_predictions as run

    proposal = _proposal(proposal_json)
    predictions = _read(predictions_json, "predictions")
    state = _map(initial_state_json, "initial_state")
    return _text(_answer("predictions", lambda: run(proposal, predictions, min_accuracy, state)))


def transaction_check_with_predictions(
    proposal_json: str,
    predictions_json: str,
    versions_json: str | None = None,
    state_json: str | None = None,
) -> str:
    """``car_runtime.transaction_check_with_predictions``: transactional conflicts,
    each action's write set with the keys a model predicts it writes."""
    from .deciders.predictions import transaction_check_with_predictions as run

    proposal = _proposal(proposal_json)
    predictions = _read(predictions_json, "predictions")
    versions, state = _map(versions_json, "versions"), _map(state_json, "state")
    report = _answer("predictions", lambda: run(proposal, predictions, versions, state))
    return _text(report.runtime_answer())


def rank_proposals(
    candidates_json: str, tools: list[str] | None = None, cost_weight: float | None = None
) -> str:
    """``car_runtime.rank_proposals``: candidate proposals scored and ranked, best
    first. ``tools`` is a list of tool names (not JSON text), as the runtime takes it."""
    from .deciders.ranking import rank_proposals as run

    if tools is not None and (isinstance(tools, str) or not isinstance(tools, list)):
        raise TypeError(f"argument 'tools': expected a list of str, not {type(tools).__name__}")
    if cost_weight is not None and (
        isinstance(cost_weight, bool) or not isinstance(cost_weight, (int, float))
    ):
        raise TypeError(
            f"argument 'cost_weight': expected a float, not {type(cost_weight).__name__}"
        )
    candidates = _read(candidates_json, "candidates")
    if not isinstance(candidates, list):
        kind = "map" if isinstance(candidates, dict) else type(candidates).__name__
        raise ValueError(f"invalid type: {kind}, expected a sequence")
    try:
        ranked = run(candidates, tools, cost_weight)
    except InputError as err:
        unknown = _unknown_variant(err, candidates, candidates_json)
        raise ValueError(unknown or f"invalid candidates JSON: {err}") from None
    except CarVerifyError as err:
        raise ValueError(f"invalid candidates JSON: {err}") from None
    return _text([scored.to_dict() for scored in ranked])


#: The action types in the order the runtime's error message lists them.
_ACTION_TYPES = ("tool_call", "state_write", "state_read", "assertion")


def _unknown_variant(err: InputError, candidates: list[Any], text: str | bytes) -> str | None:
    """The runtime's message when the first refusal in the candidates' text is an
    unknown action type: it reads the text as proposals, so the error is its
    reader's, at the line and (byte) column where the type's string ends. None when
    car-verify's refusal ``err`` comes first in the text, or is of a candidate
    without an unknown type."""
    if not err.path or not isinstance(err.path[0], int):
        return None
    index = err.path[0]
    actions = candidates[index].get("actions") if isinstance(candidates[index], dict) else None
    unknown = next(
        (
            (position, action["type"])
            for position, action in enumerate(actions if isinstance(actions, list) else [])
            if isinstance(action, dict)
            and isinstance(action.get("type"), str)
            and action["type"] not in _ACTION_TYPES
        ),
        None,
    )
    if unknown is None:
        return None
    from .base.errors import json_pointer
    from .base.locate import json_positions

    position, kind = unknown
    source = text if isinstance(text, str) else bytes(text).decode("utf-8")
    where = json_positions(source, depth=max(4, len(err.path)))
    at = where.get(f"/{index}/actions/{position}/type")
    refused = where.get(json_pointer(err.path))
    if at is None or (refused is not None and refused < at):
        return None
    line, column = at
    row = source.split("\n")[line - 1]
    token = re.match(r'"(?:[^"\\]|\\.)*"', row[column - 1 :])
    if token is None:
        return None
    end = len(row[: column - 1 + len(token.group())].encode("utf-8"))
    expected = ", ".join(f"`{name}`" for name in _ACTION_TYPES)
    return f"unknown variant `{kind}`, expected one of {expected} at line {line} column {end}"
