"""``car-verify hook``: the project's policies and trace rules before each tool call
of a coding agent, through its hook protocol (Claude Code, Codex).

The agent runs the hook once per event with a JSON payload on stdin
(``hook_event_name``, ``session_id``, ``cwd``, ``tool_name``, ``tool_input``,
...). For ``PreToolUse`` the hook answers on stdout in the agent's format::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                            "permissionDecision": "allow" | "deny" | "ask",
                            "permissionDecisionReason": "..."},
     "systemMessage": "..."}

The call is the tool's name and its input as parameters. It is denied when a
rule denies it (every rule kind, rate limits included) or, failing that, a trace
rule refuses it after the session's calls so far; the reason names each rule and
says why, never the value that matched. A call a rule cannot decide (a shell
line the reader does not understand) is put to the user (``ask``), naming the
rule and why. ``PostToolUse`` and ``PostToolUseFailure`` record the call's
outcome; every other event is answered with nothing (see :data:`EVENTS`).

**Which rules are in force.** The hook reads the policies folder its own
configuration names (``--policies DIR``, else ``$CLAUDE_PROJECT_DIR/.car/
policies``, else the nearest ``.car/policies`` above the folder the agent
started it in), never the payload's ``cwd``. The folder lives in the agent's
workspace, so the hook keeps, per project and outside the workspace (its state
folder), the **accepted** rules: each policy file's text as it was read, stored
as it is and read back by the policy reader itself
(:func:`~car_verify.rules.policy.load_policy_text`). A call must pass the
accepted rules *and* the folder's current rules: nothing written in the folder
can weaken what was accepted (a rule removed, a limit raised, an allow list
widened), while a rule added there applies at once. The accepted rules change
only from outside the agent: ``car-verify policy accept`` (refused by the hook
when the agent tries it), or every edit of the folder when the hook's own
configuration says ``--accept-edits`` (a folder the agent cannot write). The
first call on a project accepts what it finds and says so; while the folder
differs from the accepted rules, every call says so.

**State.** Per session, a small JSON file in the state folder holds each trace
rule's monitor state and each rate limit's window, keyed by the rule's own
content: a file added beside the rules changes nothing, and a changed rule
starts afresh alone, saying so. A ``PreToolUse`` takes an exclusive lock on the
session's file, reads it, decides and replaces it atomically. An outcome is
appended to the session's journal without waiting for the lock (one ``write``
of one line, ``O_APPEND``), so hooks running at once lose no report; the next
``PreToolUse`` folds the journal in. An outcome that cannot be saved (a full
disk) leaves a marker instead (an empty file), and from then on the calls that
the trace rules reading it govern are denied, with the reason. A state file that
cannot be read, or holds what no hook wrote, denies: it is never taken for a
fresh session.

**Failing.** A genuine deny, a policy file or folder that cannot be read, state
that cannot be read or written, and a payload that cannot be decoded (not JSON,
nested too deeply, text no encoding can hold) deny: every input gets a decision
in the agent's format. A ``PreToolUse`` that decodes but cannot be evaluated (no
tool name, a ``tool_input`` that is no object and that no rule denies as empty)
and a rule left undecided get ``on_unknown``: ``ask`` by default; ``deny`` on
request, or ``allow``, which every call then says.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from .plan.gate import UNDECIDED, Decision

if TYPE_CHECKING:
    import argparse

__all__ = [
    "AGENTS",
    "EVENTS",
    "HookAnswer",
    "accept_policies",
    "add_arguments",
    "answer",
    "decide",
    "main",
    "run",
]

AGENTS = ("claude", "codex")
#: The events the hook answers: before a call, and after one (its outcome; Claude
#: Code reports a failed call as PostToolUseFailure). Any other event
#: (``SessionStart``, ``UserPromptSubmit``, ``Stop``, ...) is answered with
#: nothing on stdout and a note on stderr: the hook has nothing to decide there.
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
#: The hook's answer to a call a rule cannot decide (a shell line whose program
#: is computed, ``eval``, a decoded script piped to a shell): the user's prompt,
#: as the one table of every face's answer says (:data:`car_verify.plan.gate.FACES`).
ON_UNKNOWN: Decision = UNDECIDED["hook"]
#: The session state file's format: each rule's state keyed by the rule's
#: content (:func:`~car_verify.rules.policy.state_keys`), and how much of the
#: session's journal of outcomes it holds.
STATE_FORMAT = 5
#: The accepted rules' file format: each policy file's text, as read.
ACCEPTED_FORMAT = 1
ACCEPTED_FILE = "accepted.json"
#: Claude Code's tools that only read: the hook's guard of its own state folder
#: and settings lets them name those (reading them changes nothing).
READING_TOOLS = frozenset({"Read", "Grep", "Glob", "LS"})


class _BadState(Exception):
    """A session's state that cannot be read, or holds what no hook wrote."""


class _BadAccepted(Exception):
    """Accepted rules that cannot be read back."""


