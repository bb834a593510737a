"""``car-verify hook``: the project's policies and trace rules before each tool call
of a coding agent, through its hook protocol (Claude Code, Codex).

The agent runs the hook once per tool call with a JSON payload on stdin
(``hook_event_name``, ``session_id``, ``cwd``, ``tool_name``, ``tool_input``,
...). For ``PreToolUse`` the hook answers on stdout in the agent's format::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                            "permissionDecision": "allow" | "deny" | "ask",
                            "permissionDecisionReason": "..."}}

The call is the tool's name and its input as parameters. It is denied when a
policy rule denies it (every rule kind, rate limits included) or, failing that,
a trace rule refuses it after the session's calls so far; the reason names each
rule and says why, never the value that matched. ``PostToolUse`` payloads record
the call's outcome for trace rules that ask for one (``... after x succeeded``).

**State.** Per session, a small JSON file under the state directory (default
``.car/hook-state`` beside the policies) holds the trace monitor's state and the
rate-limit windows, keyed to a digest of the rules (a changed rule set starts
afresh, saying so). Two hooks of one session running at once take an exclusive
lock on the file, so neither loses the other's call.

**Failing.** A genuine deny, and a policy file that does not parse, deny (fail
closed). An input the hook cannot evaluate (not JSON, no tool name, another
event) gets ``on_unknown``: by default ``allow``, with a warning on stderr, as
the runtime's own hook documents; ``deny`` or ``ask`` on request.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["AGENTS", "HookAnswer", "add_arguments", "answer", "decide", "main", "run"]

Decision = Literal["allow", "deny", "ask"]
AGENTS = ("claude", "codex")


@dataclass(slots=True)
class HookAnswer:
    """What the hook decided, why, and what it warns about (stderr)."""

    decision: Decision | None  # None: nothing to decide (a PostToolUse record)
    reason: str = ""
    rules: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def wire(self, agent: str, *, grant: bool = False) -> dict[str, Any]:
        """The answer in ``agent``'s hook format (both agents share the
        ``hookSpecificOutput`` object; Codex allows no other top-level keys).

        A call the rules allow is answered without a decision, so the agent's own
        permission prompt still applies; ``grant`` answers ``allow``, which skips
        that prompt."""
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}")
        if self.decision is None:
            return {}
        out: dict[str, Any] = {"hookEventName": "PreToolUse"}
        if self.decision != "allow" or grant:
            out["permissionDecision"] = self.decision
        if self.reason:
            out["permissionDecisionReason"] = self.reason
        return {"hookSpecificOutput": out}


def agent_of(payload: Any) -> str:
    """``codex`` for a Codex payload (it carries ``model`` and ``turn_id``), else
    ``claude``."""
    if isinstance(payload, dict) and "turn_id" in payload and "model" in payload:
        return "codex"
    return "claude"


def answer(
    text: str,
    *,
    policies: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    on_unknown: Decision = "allow",
    ask: Sequence[str] = (),
    agent: str = "auto",
    grant: bool = False,
) -> tuple[str, HookAnswer]:
    """The hook's stdout for one payload's text, and the answer behind it."""
    try:
        payload = json.loads(text)
    except ValueError as err:
        result = _unknown(on_unknown, f"the payload is not JSON ({err})")
        payload = None
    else:
        result = decide(payload, policies=policies, state_dir=state_dir,
                        on_unknown=on_unknown, ask=ask)  # fmt: skip
    chosen = agent_of(payload) if agent == "auto" else agent
    wire = result.wire(chosen, grant=grant)
    return (json.dumps(wire) if wire else ""), result


def _unknown(on_unknown: Decision, why: str) -> HookAnswer:
    reason = f"car-verify could not evaluate this call: {why}"
    warning = f"car-verify: warning: {reason} (answered {on_unknown})"
    return HookAnswer(on_unknown, reason if on_unknown != "allow" else "", warnings=[warning])


def decide(
    payload: Any,
    *,
    policies: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    on_unknown: Decision = "allow",
    ask: Sequence[str] = (),
) -> HookAnswer:
    """Decide one hook payload (parsed JSON); see the module docs."""
    if not isinstance(payload, dict):
        return _unknown(on_unknown, "the payload is not a JSON object")
    event = payload.get("hook_event_name")
    tool, params = payload.get("tool_name"), payload.get("tool_input", {})
    if event not in ("PreToolUse", "PostToolUse"):
        return _unknown(on_unknown, f"hook_event_name {event!r} is not PreToolUse")
    if not isinstance(tool, str) or not tool:
        return _unknown(on_unknown, "the payload has no tool_name")
    if not isinstance(params, dict):
        return _unknown(on_unknown, "tool_input is not a JSON object")
    from .errors import CarVerifyError
    from .policy import load_policies, policies_folder

    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    where = policies if policies is not None else _project(cwd)
    try:
        directory, _ = policies_folder(where)
        folder = None if directory is None else _state_folder(directory, state_dir)
        cache = _rule_cache(folder)
        loaded = load_policies(where)
    except CarVerifyError as err:  # a rule that cannot be read must not vanish
        reason = f"car-verify: the policies cannot be loaded ({err}): denied (fail closed)"
        return HookAnswer("deny" if event == "PreToolUse" else None, reason, warnings=[reason])
    if loaded.directory is None:
        warning = f"car-verify: warning: {loaded.describe()}: the call is not checked"
        return HookAnswer("allow" if event == "PreToolUse" else None, warnings=[warning])
    assert folder is not None  # the directory that was just loaded
    _save_rules(cache, loaded)
    session = str(payload.get("session_id") or "no-session")
    with _session(folder, session, loaded) as state:
        if event == "PostToolUse":
            state.record(tool, params, _outcome(payload.get("tool_response")))
            return HookAnswer(None, warnings=state.warnings)
        denied = state.check(tool, params)
    if not denied:
        return HookAnswer("allow", warnings=state.warnings)
    names = list(dict.fromkeys(name for name, _ in denied))
    why = "; ".join(f"{name}: {reason}" for name, reason in denied)
    decision: Decision = (
        "ask" if ask and all(any(n.startswith(a) for a in ask) for n in names) else "deny"
    )
    return HookAnswer(decision, f"car-verify policy: {why}", names, state.warnings)


def _state_folder(directory: Path, state_dir: Any) -> Path:
    """Where the sessions' state and the rule cache live: ``state_dir``, else
    ``hook-state`` beside the policies directory."""
    return Path(state_dir) if state_dir is not None else directory.resolve().parent / "hook-state"


def _rule_cache(folder: Path | None) -> Path | None:
    """The file of parsed trace rules (one parse per rule text, not one per call: the
    parser alone costs a hook call about 90 ms); what it holds is remembered, so
    loading the policies parses only rules it does not hold. The plain path is the
    same load with nothing remembered; a test checks that both give equal rules."""
    if folder is None:
        return None
    path = folder / "trace-rules.json"
    try:
        docs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return path
    if isinstance(docs, list):
        from .trace import remember, rule_from_dict

        with contextlib.suppress(KeyError, TypeError, ValueError, AssertionError):
            remember(rule_from_dict(d) for d in docs)  # a damaged cache: parsed instead
    return path


def _save_rules(path: Path | None, loaded: Any) -> None:
    """Write the trace rules just loaded to the cache (atomically), when it lacks any."""
    if path is None:
        return
    from .trace import remembered, rule_to_dict

    rules = loaded.rules.trace_rule
    if all(remembered(r) for r in rules):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps([rule_to_dict(r) for r in rules]), encoding="utf-8")
    os.replace(temporary, path)


def _project(cwd: str | None) -> str | None:
    """The policies of the project the agent runs in: the nearest ``.car/policies``
    walking up from its ``cwd``."""
    if cwd is None:
        return None
    from .config import find_policies

    here = Path.cwd()
    try:
        os.chdir(cwd)
    except OSError:
        return None
    try:
        folder, _ = find_policies()
    finally:
        os.chdir(here)
    return None if folder is None else str(folder)


def _outcome(response: Any) -> Literal["succeeded", "failed"]:
    """A PostToolUse ``tool_response``'s outcome: failed when it says so."""
    if isinstance(response, dict) and (
        response.get("is_error") is True
        or response.get("success") is False
        or response.get("error") not in (None, "", False)
    ):
        return "failed"
    return "succeeded"


