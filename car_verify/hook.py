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

**Where the rules come from.** The hook's own configuration, never the agent's
payload: ``--policies DIR`` (an absolute path in the agent's settings), else
``$CLAUDE_PROJECT_DIR/.car/policies``, else the nearest ``.car/policies`` above
the directory the agent started the hook in. The payload's ``cwd`` plays no
part: an agent that ``cd``s into a folder holding an empty ``.car/policies``
does not switch the rules off.

**State.** Per session, a small JSON file under the state directory (default:
outside the workspace, ``$XDG_STATE_HOME/car-verify/hook/<project>``, else
``~/.local/state/...``) holds each rule's trace monitor state and each rate
limit's window, keyed by the rule's own content: a file added beside the rules
changes nothing, and a rule that changed starts afresh alone, saying so. Two
hooks of one session running at once take an exclusive lock on the file, so
neither loses the other's call. A state file that cannot be read, or holds what
no hook wrote, denies (fail closed): it is never taken for a fresh session.

**Failing.** A genuine deny, a policy file or folder that cannot be read, state
that cannot be read or written, and a payload that cannot be decoded (not JSON,
nested too deeply, text no encoding can hold) deny: every input gets a decision
in the agent's format. A payload that decodes but cannot be evaluated (no tool
name, another event, a ``tool_input`` that is no object and that no rule denies
as empty) gets ``on_unknown``: by default ``allow``, with a warning on stderr,
as the runtime's own hook documents; ``deny`` or ``ask`` on request.
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
#: The events the hook answers: before a call, and after one (its outcome; Claude
#: Code reports a failed call as PostToolUseFailure).
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
#: The state file's format: each rule's state, keyed by the rule's content.
STATE_FORMAT = 3