@dataclass(slots=True)
class HookAnswer:
    """What the hook decided, why, what it warns about (stderr) and what it tells
    the user (``systemMessage``)."""

    decision: Decision | None  # None: nothing to decide (an outcome, another event)
    reason: str = ""
    rules: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    message: str = ""

    def wire(self, agent: str, *, grant: bool = False) -> dict[str, Any]:
        """The answer in ``agent``'s hook format (both agents share the
        ``hookSpecificOutput`` object and the top-level ``systemMessage``).

        A call the rules allow is answered without a decision, so the agent's own
        permission prompt still applies; ``grant`` answers ``allow``, which skips
        that prompt. An answer without a decision (after a call) carries only its
        message, a field every event's answer may hold."""
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}")
        out: dict[str, Any] = {}
        if self.decision is not None:
            said: dict[str, Any] = {"hookEventName": "PreToolUse"}
            if self.decision != "allow" or grant:
                said["permissionDecision"] = self.decision
            if self.reason:
                said["permissionDecisionReason"] = self.reason
            out["hookSpecificOutput"] = said
        if self.message:
            out["systemMessage"] = self.message
        return out


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
    on_unknown: Decision = ON_UNKNOWN,
    ask: Sequence[str] = (),
    agent: str = "auto",
    grant: bool = False,
    accept_edits: bool = False,
) -> tuple[str, HookAnswer]:
    """The hook's stdout for one payload's text, and the answer behind it: always a
    decision in the agent's format for a call (see the module docs on failing)."""
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
                            on_unknown=on_unknown, ask=ask, accept_edits=accept_edits)  # fmt: skip
        except Exception as err:  # whatever it is, the call is not let through unseen
            result = _closed(f"{type(err).__name__}: {err}")
            if isinstance(payload, dict) and payload.get("hook_event_name") != "PreToolUse":
                result.decision = None  # after a call there is nothing to decide
    if on_unknown == "allow" and result.decision is not None:
        result.warnings.append(
            "car-verify: warning: --on-unknown allow: a call that a rule cannot decide "
            "is let through unchecked by that rule"
        )
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
    on_unknown: Decision = ON_UNKNOWN,
    ask: Sequence[str] = (),
    accept_edits: bool = False,
) -> HookAnswer:
    """Decide one hook payload (parsed JSON); see the module docs."""
    if not isinstance(payload, dict):
        return _unknown(on_unknown, "the payload is not a JSON object")
    event = payload.get("hook_event_name")
    if isinstance(event, str) and event not in EVENTS:
        return HookAnswer(
            None,
            warnings=[
                f"car-verify: note: the hook has nothing to decide on a {event} event "
                f"(it answers {', '.join(EVENTS)}): answered nothing"
            ],
        )
    if event is None:
        return _unknown(on_unknown, "the payload has no hook_event_name")
    if not isinstance(event, str):
        return _unknown(on_unknown, "hook_event_name is not a string")
    tool, given = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not tool:
        if event != "PreToolUse":
            return HookAnswer(None, warnings=[f"car-verify: warning: a {event} without a tool"])
        return _unknown(on_unknown, "the payload has no tool_name")
    # what can be decided of a call whose input is no object: its tool, rules on absence
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    where, configured = _policy_root(policies)
    folder = _state_folder(where, state_dir)
    name = _session_name(str(payload.get("session_id") or "no-session"))
    if event != "PreToolUse":
        outcome = (
            "failed" if event == "PostToolUseFailure" else _outcome(payload.get("tool_response"))
        )
        return _after(folder, name, where, configured, tool, params, outcome)
    answered = _before(folder, name, where, configured, tool, params, on_unknown, ask, accept_edits)
    if answered.decision == "allow" and not isinstance(given, dict):
        unread = _unknown(on_unknown, "tool_input is not a JSON object (no rule denies it empty)")
        unread.warnings[:0] = answered.warnings
        unread.message = answered.message
        return unread
    return answered


def _before(
    folder: Path,
    name: str,
    where: str | None,
    configured: bool,
    tool: str,
    params: dict[str, Any],
    on_unknown: Decision,
    ask: Sequence[str],
    accept_edits: bool,
) -> HookAnswer:
    """A call about to be made: the rules in force (accepting them on the first
    call, or a trusted edit), the hook's own guard, the session's state."""
    from .base.errors import CarVerifyError

    try:
        rules = _in_force(where, configured, folder, before=True, accept_edits=accept_edits)
    except (CarVerifyError, OSError, _BadAccepted) as err:
        # a rule that cannot be read must not vanish
        reason = f"car-verify: the policies cannot be loaded ({err}): denied (fail closed)"
        return HookAnswer("deny", reason, warnings=[reason])
    if not rules.sets:  # no rules now, and none accepted
        warning = f"car-verify: warning: {rules.loaded.describe()}: the call is not checked"
        return HookAnswer(None, warnings=[*rules.warnings, warning], message=rules.message)
    try:
        with _session(folder, name, rules, on_unknown, ask) as state:
            found = state.decide(tool, params, _Guard(folder, on_unknown, ask))
    except (_BadState, OSError) as err:
        reason = f"car-verify: the session state cannot be used ({err}): denied (fail closed)"
        return HookAnswer("deny", reason, warnings=[*rules.warnings, reason], message=rules.message)
    warnings = [*rules.warnings, *state.warnings]
    if found.undecided:
        told = "; ".join(d.text() for d in found.undecided)
        warnings.append(
            f"car-verify: warning: undecided: {told} (answered {found.decision})"
            if not found.denied
            else f"car-verify: warning: also undecided: {told}"
        )
    if found.decision == "allow":
        message = rules.message
        if found.undecided:  # only --on-unknown allow lets one through: the user is told
            told = "; ".join(d.text() for d in found.undecided)
            let = f"car-verify: allowed unchecked (--on-unknown allow): {told}"
            message = f"{message} {let}" if message else let
        return HookAnswer("allow", warnings=warnings, message=message)
    return HookAnswer(
        found.decision, found.reason(), found.rules(), warnings, message=rules.message
    )


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


# --- where the rules and the state are ---------------------------------------------------------


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
    """Where projects' state lives by default: the user's state folder, outside any
    workspace the agent writes in."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "car-verify" / "hook"


def _project_key(where: str | None) -> str:
    """The name of a project's state folder: a digest of where the hook was told to
    find its policies (the flag, the project, else the folder it was started in):
    never of what it found there, so an emptied, removed or shadowed folder keeps
    its project's accepted rules and sessions."""
    from .base.digest import sha256_hex

    key = where if where is not None else "cwd:" + os.path.abspath(os.getcwd())
    return sha256_hex(os.fsencode(key))[:16]


def _state_folder(where: str | None, state_dir: Any) -> Path:
    """The project's state folder: ``state_dir`` when given, else its own folder
    under :func:`_state_root` (see :func:`_project_key`)."""
    if state_dir is not None:
        return Path(state_dir)
    return _state_root() / _project_key(where)


def _session_name(session: str) -> str:
    from .base.digest import sha256_hex

    return sha256_hex(session.encode("utf-8", "surrogatepass"))[:24]


# --- the accepted rules ------------------------------------------------------------------------


@dataclass(slots=True)
class _Snapshot:
    """The rules accepted for a project: each policy file's name and text, in the
    order the loader read them, where they were read, when and how accepted."""

    files: list[tuple[str, str]]
    policies: str
    when: str
    how: str
    path: Path

    def rules(self) -> Any:
        """The accepted rules, read by the policy reader itself (strict)."""
        from .base.errors import InputError
        from .rules.policy import PolicySet, load_policy_text

        rules = PolicySet()
        for name, text in self.files:
            try:
                rules.extend(load_policy_text(text, source=str(Path(self.policies) / name)))
            except InputError as err:
                raise _BadAccepted(
                    f"the accepted copy of {name} in {self.path} no longer reads ({err}): run "
                    "`car-verify policy accept` outside the agent to accept the folder again"
                ) from None
        return rules

    def said(self) -> str:
        return f"accepted {self.when} ({self.how})"


