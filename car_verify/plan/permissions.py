"""Permission tiers: who may authorize each action, whether it can be undone, and a
durable record of what a human decided.

``permission_classify`` answers two questions per action, as CAR's function of the
same name does:

- ``required_tier``: ``read_only`` < ``sandbox_edit`` < ``full_access``. A
  ``state_read`` or an ``assertion`` needs ``read_only``, a ``state_write``
  ``sandbox_edit``; a ``tool_call`` needs at least ``sandbox_edit``, and
  ``full_access`` when any signal of :data:`RULES` says so. The signals, each
  matched against the part of the action that carries the evidence: whole
  **segments of the tool name** (``deploy_service`` -> ``deploy``, ``service``;
  ``sendEmail`` -> ``send``, ``email``), the **command line** (the text of a
  top-level ``command`` / ``args`` / ``argv`` / ``flags`` / ... parameter),
  **parameter keys** at any depth (``api_key``, ``auth.token``), **target paths**
  (the text of a ``path`` / ``file`` / ``dest`` / ... parameter naming
  ``~/.ssh``, ``*.pem``, ``.aws/credentials``) and a few **always-dangerous
  phrases** anywhere (``drop table``, ``rm -rf``, ``git push``).
- ``reversibility``: ``reversible`` / ``compensable`` / ``irreversible``, from the
  tool name's segments and the same phrases, in this order: a destructive phrase
  or name (``delete``, ``rm -rf``) makes it ``irreversible``; else a compensable
  one (``create``, ``git push``) ``compensable``; else a mutating phrase
  (``mv``, ``chmod``, ``alter table``) ``irreversible``; else a reading name
  (``read``, ``list``) ``reversible``; else ``irreversible``: an unrecognised
  tool is assumed to be one there is no undoing. A ``state_write`` (scope
  restore undoes it), a ``state_read`` and an ``assertion`` are ``reversible``.

The classifier is a keyword heuristic, CAR's (reconstructed by calling its
documented function; docs/compat.md says how far the two agree). The rules are
data, in :data:`RULES`; nothing else in this module names a keyword.

``permission_evaluate`` gates each action against a granted standing tier:
``allow`` when the tier covers it, ``needs_approval`` when it does not, and always
for a ``full_access`` action (a human decides those), unless the approval
:class:`Ledger` holds an approval of the same operation at or above its tier;
a recorded rejection is a ``deny``. An operation is named by its fingerprint
``<type>|<tool or ->|<canonical JSON of the parameters, keys sorted>``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from ..base.display import HtmlDisplay
from ..base.errors import InputError, OutputError, UsageError, deep_values_are_input_errors
from ..ir.model import Action, ActionProposal, Reversibility, load

TIERS: Final = ("read_only", "sandbox_edit", "full_access")
_RANK: Final = {tier: rank for rank, tier in enumerate(TIERS)}

Signal = Literal["tool_segment", "command", "param_key", "target_path", "phrase"]
Effect = Literal["full_access", "irreversible", "compensable", "reversible", "mutating"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One keyword: where it is looked for, and what finding it there implies.

    ``signal`` says where (see the module docs). ``pattern`` is matched as a whole
    segment (``tool_segment``; ``param_key``: a segment of the key, or all its
    segments run together), and as a substring of the lowercased text otherwise;
    a text is its strings and numbers joined by spaces, followed by one space, so
    ``"curl "`` matches ``curl`` as a word at its end but not ``curlx``.
    ``effects`` are a tier (``full_access``) and a reversibility: ``irreversible``
    and ``compensable`` decide it, ``mutating`` rules ``reversible`` out,
    ``reversible`` is the reading names.
    """

    signal: Signal
    pattern: str
    effects: tuple[Effect, ...]


def _rules(signal: Signal, effects: tuple[Effect, ...], patterns: str) -> list[Rule]:
    return [Rule(signal, p.replace("␣", " "), effects) for p in patterns.split()]