class _State:
    """One session's monitors, restored from and saved to its state file."""

    def __init__(self, loaded: Any, saved: dict[str, Any] | None, digest: str) -> None:
        from .policy import PolicyEngine
        from .trace import TraceGate

        self.digest = digest
        self.warnings: list[str] = []
        self.engine = PolicyEngine(loaded.rules, clock=time.time)  # windows span processes
        self.gate = TraceGate(self.engine.trace_rules)
        if saved is not None and saved.get("rules") == digest:
            self.gate.restore(tuple(int(x) for x in saved.get("trace", [])))
            windows = saved.get("windows") or {}
            self.engine.restore_windows(
                {int(index): [float(t) for t in times] for index, times in windows.items()}
            )
        elif saved is not None:
            self.warnings.append(
                "car-verify: warning: the policies changed since this session's last call: "
                "its trace rules and rate limits start afresh"
            )

    def check(self, tool: str, params: dict[str, Any]) -> list[tuple[str, str]]:
        """The rules that deny the call; an admitted call is recorded, as at dispatch
        (the policies first; the trace rules only for a call they all allow)."""
        found = self.engine.check_call(tool, params)
        if not found:
            found = [(v.policy_name, v.reason) for v in self.gate.dispatch(tool, params)]
        return found

    def record(self, tool: str, params: dict[str, Any], outcome: Any) -> None:
        self.gate.record(tool, params, outcome)

    def saved(self) -> dict[str, Any]:
        return {
            "rules": self.digest,
            "trace": list(self.gate.state),
            "windows": {str(i): list(w) for i, w in self.engine.windows.items()},
        }