def _texts(loaded: Any) -> list[tuple[str, str]]:
    """Each policy file's name and text as the load read them (from its descriptor)."""
    return [(os.path.basename(path), text) for path, text in loaded.texts.items()]


def _read_snapshot(folder: Path) -> _Snapshot | None:
    """The project's accepted rules (None: none yet), checked: anything else is
    :class:`_BadAccepted`, never "none yet"."""
    path = folder / ACCEPTED_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeError) as err:
        raise _BadAccepted(f"{path}: {err}") from None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        doc = None
    files = doc.get("files") if isinstance(doc, dict) else None
    ok = (
        isinstance(doc, dict)
        and doc.get("format") == ACCEPTED_FORMAT
        and all(isinstance(doc.get(k), str) for k in ("policies", "when", "how"))
        and isinstance(files, list)
        and all(
            isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
            for f in files
        )
        and len({f[0] for f in files}) == len(files)
    )
    if not ok:
        raise _BadAccepted(
            f"{path} holds no accepted rules this hook wrote: run `car-verify policy accept` "
            "outside the agent to accept the folder's rules again"
        )
    assert isinstance(doc, dict) and isinstance(files, list)
    pairs = [(str(name), str(body)) for name, body in files]
    return _Snapshot(pairs, doc["policies"], doc["when"], doc["how"], path)