F: Final[tuple[Effect, ...]] = ("full_access",)
#: The classifier's keywords (``␣`` is a space). Found by calling
#: ``car_runtime.permission_classify`` (0.52.1) on words, pairs and paths; see
#: docs/permissions.md for how, and tests/test_permissions.py for the check.
RULES: Final[tuple[Rule, ...]] = tuple(
    # --- tool-name segments -------------------------------------------------------------
    _rules("tool_segment", ("full_access", "irreversible"), """
        charge delete destroy drop payment publish refund rm rmdir send truncate unlink
        wipe wire""")
    + _rules("tool_segment", ("full_access", "compensable"), "deploy push rollout upload")
    + _rules("tool_segment", F, """
        chmod chown clean credential credentials curl dd download egress helm kubectl
        passwd password release reset secret secrets sudo terraform wget""")
    + _rules("tool_segment", ("irreversible",), """
        announce broadcast checkout dispatch enqueue erase mkfs notify pay purge revoke
        sendmail shred unlock""")
    + _rules("tool_segment", ("compensable",), """
        allocate attach clone commit create deployment deployments disable enable grant
        insert install mount patch provision put register restart start stop subscribe
        tag update upgrade upsert""")
    + _rules("tool_segment", ("reversible",), """
        analyze cat check classify count describe diff exists fetch find get grep head
        inspect list load lookup parse peek query read resolve scan search select show
        stat status summarize tail validate view""")
    # --- the command line: a top-level parameter named in _COMMAND_KEYS ----------------
    + _rules("command", F, """
        apikey apply aws␣ az␣ charge credential curl dd␣ delete deploy destroy download
        drop egress email fetch format gcloud helm http kubectl network password payment
        publish push refund release request rm␣ rmdir rollout secret send setuid sms ssh
        sudo token transfer truncate unlink upload wget wipe wire""")
    # --- parameter keys, at any depth ------------------------------------------------
    + _rules("param_key", F, """
        apikey authorization bearer credential credentials passwd password privatekey
        secret secrets token""")
    # --- declared target paths: a top-level parameter named in _PATH_KEYS -------------
    + _rules("target_path", F, """
        ssh id_rsa id_dsa id_ecdsa id_ed25519 .pem .p12 .pfx .env .netrc .npmrc .pgpass
        .kube/config .gnupg .docker/config.json service-account keychain credential
        secret password""")
    # --- phrases, anywhere in the tool name and the parameters ------------------------
    + _rules("phrase", ("full_access", "irreversible"), """
        mkfs dd␣if= drop␣table drop␣database delete␣from truncate␣table rm␣-rf rm␣-r␣
        kubectl␣delete terraform␣destroy""")
    + _rules("phrase", ("irreversible",), "shred␣ rm␣-f␣")
    + _rules("phrase", ("full_access", "compensable"), """
        git␣push docker␣push kubectl␣apply kubectl␣rollout terraform␣apply helm␣install
        helm␣upgrade""")
    + _rules("phrase", ("compensable",), "git␣commit git␣tag")
    + _rules("phrase", ("full_access", "mutating"), "chmod␣ chown␣")
    + _rules("phrase", F, """
        aws␣ curl␣ gcloud␣ helm␣ kubectl␣ sudo␣ terraform␣ wget␣ setuid drop␣schema
        git␣reset git␣clean npm␣publish cargo␣publish rm␣-fr shred␣-""")
    + _rules("phrase", ("mutating",), """
        grant␣ revoke␣ mv␣ rm␣- drop␣index drop␣view alter␣table update␣set␣ create␣table
        create␣database create␣index""")
)  # fmt: skip

#: The parameters whose text is a command line (exact, top-level keys).
_COMMAND_KEYS: Final = frozenset(
    {"args", "arguments", "argv", "bin", "binary", "cmd", "command", "executable", "flags"}
    | {"options", "program"}
)
#: The parameters whose text is a target path (top-level keys, lowercased, camelCase
#: read as snake_case).
_PATH_KEYS: Final = frozenset(
    {"cwd", "dest", "destination", "dir", "directory", "file", "file_path", "filename"}
    | {"filepath", "files", "folder", "out", "output", "output_path", "path", "paths"}
    | {"source", "src", "target"}
)


