"""Policies: the actions obey the project's policy rules, including trace rules.

What it checks:
    With policies (``verify(policies=...)``, ``--policies DIR``, or the nearest
    ``.car/policies``), every action against every rule, reporting each
    violation with the rule's stable name as its code (``deny_tool:deploy``,
    ``allow_tool_param:deploy.target``, ``trace_rule:<name>``, ...). Actions are
    taken in dispatch order (level by level). ``require_state`` is checked
    against the walk's state when the action's level begins; a
    ``rate_limit_tool`` window is assumed to hold the whole run. Each
    ``trace_rule`` is checked against **every** order the DAG allows; a
    violating schedule is reported as a counterexample. A ``tool`` compensation
    is checked as the call the rollback would make. A content rule on a
    parameter whose value is another action's output (``$id.output``) cannot be
    decided before the run: ``policy-undecided`` says so (the executor checks the
    parameter as sent). Past the exploration
    budget the pass reports, with tier ``sampled``, how much it explored.

Why it matters:
    A policy is the project's own statement of what an agent may never do. A
    plan that breaks one will be refused at run time, part-way through; better
    to know before it starts.

How to fix:
    Change the plan (drop the call, change the parameter, order the actions so
    the trace rule holds in every schedule), or, if the rule is wrong, the rule.

Why this tier:
    ``decision_procedure``: each rule is decided over the declared actions, and
    trace rules over every schedule. ``sampled`` only when the schedule
    exploration ran out of budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from car_verify.base.findings import Issue, Severity, Tier
from car_verify.passes import Context, Example, Pass, Requirement


class PolicyPass(Pass):
    name = "policies"
    tier = Tier.DECISION_PROCEDURE
    codes = ("policy-undecided", "compensation-denied")
    dynamic_codes = True
    default = False
    when_given = Requirement.POLICIES  # runs by default whenever policies are given
    requires = frozenset({Requirement.POLICIES})
    verifies = "every action obeys the policy rules; trace rules hold in every schedule"
    cannot_verify = "rate limits across runs, and rules registered only at run time"
    examples = (
        Example(
            "tests run before the deploy in every schedule",
            {
                "actions": [
                    {"id": "test", "type": "tool_call", "tool": "run_tests"},
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"target": "staging"},
                        "dependencies": ["test"],
                    },
                ]
            },
            policies='deny_tool = ["rm"]\n[[trace_rule]]\nname = "tested"\n'
            'rule = "deploy only after run_tests succeeded"\n',
        ),
        Example(
            "a keyword rule on a parameter that is another action's output",
            {
                "actions": [
                    {"id": "read", "type": "tool_call", "tool": "read_note"},
                    {
                        "id": "send",
                        "type": "tool_call",
                        "tool": "post",
                        "parameters": {"body": "$read.output.text"},
                    },
                ]
            },
            ("policy-undecided",),
            policies='deny_keyword = ["DROP TABLE"]\n',
        ),
        Example(
            "a denied tool",
            {"actions": [{"id": "wipe", "type": "tool_call", "tool": "rm"}]},
            ("deny_tool:rm",),
            policies='deny_tool = ["rm"]\n',
        ),
        Example(
            "an invite the rules allow, whose compensation they deny",
            {
                "actions": [
                    {
                        "id": "invite",
                        "type": "tool_call",
                        "tool": "invite_user",
                        "reversibility": "compensable",
                        "compensation": {"type": "tool", "tool": "remove_user"},
                    }
                ]
            },
            ("compensation-denied",),
            policies='deny_tool = ["remove_user"]\n',
        ),
        Example(
            "a deploy that some schedule runs before the tests",
            {
                "actions": [
                    {"id": "test", "type": "tool_call", "tool": "run_tests"},
                    {"id": "deploy", "type": "tool_call", "tool": "deploy"},
                ]
            },
            ("trace_rule:tested",),
            policies='[[trace_rule]]\nname = "tested"\n'
            'rule = "deploy only after run_tests succeeded"\n',
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        return findings(ctx)


def findings(ctx: Context, *, shortcuts: bool = True) -> Iterator[Issue]:
    """The pass's findings on ``ctx``. ``shortcuts``: leave out the work that can
    find nothing (the per-call round when only trace rules are given, the output
    references when no rule reads a parameter); ``False`` does all of it, the plain
    version the tests compare with (``tests/test_policy_pass_shortcuts.py``)."""
    from car_verify.plan.gate import UNDECIDED, CallGate
    from car_verify.rules.policy import PolicyEngine, PolicySet
    from car_verify.rules.trace import check_schedules

    given = ctx.policies
    rules = given.rules
    trace_rules = list(rules.trace_rule)
    # A gate with no rule of one call allows every call and says nothing (a set of
    # trace rules only): the round of calls is left out.
    per_call = not shortcuts or bool(given.registered) or _has_call_rules(rules)
    # The parameters that are another action's output, by action: read by the
    # content rules of one call and by the trace rules that test a parameter.
    reads_params = per_call or any(_tests(rule) for rule in trace_rules)
    referenced = _referenced_params(ctx) if not shortcuts or reads_params else {}
    actions = ctx.proposal.actions
    found: list[Issue] = []
    if per_call:
        # Each call is asked of the run-time gate, with the rules of one call (the
        # trace rules are checked below over every schedule, not in one order).
        one_call = PolicySet()
        one_call.extend(rules)
        one_call.trace_rule = []
        # A fresh engine with the same rules: the static check must not use up the
        # caller's rate-limit windows. Every call lands in one window (time 0).
        calls = PolicyEngine(one_call, clock=lambda: 0.0)
        calls.registered = list(given.registered)
        gate = CallGate(calls, on_unknown=UNDECIDED["policy check"])
        for i, state in ctx.walk.action_states():  # the state at each action's turn
            action = actions[i]
            if action.type != "tool_call" or action.tool is None:
                continue
            verdict = gate.decide(action.tool, action.parameters, state, action=action)
            for objection in verdict.objections:
                found.append(
                    ctx.issue(
                        objection.rule,
                        objection.reason,
                        index=i,
                        severity=Severity.ERROR,
                        tier=Tier.DECISION_PROCEDURE,
                    )
                )
            found.extend(_undecided(ctx, given, i, referenced.get(i, set())))
    found.extend(_compensations(ctx, given))
    yield from found
    if not trace_rules:
        return
    for result in check_schedules(
        ctx.proposal,
        trace_rules,
        budget=ctx.options.trace_budget,
        dag=ctx.dag,
        schedules=ctx.options.schedules,
    ):
        rule = result.rule
        # A test on a parameter that is another action's output is decided at
        # dispatch, never on the reference's own text.
        open_ = _undecided_trace(ctx, rule, referenced)
        yield from open_.values()
        undecided_ids = {actions[i].id for i in open_}
        # A violation whose counterexample passes an undecided call rests on a test
        # that is not decided (said above); another schedule may break the rule all
        # the same, whatever the call sends: looked for once more without them.
        definite = [v for v in result.violations if not undecided_ids & {v.action_id, *v.schedule}]
        resting = {v.action_id for v in result.violations} - {v.action_id for v in definite}
        if resting:
            definite += _without_undecided(ctx, rule, open_, resting)
        for found_one in definite:  # every action that breaks it
            yield ctx.issue(
                rule.policy_name,
                f"the schedule {found_one.describe()} breaks the trace rule "
                f"{rule.text!r}: {found_one.violation.reason}",
                index=ctx.dag.positions[found_one.action_id][0],
                severity=Severity.ERROR,
                tier=Tier.DECISION_PROCEDURE,
            )
        if not result.complete:
            more = " more" if result.violations else ""
            spent = (
                f"explored {result.explored} schedule states"
                if result.explored
                else "not checked: the earlier rules spent the run's schedule budget"
            )
            yield ctx.issue(
                rule.policy_name,
                f"trace rule {rule.text!r}: {spent} (one budget of "
                f"{ctx.options.trace_budget:,} for all the rules) without finding{more} "
                "a violation; not every schedule was checked",
                severity=Severity.WARNING,
                tier=Tier.SAMPLED,
            )


def _without_undecided(
    ctx: Context, rule: Any, open_: dict[int, Issue], resting: set[str]
) -> list[Any]:
    """The violations of ``rule`` by the actions of ``resting`` (whose one
    counterexample passed an undecided call of ``open_``) that hold whatever the
    undecided calls turn out to send.

    The rule is checked again with those calls taken as calls it does not match
    (``unseen``: sent, failing or not, as any call; a value that fails one of the
    rule's tests is one they may send). That only removes violations of ``never``,
    ``never ... after`` and ``at most`` rules (a call that is neither the rule's own
    nor its event counts for nothing), and of ``only after`` rules when none of
    them can be the event (one that can might open the way). In that case nothing
    more is said here: the ``policy-undecided`` warnings stand for the rule."""
    from car_verify.rules.trace import check_schedules

    actions = ctx.proposal.actions
    event = rule.event
    if rule.kind == "only_after" and any(
        event.tool is None or actions[i].tool == event.tool for i in open_
    ):
        return []
    [again] = check_schedules(
        ctx.proposal,
        [rule],
        budget=ctx.options.trace_budget,
        dag=ctx.dag,
        schedules=ctx.options.schedules,
        unseen=open_,
    )
    return [v for v in again.violations if v.action_id in resting]


def _has_call_rules(rules: Any) -> bool:
    """Whether a policy set holds a rule of one call (any kind the gate asks call by
    call, not over the trace)."""
    return any(items and kind.stage == "call" for kind, items in rules.kinds())


def _tests(rule: Any) -> bool:
    """Whether a trace rule tests a parameter (of its call or of its event)."""
    return any(c is not None and c.tests for c in (rule.call, rule.event))


def _referenced_params(ctx: Context) -> dict[int, set[str]]:
    """Per tool call, the top-level parameters whose value is (or holds) another
    action's output."""
    out: dict[int, set[str]] = {}
    for i, action in enumerate(ctx.proposal.actions):
        if action.type == "tool_call" and action.tool is not None:
            params = {str(r.pointer[1]) for r in action.output_refs() if len(r.pointer) > 1}
            if params:
                out[i] = params
    return out


def _undecided_trace(ctx: Context, rule: Any, referenced: dict[int, set[str]]) -> dict[int, Issue]:
    """A ``policy-undecided`` warning for each call whose referenced parameter the
    rule's tests read, by action position."""
    found: dict[int, Issue] = {}
    for i, params in referenced.items():
        tool = ctx.proposal.actions[i].tool
        assert tool is not None
        read = sorted(rule.reads(tool) & params)
        if read:
            names = ", ".join(repr(p) for p in read)
            found[i] = ctx.issue(
                "policy-undecided",
                f"rule {rule.policy_name} cannot be decided before run time: parameter "
                f"{names} is another action's output (the executor checks it as sent)",
                index=i,
                where=["parameters", read[0]],
            )
    return found


def _compensations(ctx: Context, given: Any) -> Iterator[Issue]:
    """A tool compensation is a call the rollback can make: the same rules decide it,
    asked of a fresh engine over them (the static check uses up none of the
    caller's rate-limit windows; every call lands in one window, time 0), made at
    the first tool compensation."""
    from car_verify.ir.model import Action, ToolCompensation
    from car_verify.rules.policy import PolicyEngine

    engine = None
    for index, action in enumerate(ctx.proposal.actions):
        comp = action.compensation
        if not isinstance(comp, ToolCompensation):
            continue
        if engine is None:
            engine = PolicyEngine(given.rules, clock=lambda: 0.0)
            engine.registered = list(given.registered)
        call = Action(id=action.id, type="tool_call", tool=comp.tool, parameters=comp.parameters)
        # Not a violation by the forward call (which the rules allow): the action cannot
        # be rolled back under these rules, said as a finding of its own.
        denials = [(v.policy_name, v.reason) for v in engine.check(call, None)]
        # A trace rule that refuses the call whatever ran before (``never``, ``at most
        # 0``) refuses the rollback's call too; the others depend on the run's history.
        always = [
            r
            for r in given.rules.trace_rule
            if r.kind == "never" or (r.kind == "at_most" and r.limit == 0)
        ]
        if always:
            from car_verify.rules.trace import TraceGate

            refused = TraceGate(always).check(comp.tool, comp.parameters)
            denials += [(t.policy_name, t.reason) for t in refused]
        for name, reason in denials:
            yield ctx.issue(
                "compensation-denied",
                f"cannot be undone under these policies: its compensation {comp.tool!r} is "
                f"denied by {name} ({reason})",
                index=index,
                where=["compensation"],
            )


def _undecided(ctx: Context, given: Any, index: int, referenced: set[str]) -> Iterator[Issue]:
    """Content rules cannot be decided for a parameter whose value is another action's
    output (``referenced``: those of action ``index``): name each rule of one call
    of the action's tool that reads the parameter (each kind says which it reads:
    every ``deny_keyword`` and callback reads them all), registered ones included;
    the executor checks them at dispatch."""
    from car_verify.rules.kinds import REGISTERED

    if not referenced:
        return
    tool = ctx.proposal.actions[index].tool
    rules = [
        (kind, rule, kind.rule_name(rule, n))
        for kind, items in given.rules.kinds()
        if kind.stage == "call"
        for n, rule in enumerate(items)
    ]
    rules += [(REGISTERED[r.kind], r, r.name) for r in given.registered]
    for param in sorted(referenced):
        for kind, rule, name in rules:
            on = kind.tool_of(rule)
            if on is not None and tool is not None and not _same_tool(kind, on, tool):
                continue
            read = kind.params(rule)
            if read is None or param in read:
                yield ctx.issue(
                    "policy-undecided",
                    f"rule {name} cannot be decided before run time: parameter {param!r} is "
                    "another action's output (the executor checks it as sent)",
                    index=index,
                    where=["parameters", param],
                )


def _same_tool(kind: Any, rule_tool: str, tool: str) -> bool:
    return rule_tool.casefold() == tool.casefold() if kind.tool_folded else rule_tool == tool