def _write_snapshot(folder: Path, loaded: Any, how: str) -> _Snapshot:
    """Accept what ``loaded`` read (atomically): its texts, as read."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    policies = str(loaded.directory) if loaded.directory is not None else ""
    files = _texts(loaded)
    doc = {
        "format": ACCEPTED_FORMAT,
        "policies": policies,
        "when": when,
        "how": how,
        "files": [list(f) for f in files],
    }
    path = folder / ACCEPTED_FILE
    _replace(path, json.dumps(doc))  # ASCII: a file name no encoding holds is escaped
    return _Snapshot(files, policies, when, how, path)


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file of this process, then
    a rename); the temporary file is removed when the write fails."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _changes(before: list[tuple[str, str]], now: list[tuple[str, str]]) -> list[str]:
    """How the policy files changed: ``rules.toml changed``, ``a.toml removed``, ..."""
    old, new = dict(before), dict(now)
    out = [f"{n} removed" for n in old if n not in new]
    out += [f"{n} changed" for n in old if n in new and old[n] != new[n]]
    out += [f"{n} added" for n in new if n not in old]
    return out


@dataclass(slots=True)
class _InForce:
    """The rule sets a call must pass (``accepted``, ``folder``: one set when the
    folder holds what was accepted), what was loaded, and what to say."""

    sets: list[tuple[str, Any]]
    loaded: Any
    warnings: list[str] = field(default_factory=list)
    message: str = ""

    def trace_rules(self) -> list[Any]:
        return [rule for _, rules in self.sets for rule in rules.trace_rules()]


def _in_force(
    where: str | None, configured: bool, folder: Path, *, before: bool, accept_edits: bool = False
) -> _InForce:
    """The rules in force for the project (see the module docs). ``before``: a
    PreToolUse, which may accept (the first call; an edit ``--accept-edits`` trusts)."""
    from .base.values import plural
    from .rules.policy import LoadedPolicies, PolicySet, load_policies

    cache = _rule_cache(folder)  # before the load: what it holds is not parsed again
    if where is not None and not configured and not os.path.lexists(where):
        # The project has no policies folder: nothing to load (its accepted rules
        # stay in force, below).
        loaded = LoadedPolicies(None, [], PolicySet(), [Path(where)])
    else:
        loaded = load_policies(where)
    now = _texts(loaded)
    snapshot = _read_snapshot(folder)
    said: list[str] = []
    warnings: list[str] = []
    if loaded.skipped:
        warnings.append(
            f"car-verify: warning: {loaded.describe_skipped()} in {loaded.directory}: "
            "not read as policies (a policy file ends in .toml)"
        )
    command = _accept_command(loaded.directory or where, folder)
    same = snapshot is not None and snapshot.files == now
    accepted = None if snapshot is None or same else snapshot.rules()
    empty = snapshot is None or (accepted is not None and not accepted.count())
    if before and loaded.rules.count() and empty:
        first = snapshot is None
        snapshot = _write_snapshot(folder, loaded, "first use" if first else "nothing accepted")
        same, accepted = True, None
        why = "first use of the hook on this project" if first else "no rule was accepted"
        said.append(
            f"car-verify: {why}: accepted {plural(loaded.rules.count(), 'rule')} from "
            f"{plural(len(now), 'file')} in {loaded.directory}; from now on a rule removed "
            f"or weakened there stays in force until you run `{command}` outside the agent"
            " (said on every call until you do: if this project had accepted rules before, "
            "the hook's state folder was removed, and these may be the agent's edit)"
        )
    elif before and accept_edits and not same and snapshot is not None and loaded.directory:
        changed = ", ".join(_changes(snapshot.files, now))
        snapshot = _write_snapshot(folder, loaded, "trusted edit (--accept-edits)")
        same, accepted = True, None
        writable = os.access(loaded.directory, os.W_OK)
        said.append(
            f"car-verify: accepted an edit of {loaded.directory} ({changed}) as trusted "
            "(--accept-edits)"
            + (
                "; the folder is writable by the user the hook runs as, so by an agent "
                "running as that user: keep it out of the agent's reach"
                if writable
                else ""
            )
        )
    elif before and snapshot is not None and snapshot.how in _UNCONFIRMED:
        # Said on every call until the user confirms: a first use the user did not
        # expect is the hook's state folder removed, and the folder's rules (which
        # the agent may have edited) accepted in its place.
        said.append(
            f"car-verify: warning: the rules in force were accepted by the hook itself "
            f"({snapshot.how}, {snapshot.when}), never by you: if this project had accepted "
            "rules before, they were removed with the hook's state folder and the agent may "
            f"have edited these; check {loaded.directory or where} and run `{command}` "
            "outside the agent to confirm them"
        )
    sets: list[tuple[str, Any]] = []
    if accepted is not None and accepted.count():
        assert snapshot is not None
        sets.append(("accepted", accepted))
        changed = ", ".join(_changes(snapshot.files, now))
        here = str(loaded.directory or where or "the project")
        if snapshot.policies and snapshot.policies != here:
            changed = f"{changed}; those were read from {snapshot.policies}".lstrip("; ")
        said.append(
            f"car-verify: warning: the policies in {here} "
            f"differ from the rules {snapshot.said()} ({changed}): the "
            f"{plural(accepted.count(), 'accepted rule')} stay in force beside the folder's "
            f"{plural(loaded.rules.count(), 'rule')} (a call must pass both) until you run "
            f"`{command}` outside the agent"
        )
    if loaded.rules.count():
        sets.append(("folder", loaded.rules))
    found = _InForce(sets, loaded, warnings, " ".join(said))
    warnings.extend(said)
    with contextlib.suppress(OSError):  # a cache: a call does not depend on it
        _save_rules(cache, found.trace_rules())
    return found


#: How the hook itself accepts rules (a first use, an empty accepted set): said on
#: every call until the user runs ``car-verify policy accept``.
_UNCONFIRMED = ("first use", "nothing accepted")


def _accept_command(policies: Any, folder: Path) -> str:
    """The command that accepts ``policies`` for the hook whose state is ``folder``."""
    import shlex

    words = ["car-verify", "policy", "accept"]
    if policies:
        words.append(str(policies))
    if folder.parent != _state_root():  # the hook was given --state-dir
        words += ["--state-dir", str(folder)]
    return shlex.join(words)


def _rule_cache(folder: Path) -> Path:
    """The file of parsed trace rules (one parse per rule text, not one per call: the
    parser alone costs a hook call about 90 ms); what it holds is remembered, so
    loading the policies parses only rules it does not hold. The plain path is the
    same load with nothing remembered; a test checks that both give equal rules."""
    path = folder / "trace-rules.json"
    try:
        docs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError, UnicodeError):
        return path
    if isinstance(docs, list):
        from .rules.trace import remember, rule_from_dict

        trusted = []
        for doc in docs:
            with contextlib.suppress(KeyError, TypeError, ValueError, AssertionError):
                rule = rule_from_dict(doc)
                # The parse is taken only when it says what the rule's own text says
                # (its canonical text is that text): a forged entry is parsed anew.
                if rule.to_text().split() == rule.text.split():
                    trusted.append(rule)
        remember(trusted)
    return path


def _save_rules(path: Path, rules: list[Any]) -> None:
    """Write the trace rules in force to the cache (atomically), when it lacks any."""
    from .rules.trace import remembered, rule_to_dict

    if all(remembered(r) for r in rules):
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _replace(path, json.dumps([rule_to_dict(r) for r in rules]))


# --- the hook's own guard ----------------------------------------------------------------------

#: The hook's own rules, read by the same reader as any policy file: a shell line
#: that runs ``car-verify policy accept`` is refused (the user accepts rules from
#: outside the agent), and so is one that runs the hook itself (a forged
#: ``PostToolUse`` would report an outcome that never happened); a line whose
#: program the reader cannot name is undecided under them, as under any
#: ``deny_command``.
GUARD_RULES = """[[deny_command]]
program = "car-verify"
args = ["policy", "accept"]
[[deny_command]]
program = "car-verify"
args = ["hook"]
"""
#: The hook's settings files, by the ends of their paths: no tool but a reading one
#: may name them.
SETTINGS = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    "managed-settings.json",
    ".codex/config.toml",
    ".codex/hooks.json",
)


class _Guard:
    """What the hook refuses on its own account, whatever the rules say: running
    ``car-verify policy accept`` or the hook itself (the gate's ``deny_command``
    reading of a shell line, and the phrase in any parameter: a script that
    would run it), and naming the hook's state folder or its settings in a call
    that is not a read. These are speed bumps against an agent that can run any
    code as the user (docs/security.md): the closure is a state folder and
    settings the agent's tools cannot write."""

    def __init__(self, folder: Path, on_unknown: Decision, ask: Sequence[str]) -> None:
        self.folder = folder
        self.on_unknown = on_unknown
        self.ask = ask

    def gate(self) -> Any:
        from .plan.gate import CallGate
        from .rules.policy import PolicyEngine, load_policy_text

        rules = load_policy_text(GUARD_RULES, source="car-verify hook (its own rule)")
        return CallGate(PolicyEngine(rules), on_unknown=self.on_unknown, ask=self.ask)

    def places(self) -> list[str]:
        """The spellings of the state folder's path a call may use."""
        default = self.folder.parent.name == "hook" and self.folder.parent.parent.name == (
            "car-verify"
        )
        # the default root is protected from the state folder that holds it down:
        # ``cd ~/.local/state && rm -r car-verify`` names no deeper folder
        root = self.folder.parent.parent.parent if default else self.folder
        out = {str(root), str(self.folder)}
        with contextlib.suppress(OSError):
            out.add(os.path.realpath(root))
        for variable in ("HOME", "XDG_STATE_HOME"):
            base = os.environ.get(variable) or (
                os.path.expanduser("~") if variable == "HOME" else ""
            )
            if not base or base == "~":
                continue
            for place in list(out):
                with contextlib.suppress(ValueError):
                    rest = Path(place).relative_to(base).as_posix()
                    if rest != ".":
                        out.update((f"${variable}/{rest}", f"${{{variable}}}/{rest}"))
                        if variable == "HOME":
                            out.add(f"~/{rest}")
                    elif variable == "XDG_STATE_HOME":  # the state base itself
                        out.update((f"${variable}", f"${{{variable}}}"))
        if len(self.folder.name) >= 12:  # the project's own key: named only to reach it
            out.add(self.folder.name)
        if default:  # the default root, however its start is spelt
            out.add("car-verify/hook")
            if root.as_posix().endswith("/.local/state"):
                out.add(".local/state")
        return sorted(p for p in out if len(p) > 1)

    def segments(self) -> set[str]:
        """The names of the state folder's own path segments (and those of the
        default root above it): a path naming one through a part the hook cannot
        spell out (a variable it does not know, a glob) may be that folder."""
        out = {self.folder.name}
        if self.folder.parent.name == "hook" and self.folder.parent.parent.name == "car-verify":
            out.update(("car-verify", self.folder.parent.parent.parent.name))
            if self.folder.parent.parent.parent.as_posix().endswith("/.local/state"):
                out.add(".local")
        return out

    def unsure(self, tool: str, params: dict[str, Any]) -> list[Any]:
        """A call whose strings may name the state folder through a part the hook
        cannot spell out (``$STATE/car-verify``, ``~/.l*/state``), or whose shell line
        changes directory where the hook cannot follow it: into a folder named like a
        segment of the state folder's path or the agent's settings folder (``cd
        car-verify && cd hook``, ``cd .claude && ... > settings.json``), or to a place
        it cannot spell out (``cd $D``, ``cd c*``): undecided."""
        from .plan.gate import Denial

        if tool in READING_TOOLS:
            return []
        names = self.segments()
        guarded = names | {".claude", ".codex"}
        for text in _strings(params):
            spelt, unknown = _spelt(text)
            targets = [a or b for a, b in _CD.findall(text)]
            if targets and (
                any(_spelt(t)[1] for t in targets)
                or guarded & set(re.split(r"[\s/;&|<>()=:]+", spelt))
            ):
                return [
                    Denial(
                        "hook:state-folder",
                        "the line changes directory where the hook cannot follow what it "
                        "writes (a folder named like part of the hook's state folder or the "
                        "agent's settings, or a place it cannot spell out): write the path "
                        "in full instead",
                    )
                ]
            # a path (a word with a slash) holding both such a part and a segment
            paths = (w for w in re.split(r"[\s;&|<>()]+", spelt) if "/" in w) if unknown else ()
            if any(
                (_UNSPELT.search(path) or _VARIABLE.search(path))
                and names & set(re.split(r"[/=:]", path))
                for path in paths
            ):
                return [
                    Denial(
                        "hook:state-folder",
                        "the call may name the hook's state folder through a variable, a "
                        "glob or a substitution the hook cannot spell out",
                    )
                ]
        return []

    def denials(self, tool: str, params: dict[str, Any]) -> list[Any]:
        from .plan.gate import Denial

        raw = list(_strings(params))
        # each string as written and as a shell or a file tool would reach it
        strings = [*raw, *(_spelt(s)[0] for s in raw)]
        out = []
        named = [s for s in strings if "car-verify" in s.lower() or "car_verify" in s.lower()]
        # a linear scan of each string that names car-verify (one pattern spanning
        # the name and the phrase could backtrack over a long parameter)
        accept = re.compile(r"\bpolicy\W*accept\b|\baccept_policies\b", re.I)
        if any(accept.search(s) for s in named):
            out.append(
                Denial(
                    "hook:policy-accept",
                    "the call would accept the project's rules (`car-verify policy accept`): "
                    "the user runs that outside the agent",
                )
            )
        itself = re.compile(r"car[-_]verify([^\w/]+import)?[^\w/]{1,4}hook\b", re.I)
        if any(itself.search(s) for s in named):
            out.append(
                Denial(
                    "hook:hook",
                    "the call would run the hook itself (`car-verify hook`): only the agent's "
                    "own harness runs it, a forged event would change the session's trace",
                )
            )
        if tool in READING_TOOLS:
            return out
        places = self.places()
        places = [*places, *(_spelt(p)[0] for p in places)]
        resolved = _resolved(strings)
        roots = [p for p in places if p.startswith("/")]
        if any(p in s for s in strings for p in places) or any(
            r == root or r.startswith(root.rstrip("/") + "/") for r in resolved for root in roots
        ):
            out.append(
                Denial(
                    "hook:state-folder",
                    "the call names the hook's state folder (accepted rules, sessions): "
                    "only the hook writes there",
                )
            )
        if any(end in s.replace("\\", "/") for s in [*strings, *resolved] for end in SETTINGS):
            out.append(
                Denial(
                    "hook:settings",
                    "the call names the agent's hook settings: they are the user's to edit",
                )
            )
        return out