@dataclass(frozen=True, slots=True)
class _Table:
    """:data:`RULES` indexed for matching."""

    segments: dict[str, tuple[Effect, ...]]
    keys: dict[str, tuple[Effect, ...]]
    command: tuple[Rule, ...]
    paths: tuple[Rule, ...]
    phrases: tuple[Rule, ...]

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> _Table:
        segments: dict[str, tuple[Effect, ...]] = {}
        keys: dict[str, tuple[Effect, ...]] = {}
        by: dict[str, list[Rule]] = {"command": [], "target_path": [], "phrase": []}
        for rule in rules:
            if rule.signal == "tool_segment":
                segments[rule.pattern] = segments.get(rule.pattern, ()) + rule.effects
            elif rule.signal == "param_key":
                keys[rule.pattern] = keys.get(rule.pattern, ()) + rule.effects
            else:
                by[rule.signal].append(rule)
        return cls(
            segments, keys, tuple(by["command"]), tuple(by["target_path"]), tuple(by["phrase"])
        )


_TABLE: Final = _Table.of(RULES)
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_WORD: Final = re.compile(r"[^0-9a-zA-Z\u0080-\U0010ffff]+")


def segments(name: str) -> list[str]:
    """``sendEmail`` / ``send-email`` / ``SEND_EMAIL`` -> ``["send", "email"]``.

    Split at every run of characters that are not letters or digits, and where a
    lowercase letter meets an uppercase one (``HTTPSend`` stays one segment)."""
    words: list[str] = []
    for part in _NOT_WORD.split(name):
        words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


def _number(value: int | float, exact: bool = False) -> str:
    """A number as the runtime writes it (serde_json): ``1.0``, ``1e+16``, ``1.5e-7``.

    An integer outside the 64-bit range becomes a float, as there (so two such
    integers can share a text); ``exact`` writes every integer's own digits."""
    if isinstance(value, int):
        if exact or -(2**63) <= value < 2**64:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    power = int(exponent) if e else 0
    if e:  # Python switches to exponents at 1e16 and below 1e-4; the runtime below 1e-5
        if -5 <= power < 16:
            text = _positional(value, mantissa.replace(".", "").lstrip("-"), power)
        else:
            sign = "+" if power > 0 else "-"
            text = f"{mantissa}e{sign}{abs(power)}"
    return text


def _positional(value: float, digits: str, power: int) -> str:
    """The digits of a float whose exponent is ``power``, written out: ``1``, -5 -> ``0.00001``."""
    sign = "-" if value < 0 else ""
    digits = digits.rstrip("0") or "0"
    if power < 0:
        return f"{sign}0.{'0' * (-power - 1)}{digits}"
    whole = digits[: power + 1].ljust(power + 1, "0")
    rest = digits[power + 1 :]
    return f"{sign}{whole}.{rest or '0'}"