@contextlib.contextmanager
def _session(folder: Path, session: str, loaded: Any) -> Iterator[_State]:
    """The session's state, under an exclusive lock, saved on the way out."""
    import fcntl
    import hashlib  # here, not at the top: the CLI loads this module for its options

    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(session.encode()).hexdigest()[:24]
    path = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            saved = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        except (OSError, ValueError):
            saved = None
        state = _State(loaded, saved if isinstance(saved, dict) else None, _digest(loaded))
        if path.exists() and not isinstance(saved, dict):
            state.warnings.append(
                f"car-verify: warning: the session state {path} could not be read: it starts afresh"
            )
        yield state
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(state.saved()), encoding="utf-8")
        os.replace(temporary, path)


def _digest(loaded: Any) -> str:
    import hashlib

    digest = hashlib.sha256()
    for file in loaded.files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


# --- the command ------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``car-verify hook`` (the CLI's subcommand and :func:`main`)."""
    p.add_argument("--agent", choices=("auto", *AGENTS), default="auto")
    p.add_argument("--policies", metavar="DIR", help="policy directory (default: from cwd)")
    p.add_argument(
        "--state-dir", metavar="DIR", help="per-session state (default: .car/hook-state)"
    )
    p.add_argument(
        "--on-unknown",
        choices=("allow", "deny", "ask"),
        default="allow",
        help="the answer to a payload that cannot be evaluated (default allow, with a warning)",
    )
    p.add_argument(
        "--ask",
        action="append",
        metavar="RULE",
        help="ask instead of deny when only rules with this name prefix deny (repeatable)",
    )
    p.add_argument(
        "--grant",
        action="store_true",
        help="answer allow for a call the rules allow (skips the agent's own prompt); "
        "by default such a call gets no decision and the agent asks as it would",
    )


def run(args: argparse.Namespace) -> int:
    """One hook call: the payload on stdin, the answer on stdout, warnings on stderr;
    always exit 0 (the decision is in the answer)."""
    out, result = answer(
        sys.stdin.read(),
        policies=args.policies,
        state_dir=args.state_dir,
        on_unknown=args.on_unknown,
        ask=args.ask or (),
        agent=args.agent,
        grant=args.grant,
    )
    for warning in result.warnings:
        sys.stderr.write(warning + "\n")
    if out:
        sys.stdout.write(out + "\n")
    return 0


def main(argv: Sequence[str]) -> int:
    """``car-verify hook ARGS`` without loading the rest of the command line: it
    runs once per tool call, so its start-up is the agent's wait."""
    parser = argparse.ArgumentParser(
        prog="car-verify hook", description="a coding agent's pre-tool-use hook"
    )
    add_arguments(parser)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        return run(args)
    except Exception as err:  # never a traceback into the agent's transcript
        sys.stderr.write(f"car-verify: error: {type(err).__name__}: {err}\n")
        return 2