#: A directory change in a shell line, and its target as written (``cd X``,
#: ``pushd X``, ``builtin cd X``, ``git -C X``, ``make --directory=X``, ``env -C X``).
_CD = re.compile(
    r"(?:^|[\s;&|(`])(?:cd|pushd|chdir)\s+(?:-[LPe@]+\s+)*([^\s;&|)]+)"
    r"|\s(?:-C\s*|--directory[=\s]|--chdir[=\s])([^\s;&|)]+)"
)
_QUOTES = re.compile(r"\\(.)|['\"]", re.DOTALL)
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_TILDE = re.compile(r"(?:^|(?<=[\s=:(]))~([A-Za-z0-9_.-]*)(?=/|$|[\s;&|)])")
#: What the hook cannot spell out: another expansion, a substitution, a glob, a
#: brace expansion.
_UNSPELT = re.compile(r"\$[{(\[]|`|[*?]|\[[^\]]*\]|\{[^{}]*,[^{}]*\}")
_UP = re.compile(r"(?:^|(?<=/))(?!\.\.(?:/|$))[^/\s]+/\.\.(?:/|(?=[\s;&|)]|$))")


def _spelt(text: str) -> tuple[str, bool]:
    """``text`` with its paths spelt as a shell or a file tool reaches them: quotes
    and backslashes removed; ``~``, ``$HOME``, ``${XDG_STATE_HOME}`` and any other
    variable of the hook's environment put in; ``//``, ``/./`` and ``dir/..``
    collapsed. And whether a part of it cannot be spelt out (a variable the hook
    does not know, another expansion, a glob, a brace expansion)."""
    unknown = bool(_UNSPELT.search(text))
    text = _QUOTES.sub(lambda m: m.group(1) or "", text)
    home = os.environ.get("HOME") or os.path.expanduser("~")

    def variable(m: re.Match[str]) -> str:
        nonlocal unknown
        name = m.group(1) or m.group(2)
        value = os.environ.get(name) or (home if name == "HOME" else None)
        if value is None:
            unknown = True
            return m.group(0)
        return value

    def tilde(m: re.Match[str]) -> str:
        nonlocal unknown
        user = m.group(1)
        if not user:
            return home
        expanded = os.path.expanduser("~" + user)
        unknown = unknown or expanded.startswith("~")
        return expanded

    text = _TILDE.sub(tilde, _VARIABLE.sub(variable, text))
    text = re.sub(r"/{2,}", "/", text)
    while True:
        collapsed = _UP.sub("", re.sub(r"/\.(?=/|[\s;&|)]|$)", "", text))
        if collapsed == text:
            return text, unknown
        text = collapsed


#: The longest string whose path :func:`_resolved` follows (a path, not a file's content).
_PATH_MAX = 4096