class _BadState(Exception):
    """A session's state that cannot be read, or holds what no hook wrote."""


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
    """The hook's stdout for one payload's text, and the answer behind it: always a
    decision in the agent's format (see the module docs on failing)."""
    payload: Any = None
    try:
        payload = json.loads(text)
        json.dumps(payload, ensure_ascii=False).encode("utf-8")  # a lone surrogate fails
    except (ValueError, RecursionError, UnicodeError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        result = _closed(f"the payload cannot be decoded ({why})")
        payload = None
    else:
        try:
            result = decide(payload, policies=policies, state_dir=state_dir,
                            on_unknown=on_unknown, ask=ask)  # fmt: skip
        except Exception as err:  # whatever it is, the call is not let through unseen
            result = _closed(f"{type(err).__name__}: {err}")
            if isinstance(payload, dict) and payload.get("hook_event_name") != "PreToolUse":
                result.decision = None  # after a call there is nothing to decide
    chosen = agent_of(payload) if agent == "auto" else agent
    wire = result.wire(chosen, grant=grant)
    return (json.dumps(wire) if wire else ""), result


def _closed(why: str) -> HookAnswer:
    """A deny for a call the hook could not evaluate safely (fails closed)."""
    reason = f"car-verify could not evaluate this call: {why}: denied (fail closed)"
    return HookAnswer("deny", reason, warnings=[f"car-verify: error: {reason}"])


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
    tool, given = payload.get("tool_name"), payload.get("tool_input")
    if event not in EVENTS:
        return _unknown(on_unknown, f"hook_event_name {event!r} is not one of {', '.join(EVENTS)}")
    if not isinstance(tool, str) or not tool:
        return _unknown(on_unknown, "the payload has no tool_name")
    before = event == "PreToolUse"
    unreadable = not isinstance(given, dict)
    # what can be decided of a call whose input is no object: its tool, rules on absence
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    from .base.errors import CarVerifyError
    from .rules.policy import LoadedPolicies, PolicySet, load_policies

    where, configured = _policy_root(policies)
    folder = _state_folder(where, state_dir)
    try:
        cache = _rule_cache(folder)  # before the load: what it holds is not parsed again
        if where is not None and not configured and not os.path.lexists(where):
            # The project has no policies folder: nothing to load (the session may
            # still remember rules it had, below).
            loaded = LoadedPolicies(None, [], PolicySet(), [Path(where)])
        else:
            loaded = load_policies(where)
    except (CarVerifyError, OSError) as err:  # a rule that cannot be read must not vanish
        reason = f"car-verify: the policies cannot be loaded ({err}): denied (fail closed)"
        return HookAnswer("deny" if before else None, reason, warnings=[reason])
    session = str(payload.get("session_id") or "no-session")
    try:
        _save_rules(cache, loaded)
        with _session(folder, session, loaded, on_unknown, ask) as state:
            if state.gate is None:  # no rules now, and none remembered by the session
                if not before:
                    return HookAnswer(None)
                warning = f"car-verify: warning: {loaded.describe()}: the call is not checked"
                return HookAnswer(None, warnings=[warning])
            if not before:
                failed = event == "PostToolUseFailure"
                state.gate.report(
                    tool, params, "failed" if failed else _outcome(payload.get("tool_response"))
                )
                return HookAnswer(None, warnings=state.warnings)
            verdict = state.gate.decide(tool, params)
    except (_BadState, OSError) as err:
        reason = f"car-verify: the session state cannot be used ({err}): denied (fail closed)"
        return HookAnswer("deny" if before else None, reason, warnings=[reason])
    warnings = list(state.warnings)
    if verdict.undecided:
        warnings.append(
            f"car-verify: warning: {verdict.reason()} (answered {verdict.decision})"
            if not verdict.denied
            else "car-verify: warning: also undecided: "
            + "; ".join(d.text() for d in verdict.undecided)
        )
    if verdict.decision == "allow":
        if unreadable:
            return _unknown(on_unknown, "tool_input is not a JSON object (no rule denies it empty)")
        return HookAnswer("allow", warnings=warnings)
    return HookAnswer(
        verdict.decision, f"car-verify policy: {verdict.reason()}", verdict.rules, warnings
    )


def _policy_root(policies: str | os.PathLike[str] | None) -> tuple[str | None, bool]:
    """The policies the hook applies, from its own configuration (see the module
    docs), never from the payload, whose ``cwd`` the agent controls; and whether
    the user named them (``--policies``: a folder that must be there)."""
    if policies is not None:
        return os.path.abspath(os.fspath(policies)), True
    project = os.environ.get("CLAUDE_PROJECT_DIR")
    if project:
        return os.path.abspath(os.path.join(project, ".car", "policies")), False
    return None, False  # the nearest .car/policies above the hook's own working directory


def _state_root() -> Path:
    """Where sessions' state lives by default: the user's state folder, outside any
    workspace the agent writes in."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "car-verify" / "hook"


def _state_folder(where: str | None, state_dir: Any) -> Path:
    """Where the sessions' state and the rule cache live: ``state_dir``, else a folder
    of the project's own under :func:`_state_root`, named by where the hook was told
    to find its policies (the flag, the project, else the folder it was started
    in): never by what it found there, so a session keeps its memory of the rules
    when the folder it read is emptied, removed or shadowed."""
    if state_dir is not None:
        return Path(state_dir)
    import hashlib

    key = where if where is not None else "cwd:" + os.path.abspath(os.getcwd())
    project = hashlib.sha256(os.fsencode(key)).hexdigest()[:16]
    return _state_root() / project


def _rule_cache(folder: Path) -> Path:
    """The file of parsed trace rules (one parse per rule text, not one per call: the
    parser alone costs a hook call about 90 ms); what it holds is remembered, so
    loading the policies parses only rules it does not hold. The plain path is the
    same load with nothing remembered; a test checks that both give equal rules."""
    path = folder / "trace-rules.json"
    try:
        docs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return path
    if isinstance(docs, list):
        from .rules.trace import remember, rule_from_dict

        trusted = []
        for doc in docs:
            with contextlib.suppress(KeyError, TypeError, ValueError, AssertionError):
                rule = rule_from_dict(doc)
                # The parse is taken only when it says what the rule's own text says
                # (its canonical text is that text): a forged entry is parsed anew.
                if _words(rule.to_text()) == _words(rule.text):
                    trusted.append(rule)
        remember(trusted)
    return path


def _words(text: str) -> list[str]:
    return text.split()


def _save_rules(path: Path, loaded: Any) -> None:
    """Write the trace rules just loaded to the cache (atomically), when it lacks any."""
    from .rules.trace import remembered, rule_to_dict

    rules = loaded.rules.trace_rule
    if all(remembered(r) for r in rules):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps([rule_to_dict(r) for r in rules]), encoding="utf-8")
    os.replace(temporary, path)


def _outcome(response: Any) -> Literal["succeeded", "failed"]:
    """A PostToolUse ``tool_response``'s outcome: failed when it says so."""
    if isinstance(response, dict) and (
        response.get("is_error") is True
        or response.get("isError") is True
        or response.get("success") is False
        or response.get("error") not in (None, "", False)
    ):
        return "failed"
    return "succeeded"


class _State:
    """One session's gate, restored from and saved to its state file: the rules the
    session has seen (those loaded now, and those it remembers that are gone: a
    session's rules only grow), and each rule's own trace and rate-limit state,
    keyed by the rule's content (see :func:`_rule_keys`)."""

    def __init__(
        self,
        loaded: Any,
        saved: dict[str, Any] | None,
        on_unknown: Decision,
        ask: Sequence[str] = (),
    ) -> None:
        from .plan.gate import CallGate
        from .rules.policy import PolicyEngine, policy_set_from_dict, rule_identities

        self.warnings: list[str] = []
        rules = loaded.rules
        if saved is not None and saved.get("in_force"):
            try:
                remembered = policy_set_from_dict(saved["in_force"])
            except (KeyError, TypeError, ValueError, AssertionError):
                raise _BadState("the session's rules cannot be read") from None
            now = set(rule_identities(rules))
            gone = [
                (kind, rule)
                for (kind, identity), rule in zip(
                    rule_identities(remembered), _rules_of(remembered), strict=True
                )
                if (kind, identity) not in now
            ]
            if gone:
                from .rules.policy import PolicySet

                kept = PolicySet()
                kept.extend(rules)
                for kind, rule in gone:
                    getattr(kept, kind).append(rule)
                rules = kept
                self.warnings.append(
                    f"car-verify: warning: {len(gone)} rule(s) this session was started with "
                    "are no longer in the policies folder: they stay in force until the "
                    "session ends (start a new session to apply the edited rules)"
                )
        self.rules = rules
        self.gate: CallGate | None = None
        if not rules.count():
            return
        engine = PolicyEngine(rules, clock=time.time)  # windows span processes
        self.gate = CallGate(engine, on_unknown=on_unknown, ask=ask)
        self.trace_keys, self.rate_keys = _rule_keys(rules)
        if saved is None:
            return
        trace, windows = saved["trace"], saved["windows"]
        self.gate.trace.restore(tuple(int(trace.get(key, 0)) for key in self.trace_keys))
        engine.restore_windows(
            {
                i: [float(t) for t in windows[key]]
                for i, key in enumerate(self.rate_keys)
                if key in windows
            }
        )
        known = {*trace, *windows, *saved.get("rules", [])}
        new = [k for k in [*self.trace_keys, *self.rate_keys] if k not in known]
        if new and saved.get("rules"):
            self.warnings.append(
                f"car-verify: warning: {len(new)} rule(s) are new to this session (added or "
                "changed): their trace and rate-limit state starts empty"
            )

    def saved(self) -> dict[str, Any]:
        from .rules.policy import policy_set_to_dict

        doc: dict[str, Any] = {
            "format": STATE_FORMAT,
            "in_force": policy_set_to_dict(self.rules),
            "rules": [],
            "trace": {},
            "windows": {},
        }
        if self.gate is None:
            return doc
        windows = self.gate.engine.windows
        doc["rules"] = [*self.trace_keys, *self.rate_keys]
        doc["trace"] = {
            k: n for k, n in zip(self.trace_keys, self.gate.trace.state, strict=True) if n
        }
        doc["windows"] = {k: list(windows[i]) for i, k in enumerate(self.rate_keys) if i in windows}
        return doc


def _rules_of(rules: Any) -> list[Any]:
    """Every file rule of a PolicySet, in :func:`rule_identities`' order."""
    return [r for kind in rules.__dataclass_fields__ for r in getattr(rules, kind)]


def _rule_keys(rules: Any) -> tuple[list[str], list[str]]:
    """A key per trace rule and per rate limit: a digest of the rule's content (and
    its occurrence, for a rule written twice), so that a rule keeps its state while
    the files around it change, and a changed rule does not take another's."""
    import hashlib

    from .rules.trace import rule_to_dict

    def keys(texts: list[str]) -> list[str]:
        seen: dict[str, int] = {}
        out = []
        for text in texts:
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]
            seen[digest] = seen.get(digest, 0) + 1
            out.append(f"{digest}:{seen[digest]}")
        return out

    def content(rule: Any) -> str:
        doc = rule_to_dict(rule)
        doc.pop("origin", None)  # moving a rule in its file keeps its state
        return json.dumps(doc, sort_keys=True)

    trace = [content(r) for r in rules.trace_rule]
    rates = [f"{r.tool}\0{r.max_calls}\0{r.interval_secs!r}" for r in rules.rate_limit_tool]
    return keys(trace), keys(rates)