def canonical_json(value: Any, exact: bool = False) -> str:
    """Compact JSON with sorted keys, numbers as the runtime writes them (``exact``:
    every integer with its own digits, beyond 64 bits too).

    The parameters' part of a fingerprint: equal parameters in any key order give
    the same text, and the same text as CAR's."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return _number(value, exact)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = sorted(value.items())
        return (
            "{"
            + ",".join(f"{canonical_json(k)}:{canonical_json(v, exact)}" for k, v in items)
            + "}"
        )
    return "[" + ",".join(canonical_json(v, exact) for v in value) + "]"


def fingerprint(action: Action) -> str:
    """``tool_call|deploy|{"env":"prod"}``: what an approval is recorded against, as
    the runtime writes it (its numbers: an integer past 64 bits as a float)."""
    return f"{action.type}|{_tool(action)}|{canonical_json(action.parameters)}"


def ledger_key(action: Action) -> str:
    """What a recorded decision must match: the fingerprint with every integer
    exact, so that approving a payment to one 20-digit account approves no other
    (the runtime's fingerprint writes both as the same float)."""
    return f"{action.type}|{_tool(action)}|{canonical_json(action.parameters, exact=True)}"


def _tool(action: Action) -> str:
    """The tool as a fingerprint names it: ``-`` when there is none (an empty name
    is written as it is, empty, as the runtime writes it)."""
    return "-" if action.tool is None else action.tool


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield _number(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def _text(value: Any) -> str:
    """A parameter as the rules read it: its strings and numbers, lowercased, each
    followed by a space."""
    return "".join(leaf.lower() + " " for leaf in _leaves(value))


def _items(value: Any) -> Iterator[tuple[str, Any]]:
    """Every ``(key, value)`` of the parameters, at any depth."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield key, item
            yield from _items(item)
    elif isinstance(value, list):
        for item in value:
            yield from _items(item)


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


@dataclass(frozen=True, slots=True)
class Classification:
    """One action's row: CAR's ``{action_id, tool, required_tier, reversibility,
    missing_compensation}``, plus the rules that decided it (``because``)."""

    action_id: str
    tool: str | None
    required_tier: str
    reversibility: str
    missing_compensation: bool
    because: tuple[str, ...] = ()
    #: Irreversible because a rule says so (a destructive or mutating keyword), not
    #: only because nothing recognised the tool.
    irreversible_by_rule: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "action_id": self.action_id,
            "tool": self.tool,
            "required_tier": self.required_tier,
            "reversibility": self.reversibility,
            "missing_compensation": self.missing_compensation,
        }


def classify_action(action: Action) -> Classification:
    """One action's tier and reversibility (see the module docs)."""
    missing = action.missing_required_compensation()
    if action.type != "tool_call":
        tier = "sandbox_edit" if action.type == "state_write" else "read_only"
        return Classification(action.id, action.tool, tier, "reversible", missing)
    found: list[tuple[str, tuple[Effect, ...]]] = []
    name = action.tool or ""
    for segment in segments(name):
        if segment in _TABLE.segments:
            found.append((f"tool name segment {segment!r}", _TABLE.segments[segment]))
    params = action.parameters
    texts = [name.lower()] + [_text(v) for v in params.values()]
    for rule in _TABLE.phrases:
        if any(rule.pattern in t for t in texts):
            found.append((f"phrase {rule.pattern.strip()!r}", rule.effects))
    for key, value in params.items():
        if key in _COMMAND_KEYS:
            text = _text(value)
            found.extend(
                (f"command {key!r} contains {r.pattern.strip()!r}", r.effects)
                for r in _TABLE.command
                if r.pattern in text
            )
    for key, value in _items(params):
        if _snake(key) in _PATH_KEYS:
            text = _text(value)
            found.extend(
                (f"path {key!r} names {r.pattern!r}", r.effects)
                for r in _TABLE.paths
                if r.pattern in text
            )
        parts = segments(key)
        for word in {*parts, "".join(parts)}:
            if word in _TABLE.keys:
                found.append((f"parameter key {key!r}", _TABLE.keys[word]))
    effects = {effect for _, implied in found for effect in implied}
    tier = "full_access" if "full_access" in effects else "sandbox_edit"
    if "irreversible" in effects:
        worst = "irreversible"
    elif "compensable" in effects:
        worst = "compensable"
    elif "mutating" in effects or "reversible" not in effects:
        worst = "irreversible"
    else:
        worst = "reversible"
    why = tuple(dict.fromkeys(reason for reason, e in found if set(e) & {"full_access", worst}))
    by_rule = worst == "irreversible" and bool(effects & {"irreversible", "mutating"})
    return Classification(action.id, action.tool, tier, worst, missing, why, by_rule)


@dataclass(frozen=True, slots=True)
class PermissionReport(HtmlDisplay):
    """``permission_classify``'s answer: the rows and the proposal's declared
    rollback contract (the worst *declared* reversibility; ``reversible`` for an
    empty batch), as the daemon's ``permission.classify`` returns it."""

    classifications: list[Classification]
    declared_rollback_contract: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "classifications": [c.to_dict() for c in self.classifications],
            "declared_rollback_contract": self.declared_rollback_contract,
        }

    def explain(self) -> str:
        """One line per action (its tier, its reversibility and why), then the
        declared rollback contract: what ``car-verify permissions`` prints."""
        lines = []
        for row in self.classifications:
            why = f" ({'; '.join(row.because)})" if row.because else ""
            missing = ", compensable without a compensation" if row.missing_compensation else ""
            lines.append(f"{row.action_id}: {row.required_tier}, {row.reversibility}{missing}{why}")
        lines.append(f"declared rollback contract: {self.declared_rollback_contract}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


@deep_values_are_input_errors
def permission_classify(proposal: Any) -> PermissionReport:
    """Each action's required tier and reversibility (see the module docs). A
    proposal the runtime rejects (an unknown action type) is an input error, as
    it is there."""
    model = _as_the_runtime_reads(proposal)
    return PermissionReport(
        [classify_action(a) for a in model.actions], _declared_contract(model).value
    )


def _declared_contract(model: ActionProposal) -> Reversibility:
    worst = Reversibility.REVERSIBLE
    for action in model.actions:
        if action.reversibility.rank > worst.rank:
            worst = action.reversibility
    return worst


# --- the ledger -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One human decision, as CAR's ledger stores it."""

    fingerprint: str
    required_tier: str
    decision: Literal["approved", "rejected"]
    reviewer: str
    reason: str
    evidence: str | None = None
    decided_at: str = ""
    #: The exact key (:func:`ledger_key`) when it differs from the fingerprint.
    exact: str | None = None

    @property
    def key(self) -> str:
        """What the decision matches: its exact key, else its fingerprint."""
        return self.exact or self.fingerprint

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "fingerprint": self.fingerprint,
            "required_tier": self.required_tier,
            "decision": self.decision,
            "reviewer": self.reviewer,
            "reason": self.reason,
            "evidence": self.evidence,
            "decided_at": self.decided_at,
        }
        if self.exact is not None:
            doc["exact"] = self.exact
        return doc


_RECORD_FIELDS: Final = ("fingerprint", "required_tier", "decision", "reviewer", "reason")


def check_tier(tier: str, where: str = "granted tier") -> str:
    """``tier`` if it is one of :data:`TIERS`; a UsageError otherwise."""
    if tier not in _RANK:
        raise UsageError(
            f"invalid {where} {tier!r}; expected read_only, sandbox_edit or full_access"
        )
    return tier


class Ledger:
    """An append-only JSON-lines file of approvals, the runtime's format.

    Each decision is one line, written with a single ``write`` to a file opened
    for appending and flushed to disk before :meth:`record` returns, so a decision
    survives a restart, and two writers never interleave within a line. A line a
    killed writer left unfinished is skipped (its number is kept in :attr:`torn`),
    and the next record starts on a line of its own. The last decision about a
    fingerprint is the one that counts. Reading is incremental: each lookup reads
    only what was appended since the last one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        #: Line numbers (1-based) that hold no record: torn or foreign lines.
        self.torn: list[int] = []
        self._latest: dict[str, ApprovalRecord] = {}
        self._offset = 0  # bytes read so far, always at the start of a line
        self._lines = 0  # lines read so far

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _refresh(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        except OSError as error:
            problem = f"cannot read the ledger: {error.strerror}"
            raise InputError(problem, source=str(self.path)) from None
        end = data.rfind(b"\n") + 1  # a last line without its newline may be being written
        for n, line in enumerate(data[:end].split(b"\n")[:-1], self._lines + 1):
            record = _parse_record(line)
            if record is not None:
                self._latest[record.key] = record
            elif line.strip():
                self.torn.append(n)
        self._offset += end
        self._lines += data.count(b"\n", 0, end)

    def lookup(self, key: str) -> ApprovalRecord | None:
        """The last decision recorded for ``key`` (a fingerprint, or the exact key
        :func:`ledger_key` gives an action), or None."""
        self._refresh()
        return self._latest.get(key)

    def records(self) -> list[ApprovalRecord]:
        """The standing decision for every fingerprint, in the order first decided."""
        self._refresh()
        return list(self._latest.values())

    def record(
        self,
        fingerprint: str,
        required_tier: str,
        approve: bool,
        reviewer: str,
        reason: str,
        evidence: str | None = None,
        exact: str | None = None,
    ) -> ApprovalRecord:
        """Append a decision and return it (``exact``: its exact key, when it differs
        from the fingerprint)."""
        entry = ApprovalRecord(
            fingerprint,
            check_tier(required_tier, "required tier"),
            "approved" if approve else "rejected",
            reviewer,
            reason,
            evidence,
            datetime.now(UTC).isoformat(),
            None if exact == fingerprint else exact,
        )
        line = json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        self._append(line)
        return entry

    def _append(self, line: str) -> None:
        """Append one record, all or nothing: a short write or a failed flush takes
        the partial record back off the file (under the file's lock, so no other
        writer's record is touched) and raises OutputError; a record is never left
        half written by a full disk."""
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            raise OutputError(
                f"cannot open the ledger: {error.strerror}", source=str(self.path)
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and _last_byte(self.path, size) != b"\n":
                line = "\n" + line  # a killed writer's unfinished line stays on its own
            data = line.encode("utf-8")
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, f"wrote {written} of {len(data)} bytes")
                os.fsync(fd)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)  # the record goes whole or not at all
                    os.fsync(fd)
                raise OutputError(
                    f"the decision was not recorded: {error.strerror or error}",
                    source=str(self.path),
                ) from None
        finally:
            os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1)


def _parse_record(line: bytes) -> ApprovalRecord | None:
    try:
        doc = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in _RECORD_FIELDS):
        return None
    if doc["decision"] not in ("approved", "rejected") or doc["required_tier"] not in _RANK:
        return None
    evidence, exact = doc.get("evidence"), doc.get("exact")
    return ApprovalRecord(
        doc["fingerprint"],
        doc["required_tier"],
        doc["decision"],
        doc["reviewer"],
        doc["reason"],
        evidence if isinstance(evidence, str) else None,
        str(doc.get("decided_at", "")),
        exact if isinstance(exact, str) else None,
    )


def open_ledger(ledger: Ledger | str | os.PathLike[str] | None) -> Ledger | None:
    """A :class:`Ledger` for a path (None stays None)."""
    if ledger is None or isinstance(ledger, Ledger):
        return ledger
    return Ledger(ledger)


@deep_values_are_input_errors
def record_decision(
    action: Any,
    approve: bool,
    reviewer: str,
    reason: str,
    ledger: Ledger | str | os.PathLike[str],
    evidence: str | None = None,
) -> ApprovalRecord:
    """Record a human's decision about ``action`` (an Action or its JSON) at the tier
    the classifier gives it; CAR's ``permission_record_decision``."""
    if isinstance(action, Action):
        model = action
    else:
        model = load({"id": "record", "source": "record", "actions": [action]}).actions[0]
    row = classify_action(model)
    store = open_ledger(ledger)
    assert store is not None
    return store.record(
        fingerprint(model),
        row.required_tier,
        approve,
        reviewer,
        reason,
        evidence,
        exact=ledger_key(model),
    )


@dataclass(frozen=True, slots=True)
class Decision:
    """One action's gate decision, CAR's row shape."""

    action_id: str
    decision: Literal["allow", "needs_approval", "deny"]
    required: str
    granted: str | None
    fingerprint: str
    reversibility: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "action_id": self.action_id,
            "decision": self.decision,
            "fingerprint": self.fingerprint,
        }
        if self.granted is not None:
            doc["granted"] = self.granted
        if self.reason is not None:
            doc["reason"] = self.reason
        doc["required"] = self.required
        doc["reversibility"] = self.reversibility
        return doc


def decide(
    row: Classification, fp: str, granted: str, store: Ledger | None, key: str | None = None
) -> Decision:
    """The gate's decision for one classified action (``key``: what a recorded
    decision must match, the fingerprint by default)."""
    required = row.required_tier
    record = store.lookup(key or fp) if store is not None else None
    if record is not None and record.decision == "rejected":
        reason = f"previously rejected by {record.reviewer} ({record.reason})"
        return Decision(row.action_id, "deny", required, None, fp, row.reversibility, reason)
    escalates = required == "full_access" or _RANK[required] > _RANK[granted]
    if not escalates:
        return Decision(row.action_id, "allow", required, granted, fp, row.reversibility)
    if record is not None:
        if _RANK[record.required_tier] >= _RANK[required]:
            return Decision(row.action_id, "allow", required, granted, fp, row.reversibility)
        reason = (
            f"operation reclassified {record.required_tier} → {required} since it was "
            "approved; re-approval required"
        )
    elif required == "full_access":
        reason = "full_access actions require human approval before execution"
    else:
        reason = f"action requires {required} but session is granted only {granted}"
    return Decision(
        row.action_id, "needs_approval", required, granted, fp, row.reversibility, reason
    )


@deep_values_are_input_errors
def permission_evaluate(
    proposal: Any, granted_tier: str, ledger: Ledger | str | os.PathLike[str] | None = None
) -> list[Decision]:
    """Each action's gate decision against ``granted_tier`` (see the module docs);
    a proposal the runtime rejects is an input error, as it is there."""
    return evaluate_actions(_as_the_runtime_reads(proposal), granted_tier, ledger)


def _as_the_runtime_reads(proposal: Any) -> ActionProposal:
    from ..semantics.car import CAR

    model = load(proposal)
    CAR.refuse(model)
    return model


def evaluate_actions(
    model: ActionProposal, granted_tier: str, ledger: Ledger | str | os.PathLike[str] | None = None
) -> list[Decision]:
    """:func:`permission_evaluate` of a modelled proposal, whatever its action types
    (the executor gates a plan its profile has already judged)."""
    granted = check_tier(granted_tier)
    store = open_ledger(ledger)
    return [
        decide(classify_action(a), fingerprint(a), granted, store, ledger_key(a))
        for a in model.actions
    ]


def decisions(approvals: Any) -> dict[str, str]:
    """Fingerprint -> ``approved`` | ``rejected``, the last decision about each, from
    a :class:`Ledger`, a path to one, or an array of approval records (the
    runtime's ``approvals_json``, as text or parsed); None: no decisions."""
    if approvals is None:
        return {}
    if isinstance(approvals, Ledger):
        return {r.fingerprint: r.decision for r in approvals.records()}
    if isinstance(approvals, os.PathLike):
        return decisions(Ledger(approvals))
    if isinstance(approvals, (str, bytes)):
        approvals = json.loads(approvals)
    if not isinstance(approvals, list):
        raise InputError("expected an array of approval records", ["approvals"])
    out: dict[str, str] = {}
    for n, record in enumerate(approvals):
        if not isinstance(record, Mapping) or not isinstance(record.get("fingerprint"), str):
            raise InputError(
                "expected an approval record {fingerprint, decision, ...}", ["approvals", n]
            )
        decision = record.get("decision")
        if decision not in ("approved", "rejected"):
            raise InputError("expected approved or rejected", ["approvals", n, "decision"])
        out[record["fingerprint"]] = decision  # the last decision stands
    return out


@dataclass(slots=True)
class GateDecision:
    """A gate's verdict on a report, the runtime's ``{action, blocked,
    needs_approval, reason}`` (the flow and intent gates)."""

    action: Literal["allow", "require_approval", "block"]
    blocked: list[dict[str, Any]]
    needs_approval: list[dict[str, Any]]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "blocked": self.blocked,
            "needs_approval": self.needs_approval,
            "reason": self.reason,
        }


def settle(
    decision: Any,
    fingerprint: Callable[[Mapping[str, Any]], str],
    approvals: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A gate's decision (a :class:`GateDecision`, its dict, or that as JSON text)
    against the recorded human decisions (:func:`decisions`): what stays blocked (the
    gate's blocks and every rejected hazard) and the pending ``{fingerprint,
    violation}`` (an approved hazard is neither). Every gate's enforcement settles
    its approvals here."""
    if isinstance(decision, GateDecision):
        doc: Mapping[str, Any] = decision.to_dict()
    elif isinstance(decision, (str, bytes)):
        from ..ir.model import read_json

        doc = read_json(decision)
    else:
        doc = decision
    decided = decisions(approvals)
    blocked: list[dict[str, Any]] = [*(doc.get("blocked") or [])]
    pending: list[dict[str, Any]] = []
    for violation in doc.get("needs_approval") or []:
        mark = fingerprint(violation)
        verdict = decided.get(mark)
        if verdict == "rejected":
            blocked.append(dict(violation))
        elif verdict != "approved":
            pending.append({"fingerprint": mark, "violation": dict(violation)})
    return blocked, pending