def _resolved(strings: Sequence[str]) -> list[str]:
    """Each string that reads as one path (no blank, no line break, at most
    ``_PATH_MAX`` characters, with a slash) as the file system reaches it: symlinks
    followed, relative to the folder the hook runs in. A link the agent made in its
    workspace to the state folder or the settings leads there, whatever it is named."""
    out = []
    for text in strings:
        if "/" not in text or len(text) > _PATH_MAX or any(c.isspace() for c in text):
            continue
        with contextlib.suppress(OSError, ValueError):
            real = os.path.realpath(os.path.join(os.getcwd(), os.path.expanduser(text)))
            if real != text:
                out.append(real)
    return out


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, its object keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                yield str(key)
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)


# --- a session's state -------------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    """The hook's decision on one call: every rule set's verdict combined."""

    decision: Decision
    denied: list[Any]
    undecided: list[Any]

    def rules(self) -> list[str]:
        return list(dict.fromkeys(d.rule for d in (*self.denied, *self.undecided)))

    def reason(self) -> str:
        said = "; ".join(d.text() for d in (*self.denied, *self.undecided))
        if self.denied:
            return f"car-verify policy: {said}"
        return f"car-verify could not decide this call: {said} (answered {self.decision})"


class _State:
    """One session's gates (one per rule set in force), restored from and saved to
    its state file: each rule's own trace and rate-limit state, keyed by the
    rule's content (see :func:`~car_verify.rules.policy.state_keys`), and how much of the journal of
    outcomes it holds."""

    def __init__(
        self,
        rules: _InForce,
        saved: dict[str, Any] | None,
        markers: _Markers,
        on_unknown: Decision,
        ask: Sequence[str] = (),
    ) -> None:
        from .plan.gate import CallGate
        from .rules.policy import PolicyEngine, state_keys

        self.markers = markers
        self.warnings: list[str] = []
        self.gates: list[tuple[str, Any, list[str], list[str]]] = []
        for label, ruleset in rules.sets:
            engine = PolicyEngine(ruleset, clock=time.time)  # windows span processes
            gate = CallGate(engine, on_unknown=on_unknown, ask=ask)
            self.gates.append((label, gate, *state_keys(ruleset)))
        self.ask = tuple(ask)
        self.journal = 0 if saved is None else int(saved["journal"])
        if saved is None:
            return
        trace, windows = saved["trace"], saved["windows"]
        for _, gate, trace_keys, rate_keys in self.gates:
            gate.trace.restore(tuple(int(trace.get(key, 0)) for key in trace_keys))
            gate.engine.restore_windows(
                {
                    i: [float(t) for t in windows[key]]
                    for i, key in enumerate(rate_keys)
                    if key in windows
                }
            )
        known = {*trace, *windows, *saved.get("rules", [])}
        new = {k for _, _, t, r in self.gates for k in (*t, *r) if k not in known}
        if new and saved.get("rules"):
            self.warnings.append(
                f"car-verify: warning: {len(new)} rule(s) are new to this session (added or "
                "changed): their trace and rate-limit state starts empty"
            )

    def saved(self) -> dict[str, Any]:
        trace: dict[str, int] = {}
        windows: dict[str, list[float]] = {}
        keys: list[str] = []
        for _, gate, trace_keys, rate_keys in self.gates:
            keys += [*trace_keys, *rate_keys]
            for key, n in zip(trace_keys, gate.trace.state, strict=True):
                if n:
                    trace.setdefault(key, n)
            held = gate.engine.windows
            for i, key in enumerate(rate_keys):
                if i in held:
                    windows.setdefault(key, list(held[i]))
        return {
            "format": STATE_FORMAT,
            "rules": list(dict.fromkeys(keys)),
            "trace": trace,
            "windows": windows,
            "journal": self.journal,
        }

    # --- outcomes -------------------------------------------------------------------------------

    def fold(self, path: Path) -> None:
        """Record the outcomes appended to the journal since the state was saved. A
        record that cannot be read (a torn line) is an outcome lost: marked so."""
        try:
            with open(path, "rb") as journal:
                size = os.fstat(journal.fileno()).st_size
                if size < self.journal:
                    raise _BadState(
                        f"{path} is shorter than the session state says: outcomes were lost"
                    )
                journal.seek(self.journal)
                data = journal.read()
        except FileNotFoundError:
            if self.journal:
                raise _BadState(f"{path} is gone: the session's outcomes were lost") from None
            return
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        for line in complete.splitlines():
            record = _record(line)
            if record is None:
                self.markers.mark(None)
                continue
            for _, gate, _, _ in self.gates:
                gate.report(*record)
        self.journal += len(complete)

    def blocked(self, tool: str, params: dict[str, Any]) -> list[Any]:
        """The trace rules that read an outcome this session lost and govern this
        call: each denies it (the rule cannot be decided any more)."""
        from .plan.gate import Denial
        from .rules.trace import reads_outcome

        out = []
        for _, gate, _, _ in self.gates:
            for rule in gate.trace_rules:
                if not reads_outcome(rule) or not rule.call.matches(tool, params):
                    continue
                if self.markers.lost(rule.event.tool):
                    what = rule.event.tool or "a call"
                    out.append(
                        Denial(
                            rule.policy_name,
                            f"an outcome of {what} that this rule reads could not be saved "
                            "in this session: the rule cannot be decided, so the calls it "
                            "governs are denied until the session ends (fails closed)",
                        )
                    )
        return out

    # --- deciding -------------------------------------------------------------------------------

    def decide(self, tool: str, params: dict[str, Any], guard: _Guard) -> _Found:
        """Judge the call by every gate (the rule sets in force and the hook's own
        rule): it is admitted only when each would admit it, and then recorded by
        each; a call one denies is recorded by none."""
        blocked = self.blocked(tool, params)
        own = guard.denials(tool, params)
        unsure = [] if own else guard.unsure(tool, params)
        gates = [gate for _, gate, _, _ in self.gates]
        before = [gate.trace.state for gate in gates]
        verdicts = [(label, gate.decide(tool, params)) for label, gate, _, _ in self.gates]
        verdicts.append(("hook", guard.gate().decide(tool, params)))
        denied = [*blocked, *own]
        undecided = list(unsure)
        for _, verdict in verdicts:
            denied += verdict.denied
            undecided += verdict.undecided
        folder = {d.rule for label, v in verdicts if label == "folder" for d in v.denied}
        if any(label == "accepted" for label, _ in verdicts):  # name what the folder dropped
            from .plan.gate import Denial

            accepted = {d.rule for label, v in verdicts if label == "accepted" for d in v.denied}
            denied = [
                Denial(
                    d.rule, f"{d.reason} (an accepted rule the policies folder no longer holds so)"
                )
                if d.rule in accepted - folder
                else d
                for d in denied
            ]
        denied = list(dict.fromkeys(denied))
        if any(not d.rule.startswith("trace_rule:") for d in denied):
            # as one gate names them: a call the rules refuse is named by those alone
            denied = [d for d in denied if not d.rule.startswith("trace_rule:")]
        undecided = list(dict.fromkeys(undecided))
        decisions = {verdict.decision for _, verdict in verdicts}
        if unsure:
            decisions.add(guard.on_unknown)
        decision: Decision
        if blocked or own or "deny" in decisions:
            decision = "deny"
        elif denied and not all(d.rule.startswith(self.ask) for d in undecided):
            decision = "deny"  # asked for a rule's objection, but another is undecided
        elif "ask" in decisions:
            decision = "ask"
        else:
            decision = "allow"
        if decision == "deny":  # a gate that admitted it recorded it: undone
            for gate, state in zip(gates, before, strict=True):
                gate.trace.restore(state)
        return _Found(decision, denied, undecided)