def _read_state(path: Path) -> dict[str, Any] | None:
    """A session's saved state (None: a new session), checked: anything else is
    :class:`_BadState`, never a fresh start."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeError) as err:
        raise _BadState(f"{path}: {err}") from None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise _BadState(f"{path} is not JSON") from None
    if isinstance(doc, dict) and type(doc.get("format")) is int and doc["format"] < STATE_FORMAT:
        raise _BadState(
            f"{path} was written by an older car-verify (state format {doc['format']}): "
            "start a new session"
        )
    ok = (
        isinstance(doc, dict)
        and doc.get("format") == STATE_FORMAT
        and isinstance(doc.get("trace"), dict)
        and isinstance(doc.get("windows"), dict)
        and isinstance(doc.get("rules", []), list)
        and isinstance(doc.get("in_force", {}), dict)
        and all(type(n) is int and n >= 0 for n in doc["trace"].values())
        and all(
            isinstance(w, list) and all(type(t) in (int, float) for t in w)
            for w in doc["windows"].values()
        )
    )
    if not ok:
        raise _BadState(f"{path} holds no session state this hook wrote")
    checked: dict[str, Any] = doc
    return checked


#: How long a hook waits for its session's lock (another hook of the session holds
#: it for tens of milliseconds): past it the call is denied, never left to the
#: agent's own hook timeout, after which some agents run the call.
LOCK_SECONDS = 5.0


@contextlib.contextmanager
def _session(
    folder: Path,
    session: str,
    loaded: Any,
    on_unknown: Decision = "allow",
    ask: Sequence[str] = (),
) -> Iterator[_State]:
    """The session's state, under an exclusive lock, saved on the way out."""
    import fcntl
    import hashlib  # here, not at the top: the CLI loads this module for its options

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    path = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "a+") as lock:
        deadline = time.monotonic() + LOCK_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise _BadState(
                        f"the session's lock was held for over {LOCK_SECONDS:g} s"
                    ) from None
                time.sleep(0.01)
        state = _State(loaded, _read_state(path), on_unknown, ask)
        yield state
        if state.gate is None and not path.exists():
            return  # nothing to remember
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(state.saved()))
        os.replace(temporary, path)


# --- the command ------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``car-verify hook`` (the CLI's subcommand and :func:`main`)."""
    p.add_argument("--agent", choices=("auto", *AGENTS), default="auto")
    p.add_argument(
        "--profile",
        choices=("car", "strict"),
        help="accepted as by every command; the hook judges each call by the policies "
        "and trace rules alone, which read the same under both profiles",
    )
    p.add_argument(
        "--policies",
        metavar="DIR",
        help="policy directory, best an absolute path (default: $CLAUDE_PROJECT_DIR/.car/"
        "policies, else the nearest .car/policies above where the hook was started)",
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="per-session state, outside the workspace "
        "(default: $XDG_STATE_HOME/car-verify/hook, else ~/.local/state/car-verify/hook)",
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
    except Exception as err:  # never a traceback into the agent's transcript, and a
        # decision the agent reads all the same: deny (fail closed)
        result = _closed(f"{type(err).__name__}: {err}")
        sys.stderr.write(result.warnings[0] + "\n")
        sys.stdout.write(json.dumps(result.wire("claude")) + "\n")
        return 0