def _record(line: bytes) -> tuple[str, dict[str, Any], str] | None:
    """One journal record (tool, parameters, outcome), or None: not one a hook wrote."""
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError, UnicodeError):
        return None
    if (
        isinstance(doc, dict)
        and set(doc) == {"tool", "params", "outcome"}
        and isinstance(doc["tool"], str)
        and isinstance(doc["params"], dict)
        and doc["outcome"] in ("succeeded", "failed")
    ):
        return doc["tool"], doc["params"], doc["outcome"]
    return None


class _Markers:
    """The marks of a session's lost outcomes: empty files (they need no data
    block, so they can be made on a full disk), one per tool, one for any tool,
    one for an outcome whose tool is unknown (a torn journal record)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.base = folder / f"{name}.lost"

    def _path(self, tool: str | None, *, unknown: bool = False) -> Path:
        from .base.digest import sha256_hex

        if unknown:
            return self.base.with_name(self.base.name + "-unknown")
        if tool is None:
            return self.base.with_name(self.base.name + "-any")
        digest = sha256_hex(tool.encode("utf-8", "surrogatepass"))[:16]
        return self.base.with_name(f"{self.base.name}-{digest}")

    def mark(self, tool: str | None) -> None:
        """Mark an outcome of ``tool`` lost (None: a record whose tool is unknown)."""
        paths = (
            [self._path(None, unknown=True)]
            if tool is None
            else [self._path(None), self._path(tool)]
        )
        for path in paths:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600))

    def lost(self, tool: str | None) -> bool:
        """Whether an outcome a rule whose event names ``tool`` (None: any) reads
        was lost."""
        return self._path(None, unknown=True).exists() or self._path(tool).exists()


def _after(
    folder: Path,
    name: str,
    where: str | None,
    configured: bool,
    tool: str,
    params: dict[str, Any],
    outcome: str,
) -> HookAnswer:
    """A call's reported outcome, appended to the session's journal (no lock: hooks
    at once lose none). Only the parameters the trace rules that read outcomes
    test are kept (all of them when the rules cannot be read now). An outcome that
    cannot be saved is marked lost, which denies the calls its rules govern."""
    from .base.errors import CarVerifyError
    from .rules.trace import reads_outcome

    keep: set[str] | None = None
    try:
        rules = _in_force(where, configured, folder, before=False).trace_rules()
    except (CarVerifyError, OSError, _BadAccepted):
        pass  # the next call is denied while they cannot be read: keep everything
    else:
        events = [r.event for r in rules if reads_outcome(r) and r.event.tool in (None, tool)]
        if not events:
            return HookAnswer(None)  # no rule in force reads this outcome
        keep = {t.param for event in events for t in event.tests}
    kept = params if keep is None else {k: v for k, v in params.items() if k in keep}
    line = json.dumps({"tool": tool, "params": kept, "outcome": outcome}) + "\n"
    data = line.encode("utf-8", "surrogatepass")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(folder / f"{name}.journal", flags, 0o600)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            raise OSError(f"wrote {written} of {len(data)} bytes")
        return HookAnswer(None)
    except OSError as err:
        why = err.strerror or str(err)
    said = (
        f"car-verify: the outcome of {tool} ({outcome}) could not be saved ({why}): the "
        "calls governed by the trace rules that read it are denied from now on in this session"
    )
    try:
        _Markers(folder, name).mark(tool)
    except OSError as err:
        said += (
            f"; it could not be marked lost either ({err.strerror or err}): free the state "
            "folder and start a new session"
        )
    return HookAnswer(None, warnings=[f"{said} (fails closed)"], message=said)


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
        and type(doc.get("journal")) is int
        and doc["journal"] >= 0
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
#: agent's own hook timeout, after which some agents run the call. Outcomes never
#: wait for it (they are appended to the journal).
LOCK_SECONDS = 5.0


@contextlib.contextmanager
def _session(
    folder: Path,
    name: str,
    rules: _InForce,
    on_unknown: Decision = ON_UNKNOWN,
    ask: Sequence[str] = (),
) -> Iterator[_State]:
    """The session's state, under an exclusive lock, its journal folded in, saved
    on the way out."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
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
        state = _State(rules, _read_state(path), _Markers(folder, name), on_unknown, ask)
        state.fold(folder / f"{name}.journal")
        yield state
        _replace(path, json.dumps(state.saved()))


# --- accepting the rules (``car-verify policy accept``) ----------------------------------------


@dataclass(slots=True)
class Accepted:
    """One project state folder's accepted rules, replaced: where, what was accepted
    before (None: nothing), what is now, and how the files changed."""

    state: Path
    before: _Snapshot | None
    now: _Snapshot
    rules: int
    changes: list[str]


def accept_policies(
    policies: str | os.PathLike[str] | None = None,
    *,
    state_dir: str | os.PathLike[str] | None = None,
) -> list[Accepted]:
    """Accept the rules of a policies folder for the agent hook, as they are now
    (``car-verify policy accept``; run by the user, outside the agent).

    ``policies``: the policies folder or a project holding ``.car/policies``
    (default: the nearest above the working directory). The accepted rules are
    written to ``state_dir`` when given (the hook's ``--state-dir``), else to every
    project state folder whose hook read this folder, and to the one a hook named
    with this folder (``--policies`` or ``$CLAUDE_PROJECT_DIR``) uses. A folder
    that does not load is an error (InputError), and nothing is written."""
    from .base.errors import InputError, UsageError
    from .rules.policy import load_policies

    if policies is not None and not os.path.isdir(policies):
        why = "is not a directory" if os.path.lexists(policies) else "no such folder"
        raise InputError(
            f"{why}: `car-verify policy accept DIR` names a policies folder, or a project "
            "holding .car/policies",
            source=os.fspath(policies),
        )
    loaded = load_policies(policies)
    found = loaded.directory
    if found is None:
        where = ", ".join(str(p) for p in loaded.searched[:3])
        raise UsageError(
            f"no .car/policies found (searched {where}): name the policies folder, "
            "`car-verify policy accept DIR`"
        )
    folders: list[Path] = []
    if state_dir is not None:
        folders.append(Path(state_dir))
    else:
        real = os.path.realpath(found)
        root = _state_root()
        with contextlib.suppress(OSError):
            for project in sorted(root.iterdir()):
                with contextlib.suppress(OSError, _BadAccepted):
                    snapshot = _read_snapshot(project)
                    if snapshot is not None and os.path.realpath(snapshot.policies) == real:
                        folders.append(project)
        named = root / _project_key(os.path.abspath(found))
        if named not in folders:
            folders.append(named)
    out = []
    for folder in folders:
        try:
            before = _read_snapshot(folder)
        except _BadAccepted:
            before = None
        now = _write_snapshot(folder, loaded, "car-verify policy accept")
        changes = _changes(before.files, now.files) if before is not None else []
        out.append(Accepted(folder, before, now, loaded.rules.count(), changes))
    return out


# --- the command ------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``car-verify hook`` (the CLI's subcommand and :func:`main`)."""
    p.add_argument(
        "--agent",
        choices=("auto", *AGENTS),
        default="auto",
        help="the agent whose hook format to answer in (default auto: a payload with "
        "model and turn_id is Codex's, any other Claude Code's)",
    )
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
        help="the project's accepted rules and sessions, outside the workspace (default: "
        "a folder per project under $XDG_STATE_HOME/car-verify/hook, else "
        "~/.local/state/car-verify/hook)",
    )
    p.add_argument(
        "--on-unknown",
        choices=("allow", "deny", "ask"),
        default=ON_UNKNOWN,
        help="the answer to a call a rule cannot decide, or that cannot be evaluated "
        "(default ask: the user's prompt, naming the rule; allow says so on every call)",
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
    p.add_argument(
        "--accept-edits",
        action="store_true",
        help="accept every edit of the policies folder as the user's (only for a folder "
        "the agent cannot write); by default a rule removed or weakened there stays in "
        "force until `car-verify policy accept`",
    )


def run(args: argparse.Namespace | SimpleNamespace) -> int:
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
        accept_edits=args.accept_edits,
    )
    for warning in result.warnings:
        sys.stderr.write(warning + "\n")
    if out:
        sys.stdout.write(out + "\n")
    return 0


def main(argv: Sequence[str]) -> int:
    """``car-verify hook ARGS`` without loading the rest of the command line: it
    runs once per tool call, so its start-up is the agent's wait: the usual
    arguments are read by :func:`fast_args`, anything else by the parser."""
    fast = fast_args(argv)
    if fast is not None:
        return _run_closed(fast)
    return _run_closed(_parsed(argv))


def _parser() -> argparse.ArgumentParser:
    """The hook's own parser (:func:`add_arguments`)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="car-verify hook",
        description="a coding agent's hook (Claude Code, Codex): the policies and trace "
        "rules before each tool call, and each call's outcome after it",
    )
    add_arguments(parser)
    return parser


def _parsed(argv: Sequence[str]) -> argparse.Namespace | int:
    """The arguments as the parser reads them, or the exit code of ``--help`` or of
    a usage error (said on stderr)."""
    try:
        return _parser().parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)


#: The options :func:`fast_args` reads that take a value: their destination and
#: choices (None: any value); and the flags. Those of :func:`add_arguments`.
_VALUED: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "--agent": ("agent", ("auto", *AGENTS)),
    "--profile": ("profile", ("car", "strict")),
    "--policies": ("policies", None),
    "--state-dir": ("state_dir", None),
    "--on-unknown": ("on_unknown", ("allow", "deny", "ask")),
    "--ask": ("ask", None),
}
_FLAGS = {"--grant": "grant", "--accept-edits": "accept_edits"}


def fast_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """The hook's arguments as :func:`add_arguments`' parser reads them, without
    importing or building it (a few milliseconds of every call): each option by its
    whole name, ``--name value`` or ``--name=value``, a value one of its choices and
    not starting with ``-``. None for anything else (``--help``, an abbreviation, a
    usage error): the parser reads those. ``tests/test_hook_startup.py`` holds the two
    to the same arguments."""
    out: dict[str, Any] = {
        "agent": "auto",
        "profile": None,
        "policies": None,
        "state_dir": None,
        "on_unknown": ON_UNKNOWN,
        "ask": None,
        "grant": False,
        "accept_edits": False,
    }
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        flag = _FLAGS.get(word)
        if flag is not None:
            out[flag] = True
            continue
        name, equals, value = word.partition("=")
        known = _VALUED.get(name)
        if known is None:
            return None
        if not equals:
            if i >= len(words):
                return None
            value = words[i]
            i += 1
        dest, choices = known
        if value.startswith("-") or (choices is not None and value not in choices):
            return None
        if dest == "ask":
            out["ask"] = [*(out["ask"] or ()), value]
        else:
            out[dest] = value
    return SimpleNamespace(**out)


def _run_closed(args: argparse.Namespace | SimpleNamespace | int) -> int:
    """:func:`run`, never a traceback (see :func:`main`); an int is an exit code."""
    if isinstance(args, int):
        return args
    try:
        return run(args)
    except Exception as err:  # never a traceback into the agent's transcript, and a
        # decision the agent reads all the same: deny (fail closed)
        result = _closed(f"{type(err).__name__}: {err}")
        sys.stderr.write(result.warnings[0] + "\n")
        sys.stdout.write(json.dumps(result.wire("claude")) + "\n")
        return 0
