"""``car-verify lint``: check the proposals kept in a repository, like ruff or mypy.

Files and folders (recursively): ``.json`` (one proposal), ``.jsonl`` (one per
line), ``.yaml`` / ``.yml`` (one per document); which files a folder contributes
(``include``, ``exclude``, ``.gitignore``) is decided in :mod:`car_verify.corpora.discover`.
Every finding carries the file, line and column of the action it concerns. A
file that does not parse or is not a proposal is reported with its path and
line, and linting goes on.

Configuration comes from ``[tool.car-verify]`` in ``pyproject.toml`` or from
``.car/verify.toml``, the nearest found walking up from the working directory
(``.car/verify.toml`` first when a directory has both). Unknown keys and wrong
types are errors naming the file and key. Command-line flags win over the file.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.codes import CODES
from ..base.config import ProfileName, find_config, read_settings, setting_profile
from ..base.errors import InputError, format_path, is_too_deep, json_pointer, too_deep
from ..base.findings import Issue, Location, Severity
from ..semantics.profiles import DEFAULT_PROFILE
from .discover import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Discovery, Selection, discover

__all__ = [
    "Baseline",
    "LintConfig",
    "LintReport",
    "find_config",
    "lint_paths",
    "load_config",
]


# --- configuration ----------


@dataclass(frozen=True)
class LintConfig:
    """Settings (paths resolved against the configuration file's directory)."""

    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None
    tools: tuple[Path, ...] = ()
    state: Path | None = None
    max_actions: int | None = None
    policies: Path | None = None
    #: Tool labels and a flow policy for the flow pass (``docs/flow.md``).
    labels: Path | None = None
    flow_policy: Path | None = None
    #: The user's declared intent for the intent pass (``docs/intent.md``).
    intent: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, str] = field(default_factory=dict)
    per_path_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    repeat_threshold: int = 3
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    fail_on: str = "error"
    #: ``car`` or ``strict`` (docs/semantics.md §9); ``None``: not set here.
    profile: ProfileName | None = None


_KEYS = {
    "tools",
    "state",
    "max-actions",
    "policies",
    "labels",
    "flow-policy",
    "intent",
    "select",
    "ignore",
    "severity",
    "per-path-ignores",
    "repeat-threshold",
    "include",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "force-exclude",
    "fail-on",
    "profile",
}
_LEVELS = ("error", "warning", "info")


def load_config(path: str | os.PathLike[str] | None = None) -> LintConfig:
    """Read a configuration file strictly (or the defaults when ``path`` is None)."""
    if path is None:
        return LintConfig()
    file = Path(path).resolve()
    doc, prefix = read_settings(file)
    root = file.parent.parent if file.parent.name == ".car" else file.parent

    def fail(key: str, problem: str) -> InputError:
        return InputError(problem, [*prefix, key], source=str(file))

    for key in doc:
        if key not in _KEYS:
            near = difflib.get_close_matches(key, sorted(_KEYS), n=1)
            said = f"did you mean {near[0]!r}? " if near else ""
            raise fail(key, f"unknown key ({said}expected one of {', '.join(sorted(_KEYS))})")

    def strings(key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = doc.get(key, list(default))
        if isinstance(value, str) and key == "tools":
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(key, "expected an array of strings")
        return tuple(value)

    def flag(key: str, default: bool) -> bool:
        value = doc.get(key, default)
        if not isinstance(value, bool):
            raise fail(key, "expected true or false")
        return value

    def whole(key: str, default: int | None, minimum: int) -> int | None:
        value = doc.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise fail(key, f"expected an integer >= {minimum}")
        return value

    def path_of(key: str) -> Path | None:
        value = doc.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise fail(key, "expected a path (a string)")
        return (root / value).resolve()

    for key in ("select", "ignore"):
        unknown = unknown_codes(strings(key))
        if unknown:
            raise fail(key, f"unknown code {unknown[0]!r}; `car-verify codes` lists them")
    severity = doc.get("severity", {})
    if not isinstance(severity, dict):
        raise fail("severity", 'expected a table of code = "error" | "warning" | "info"')
    for code, level in severity.items():
        if level in _LEVELS and unknown_codes([code]):
            raise InputError(
                f"unknown code {code!r}; `car-verify codes` lists them",
                [*prefix, "severity", code],
                source=str(file),
            )
        if level not in _LEVELS:
            raise InputError(
                f"expected one of {', '.join(_LEVELS)}",
                [*prefix, "severity", code],
                source=str(file),
            )
    per_path = doc.get("per-path-ignores", {})
    if not isinstance(per_path, dict):
        raise fail("per-path-ignores", "expected a table of glob = [codes]")
    for glob, codes in per_path.items():
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise InputError(
                "expected an array of codes", [*prefix, "per-path-ignores", glob], source=str(file)
            )
        unknown = unknown_codes(codes)
        if unknown:
            raise InputError(
                f"unknown code {unknown[0]!r}; `car-verify codes` lists them",
                [*prefix, "per-path-ignores", glob],
                source=str(file),
            )
    profile = setting_profile(doc, prefix, file)
    fail_on = doc.get("fail-on", "error")
    if fail_on not in (*_LEVELS, "never"):
        raise fail("fail-on", "expected one of error, warning, info, never")
    return LintConfig(
        root=root,
        source=file,
        tools=tuple((root / t).resolve() for t in strings("tools")),
        state=path_of("state"),
        max_actions=whole("max-actions", None, 0),
        policies=path_of("policies"),
        labels=path_of("labels"),
        flow_policy=path_of("flow-policy"),
        intent=path_of("intent"),
        select=strings("select"),
        ignore=strings("ignore"),
        severity=dict(severity),
        per_path_ignores={g: tuple(c) for g, c in per_path.items()},
        repeat_threshold=whole("repeat-threshold", 3, 1) or 3,
        include=strings("include", DEFAULT_INCLUDE),
        exclude=strings("exclude", DEFAULT_EXCLUDE),
        extend_exclude=strings("extend-exclude"),
        respect_gitignore=flag("respect-gitignore", True),
        force_exclude=flag("force-exclude", False),
        fail_on=fail_on,
        profile=profile,
    )


# --- findings ----------


@dataclass(slots=True)
class FileResult:
    path: str
    findings: list[Issue] = field(default_factory=list)
    suppressed: list[Issue] = field(default_factory=list)
    proposals: int = 0
    #: What the file is when it is another car-verify input (a tool registry, a
    #: state, labels, an intent, a workflow graph): read, not linted as a plan.
    companion: str | None = None


@dataclass(slots=True)
class LintReport:
    files: list[FileResult]
    config: LintConfig
    baselined: list[Issue] = field(default_factory=list)
    #: Files named on the command line and left out by ``force-exclude``.
    excluded: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Issue]:
        return [f for r in self.files for f in r.findings]

    @property
    def suppressed(self) -> list[Issue]:
        return [f for r in self.files for f in r.suppressed]

    def failing(self, fail_on: str) -> list[Issue]:
        if fail_on == "never":
            return []
        floor = Severity(fail_on).rank
        return [f for f in self.findings if f.severity.rank >= floor]

    def summary(self) -> dict[str, Any]:
        by_severity = Counter(f.severity.value for f in self.findings)
        return {
            "files": len(self.files),
            "proposals": sum(r.proposals for r in self.files),
            "findings": len(self.findings),
            "errors": by_severity.get("error", 0),
            "warnings": by_severity.get("warning", 0),
            "info": by_severity.get("info", 0),
            "suppressed": dict(sorted(Counter(f.code for f in self.suppressed).items())),
            "baselined": len(self.baselined),
            "profile": self.config.profile or DEFAULT_PROFILE.value,
            "companions": dict(
                sorted(Counter(r.companion for r in self.files if r.companion).items())
            ),
        }


# --- linting one file ----------

_WORKER: dict[str, Any] = {}


def _setup(config: LintConfig) -> dict[str, Any]:
    """Inputs shared by every file: tools, state, policies (loaded once per process)."""
    cached = _WORKER.get("setup")
    if cached is not None and cached[0] == config:
        return cached[1]  # type: ignore[no-any-return]
    from ..ir.model import read_json
    from ..rules.tools import ToolRegistry

    tools = None
    if config.tools:
        # Each file is checked before any plan (an error names the file and the
        # tool's place in it), then the files are merged into one registry.
        parts = [ToolRegistry.coerce(Path(path)) for path in config.tools]
        for part in parts:
            part.check()
        tools = ToolRegistry.merge(parts)
    state = None
    if config.state is not None:
        state = read_json(config.state)
        if not isinstance(state, dict):
            raise InputError("the state file must hold a JSON object", source=str(config.state))
    policies = None
    if config.policies is not None:
        from ..rules.policy import load_policies

        policies = load_policies(config.policies).engine()
    labels = flow_policy = None
    if config.labels is not None:
        from ..plan.flow import parse_labels, parse_policy

        def read(path: Path, what: str) -> Any:
            doc = read_json(path)
            if not isinstance(doc, dict):
                raise InputError(f"the {what} file must hold a JSON object", source=str(path))
            return doc

        try:
            labels = parse_labels(read(config.labels, "labels"))
            if config.flow_policy is not None:
                flow_policy = parse_policy(read(config.flow_policy, "flow policy"))
        except InputError as err:
            if err.source is None:
                raise err.with_source(
                    str(config.labels if labels is None else config.flow_policy)
                ) from None
            raise
    intent = None
    if config.intent is not None:
        from ..plan.intent import parse_intent_file

        try:
            intent = parse_intent_file(read_json(config.intent))
        except InputError as err:
            raise (err.with_source(str(config.intent)) if err.source is None else err) from None
    setup = {
        "tools": tools,
        "state": state,
        "policies": policies,
        "labels": labels,
        "flow_policy": flow_policy,
        "intent": intent,
    }
    _WORKER["setup"] = (config, setup)
    return setup


def _relative(path: Path, config: LintConfig) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _ignored_here(relative: str, config: LintConfig) -> list[tuple[str, ...]]:
    """The ``per-path-ignores`` code lists whose glob matches this file."""
    if not config.per_path_ignores:
        return []
    try:
        rooted = Path(relative).resolve().relative_to(config.root).as_posix()
    except ValueError:
        rooted = relative
    return [
        codes
        for glob, codes in config.per_path_ignores.items()
        if fnmatch.fnmatch(rooted, glob) or fnmatch.fnmatch(relative, glob)
    ]


def _matches(code: str, codes: Iterable[str]) -> bool:
    """Whether ``codes`` selects ``code``: itself, ``ALL``, or a prefix ending in
    ``-`` or ``:`` (``flow-``, ``deny_tool:``), as ruff selects by prefix."""
    return any(
        code == c or c == "ALL" or (c.endswith((":", "-")) and code.startswith(c)) for c in codes
    )


def lint_file(path: str | Path, config: LintConfig) -> FileResult:
    """Lint one file; never raises for what the file holds."""
    file = Path(path)
    relative = _relative(file, config)
    result = FileResult(relative)

    def file_finding(code: str, message: str, line: int = 1, column: int = 1) -> None:
        """A finding about the file itself: selected, ignored and re-levelled like any."""
        spec = CODES[code]
        found = Issue(code, spec.worst, spec.tier, message)
        _file(result, found, Location(relative, line, column), config, None)

    from ..ir.model import read_text_file

    try:
        text = read_text_file(file)
    except InputError as undecodable:  # named by its line and column, as verify names it
        file_finding(
            "invalid-file", undecodable.problem, undecodable.line or 1, undecodable.column or 1
        )
        return result
    except OSError as err:
        file_finding("invalid-file", f"cannot read the file: {err}")
        return result
    documents: list[tuple[Any, dict[str, tuple[int, int]], int, list[Any]]] = []
    suffix = file.suffix.lower()
    from ..ir.model import LONE_SURROGATE, decode_text, lone_surrogate

    try:
        if suffix == ".jsonl":
            from ..base.locate import json_positions

            for number, line in enumerate(text.split("\n"), start=1):
                if line.strip():
                    try:
                        data, repeats = decode_text(line, first_line=number)
                    except json.JSONDecodeError as err:
                        file_finding(
                            "invalid-file", f"not valid JSON: {err.msg}", number, err.colno
                        )
                        continue
                    where = lone_surrogate(line, data)
                    if where is not None:
                        file_finding(
                            "invalid-file", f"{format_path(where)}: {LONE_SURROGATE}", number, 1
                        )
                        continue
                    positions = json_positions(line, first_line=number)
                    documents.append((data, positions, number, repeats))
        elif suffix in (".yaml", ".yml"):
            import yaml

            from ..base.locate import yaml_documents

            try:
                for data, positions in yaml_documents(text):
                    documents.append((data, positions, positions.get("", (1, 1))[0], []))
                for at_line, at_column, message in yaml_coercions(text):
                    file_finding("yaml-coercion", message, at_line, at_column)
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None)
                at_line = mark.line + 1 if mark is not None else 1
                at_column = mark.column + 1 if mark is not None else 1
                problem = getattr(err, "problem", None) or str(err)
                file_finding("invalid-file", f"not valid YAML: {problem}", at_line, at_column)
                return result
        else:
            from ..base.locate import json_positions

            try:
                data, repeats = decode_text(text)
            except json.JSONDecodeError as err:
                file_finding("invalid-file", f"not valid JSON: {err.msg}", err.lineno, err.colno)
                return result
            except ValueError as err:  # an integer of thousands of digits
                from ..ir.model import unreadable_value

                bad = unreadable_value(err, text, None)
                file_finding("invalid-file", bad.problem, bad.line or 1, bad.column or 1)
                return result
            positions = json_positions(text)
            where = lone_surrogate(text, data)
            if where is not None:
                at = positions.get(_action_pointer(json_pointer(where)), (1, 1))
                file_finding("invalid-file", f"{format_path(where)}: {LONE_SURROGATE}", *at)
                return result
            documents.append((data, positions, 1, repeats))
    except RecursionError:
        file_finding("invalid-file", "the document is nested too deeply to read")
        return result
    except Exception as err:  # a parser bug must not stop the other files
        file_finding("invalid-file", f"cannot read the file: {type(err).__name__}: {err}")
        return result
    if not documents and not result.findings:
        file_finding("not-a-proposal", "the file holds no proposal")
    if len(documents) == 1 and (kind := companion_kind(documents[0][0], file.name)):
        result.companion = kind  # another car-verify input: said in the summary
        return result
    for data, positions, first_line, repeats in documents:
        _lint_document(
            data,
            positions,
            first_line,
            relative,
            config,
            result,
            file_finding,
            yaml=suffix in (".yaml", ".yml"),
            repeats=repeats,
            folder=file.parent,
        )
    return result


#: The file names of the inputs a proposal's folder may hold beside it.
COMPANION_NAMES = {
    "tools.json": "tool registry",
    "state.json": "state",
    "tool-labels.json": "tool labels",
    "flow-policy.json": "flow policy",
    "intent.json": "intent",
}


def companion_kind(data: Any, name: str) -> str | None:
    """What a document is when it is another car-verify input, not a plan: by its
    file name beside a proposal (``tools.json``, ``state.json``, ...) or by its
    shape (a tool registry, a workflow or schedule graph, workflow policies); None
    otherwise."""
    if isinstance(data, dict) and "actions" in data:
        return None
    if name in COMPANION_NAMES:
        return COMPANION_NAMES[name]
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        if all(x.get("kind") == "precedes" for x in data):
            return "workflow policies"
        if all(isinstance(x.get("name"), str) for x in data):
            return "tool registry"
    if isinstance(data, dict):
        if "stages" in data and ("entry" in data or "start" in data):
            return "workflow graph"
        if set(data) == {"units"} and isinstance(data["units"], list):
            return "schedule graph"
        if data and set(data) <= {"min_confidential", "forbidden_sequences"}:
            return "flow policy"
        if "intent" in data or (data and set(data) <= _INTENT_KEYS):
            return "intent"
    return None


_INTENT_KEYS = {"allowed_tools", "allowed_resources", "forbidden_capabilities", "untrusted_tools"}


def _beside(folder: Path, config: LintConfig, setup: dict[str, Any]) -> tuple[Any, Any]:
    """The tool registry and state a proposal is checked with: the configuration's,
    else the ``tools.json`` and ``state.json`` beside it in its folder."""
    tools, state = setup["tools"], setup["state"]
    if tools is not None and state is not None:
        return tools, state
    folder = folder.resolve()  # a relative folder means another one in another run

    def stamp(name: str) -> float | None:
        try:
            return (folder / name).stat().st_mtime
        except OSError:
            return None

    key = (folder, stamp("tools.json"), stamp("state.json"))  # a rewritten file: read anew
    cache: dict[Any, tuple[Any, Any]] = _WORKER.setdefault("beside", {})
    found = cache.get(key)
    if found is None:
        from ..ir.model import read_json
        from ..rules.tools import ToolRegistry

        registry = None
        if (folder / "tools.json").is_file():
            registry = ToolRegistry.coerce(folder / "tools.json")
            registry.check()
        near = None
        if (folder / "state.json").is_file():
            near = read_json(folder / "state.json")
            if not isinstance(near, dict):
                raise InputError("the state file must hold a JSON object", source=str(folder))
        found = cache[key] = (registry, near)
    return (tools if tools is not None else found[0]), (state if state is not None else found[1])


def _lint_document(
    data: Any,
    positions: Mapping[str, tuple[int, int]],
    first_line: int,
    relative: str,
    config: LintConfig,
    result: FileResult,
    file_finding: Any,
    *,
    yaml: bool = False,
    repeats: Sequence[Any] = (),
    folder: Path | None = None,
) -> None:
    from ..api import verify
    from ..ir.model import load_parsed

    if not isinstance(data, dict) or "actions" not in data:
        # A tools file, a state file: not what lint checks. An object that has
        # `actions` is meant as a proposal, and a wrong type in it is an input error.
        file_finding(
            "not-a-proposal",
            "no proposal here: expected an object with an `actions` array",
            first_line,
            1,
        )
        return
    try:
        proposal = load_parsed(data)
    except InputError as err:
        where = positions.get(_action_pointer(err.pointer), (first_line, 1))
        message = str(err)
        if yaml and message.endswith("(not JSON)"):  # an unquoted date, a !!set
            message += "; quote the value in the YAML to keep it a string"
        file_finding("invalid-file", message, *where)
        return
    except RecursionError:
        file_finding("invalid-file", "the document is nested too deeply to read", first_line, 1)
        return
    if repeats:
        proposal.repeated_keys = tuple(repeats)
    result.proposals += 1
    setup = _setup(config)
    try:
        tools, state = (
            _beside(folder, config, setup)
            if folder is not None
            else (setup["tools"], setup["state"])
        )
        verdict = verify(
            proposal,
            tools=tools,
            initial_state=state,
            max_actions=config.max_actions,
            policies=setup["policies"],
            repeat_threshold=config.repeat_threshold,
            profile=config.profile,
            labels=setup["labels"],
            flow_policy=setup["flow_policy"],
            intent=setup["intent"],
        )
    except InputError as err:
        if is_too_deep(err):
            from ..base.values import deepest

            path, depth = deepest(data)
            where = positions.get(_action_pointer(json_pointer(path)), (first_line, 1))
            file_finding("invalid-file", str(too_deep(path, depth)), *where)
            return
        # The profile refuses the whole proposal (under car: an action type the
        # runtime does not know): a finding on this file, and the lint goes on.
        where = positions.get(_action_pointer(json_pointer(err.path)), (first_line, 1))
        file_finding("invalid-file", err.problem if err.path else str(err), *where)
        return
    ignored_here = _ignored_here(relative, config)
    for issue in verdict.issues:
        pointer = f"/actions/{issue.index}" if issue.index is not None else ""
        line, column = positions.get(pointer, (first_line, 1))
        action = proposal.actions[issue.index] if issue.index is not None else None
        _file(result, issue, Location(relative, line, column), config, action, ignored_here)


def _file(
    result: FileResult,
    issue: Issue,
    where: Location,
    config: LintConfig,
    action: Any,
    ignored_here: list[tuple[str, ...]] | None = None,
) -> None:
    """File ``issue`` at ``where`` under the configuration: dropped when not selected
    or ignored, suppressed by a per-path ignore or the action's own metadata, at the
    configured severity; the one filter for findings about plans and about files."""
    severity = config.severity.get(issue.code)
    if severity is None and issue.severity is Severity.INFO:
        raised = CODES[issue.code].lint if issue.code in CODES else None
        severity = None if raised is None else raised.value
    finding = issue.located(where, severity=Severity(severity) if severity else None)
    if config.select and not _matches(issue.code, config.select):
        return
    if _matches(issue.code, config.ignore):
        return
    if ignored_here is None:
        ignored_here = _ignored_here(where.path, config)
    by_path = any(_matches(issue.code, codes) for codes in ignored_here)
    by_action = action is not None and _suppressed_by_metadata(action, issue.code)
    (result.suppressed if by_path or by_action else result.findings).append(finding)


def lint_column(name: str, profile: ProfileName) -> str:
    """The severity ``lint`` gives code ``name`` under ``profile`` by default (``-``:
    not reported), as a table cell: verify's, except an ``info`` note the code
    table's ``lint`` column raises (docs/lint.md)."""
    return CODES[name].lint_column(profile)


def _action_pointer(pointer: str) -> str:
    parts = pointer.split("/")
    return "/".join(parts[:3]) if len(parts) > 2 and parts[1] == "actions" else ""


def _suppressed_by_metadata(action: Any, code: str) -> bool:
    """``"metadata": {"car-verify": {"ignore": ["repeated-call"]}}`` on the action."""
    own = action.metadata.get("car-verify")
    if not isinstance(own, dict):
        return False
    codes = own.get("ignore", [])
    return isinstance(codes, list) and _matches(code, [c for c in codes if isinstance(c, str)])


# --- many files ----------


def selection(config: LintConfig) -> Selection:
    """The file patterns of ``config``; its tools and state files are inputs."""
    inputs = (*config.tools, *([config.state] if config.state is not None else []))
    return Selection(
        root=config.root,
        include=config.include,
        exclude=config.exclude,
        extend_exclude=config.extend_exclude,
        inputs=inputs,
        respect_gitignore=config.respect_gitignore,
        force_exclude=config.force_exclude,
    )


def collect(paths: Sequence[str | Path], config: LintConfig) -> Discovery:
    """The files to lint under ``paths`` (folders recursively), in a stable order."""
    return discover(paths, selection(config))


def _lint_chunk(args: tuple[list[str], LintConfig]) -> list[FileResult]:
    files, config = args
    return [lint_file(f, config) for f in files]


def lint_paths(
    paths: Sequence[str | Path],
    config: LintConfig | None = None,
    *,
    workers: int | None = None,
    progress: bool | None = None,
) -> LintReport:
    """Lint every proposal file under ``paths``; with many files, in worker processes."""
    config = config or LintConfig()
    found = collect(paths, config)
    files = found.files
    _setup(config)  # a broken tools / state / policies file fails before any work
    from ..base.progress import progress as bar

    count = os.cpu_count() or 1
    workers = workers if workers is not None else (min(count, 8) if len(files) >= 64 else 1)
    results: list[FileResult] = []
    with bar(len(files), "lint", "files", show=progress if files else False) as shown:
        if workers > 1 and len(files) > 1:
            from concurrent.futures import ProcessPoolExecutor

            size = max(1, min(64, len(files) // (workers * 4)))
            chunks = [[str(f) for f in files[i : i + size]] for i in range(0, len(files), size)]
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for part in pool.map(_lint_chunk, [(c, config) for c in chunks]):
                    results.extend(part)
                    shown.update(len(part))
        else:
            for file in files:
                results.append(lint_file(file, config))
                shown.update()
    for r in results:
        r.findings.sort(key=_file_order)
    return LintReport(results, config, excluded=[_relative(p, config) for p in found.excluded])


def _file_order(finding: Issue) -> tuple[int, int, str]:
    where = finding.location or Location("")
    return (where.line, where.column, finding.code)


# --- baselines ----------


@dataclass(slots=True)
class Baseline:
    """Known findings, matched by file, action id and code (a multiset)."""

    entries: Counter[tuple[str, str | None, str]]

    @classmethod
    def of(cls, findings: Iterable[Issue]) -> Baseline:
        return cls(Counter(f.baseline_key() for f in findings))

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Baseline:
        from ..ir.model import read_json

        doc = read_json(Path(path))
        if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
            raise InputError("a baseline is an object with a `findings` array", source=str(path))
        entries: Counter[tuple[str, str | None, str]] = Counter()
        for index, item in enumerate(doc["findings"]):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("file"), str)
                or not isinstance(item.get("code"), str)
            ):
                raise InputError(
                    "expected {file, action_id, code, count}", ["findings", index], source=str(path)
                )
            count = item.get("count", 1)
            entries[(item["file"], item.get("action_id"), item["code"])] += int(count)
        return cls(entries)

    def write(self, path: str | os.PathLike[str]) -> None:
        items = [
            {"file": f, "action_id": a, "code": c, "count": n}
            for (f, a, c), n in sorted(
                self.entries.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])
            )
        ]
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)  # .car/baseline.json in a new repo
        target.write_text(json.dumps({"version": 1, "findings": items}, indent=2) + "\n")

    def apply(self, report: LintReport) -> None:
        """Move the findings the baseline knows into ``report.baselined``."""
        left = Counter(self.entries)
        for r in report.files:
            kept = []
            for finding in r.findings:
                # A file that cannot be read is never "known": it hides every finding.
                if finding.code != "invalid-file" and left[finding.baseline_key()] > 0:
                    left[finding.baseline_key()] -= 1
                    report.baselined.append(finding)
                else:
                    kept.append(finding)
            r.findings = kept


# --- output ----------


def render_text(report: LintReport, *, color: bool = False) -> str:
    """The findings, one per line, then :func:`summary_line`."""
    from ..reporters.text import lines

    return lines(report.findings, summary_line(report), color=color)


def summary_line(report: LintReport) -> str:
    """``3 findings (1 error, 2 warnings) in 4 files; suppressed: ...``."""
    from ..base.values import plural
    from ..reporters.text import severity_counts

    s = report.summary()
    counts = severity_counts(s["errors"], s["warnings"], s["info"])
    tail = f"{plural(s['findings'], 'finding')} ({counts}) in {plural(s['files'], 'file')}"
    if s["suppressed"]:
        tail += "; suppressed: " + ", ".join(f"{c} x{n}" for c, n in s["suppressed"].items())
    if s["baselined"]:
        tail += f"; {s['baselined']} in the baseline"
    if s["companions"]:
        others = ", ".join(f"{kind} x{n}" for kind, n in s["companions"].items())
        tail += f"; read as other inputs, not plans: {others}"
    return f"{tail} (profile {s['profile']})"


def render_json(report: LintReport) -> str:
    from ..reporters.json import dump

    return dump(
        {
            "findings": [f.to_located_dict() for f in report.findings],
            "suppressed": [f.to_located_dict() for f in report.suppressed],
            "summary": report.summary(),
        }
    )


def render_github(report: LintReport) -> str:
    from ..reporters.github import render_github as annotations

    return annotations(report.findings)


def render_sarif(report: LintReport, *, docs_url: str | None = None) -> str:
    from ..reporters.sarif import sarif

    return sarif(report.findings, docs_url=docs_url)


def unknown_codes(codes: Iterable[str]) -> list[str]:
    """The names among ``codes`` that are no finding code (nor a policy rule name,
    ``<kind>:<target>``, nor a rule-kind prefix such as ``deny_tool:``)."""
    from ..rules.policy import RULE_KINDS

    known = CODES
    return [
        code
        for code in codes
        if code not in known
        and code != "ALL"
        and not (code.endswith("-") and any(k.startswith(code) for k in known))
        and not (":" in code and code.split(":", 1)[0] in RULE_KINDS)
    ]


def with_overrides(config: LintConfig, **changes: Any) -> LintConfig:
    """The configuration with the command line's values on top (None: keep the file's)."""
    return replace(config, **{k: v for k, v in changes.items() if v is not None})


#: YAML 1.1's plain scalars that a reader of JSON or of YAML 1.2 reads otherwise:
#: booleans beyond true / false, octal with a bare leading zero, base 60, digit
#: separators. (YAML 1.2's core schema, and JSON, read each as text or decimal.)
_YAML11_BOOL = re.compile(r"(?i:y|yes|n|no|on|off)")
_YAML11_INT = re.compile(r"[-+]?(0[0-7_]+|[0-9][0-9_]*(:[0-5]?[0-9])+|[0-9]+(_[0-9]*)+)")
_YAML11_FLOAT = re.compile(
    r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|[-+]?[0-9]*_[0-9_]*\.[0-9_]*"
)


def yaml_coercions(text: str) -> list[tuple[int, int, str]]:
    """Each plain scalar of a YAML text (keys too) that YAML 1.1, which PyYAML and
    car-verify read, takes for another type than the text it looks like: ``NO``,
    ``no``, ``on`` as booleans, ``010`` as 8, ``1:20`` as 80, ``1_000`` as 1000.
    Each as (line, column, message)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found: list[tuple[int, int, str]] = []
    stack = list(yaml.compose_all(text, Loader=loader))
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
            continue
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
            continue
        if not isinstance(node, yaml.ScalarNode) or node.style:  # None or "": plain
            continue  # quoted, or a block scalar: text as written
        kind = node.tag.rpartition(":")[2]
        plain = node.value
        coerced = (
            (kind == "bool" and _YAML11_BOOL.fullmatch(plain))
            or (kind == "int" and _YAML11_INT.fullmatch(plain))
            or (kind == "float" and _YAML11_FLOAT.fullmatch(plain))
        )
        if not coerced:
            continue
        value = json.dumps(yaml.load(yaml.serialize(node), Loader=loader))
        mark = node.start_mark
        found.append(
            (
                mark.line + 1,
                mark.column + 1,
                f'`{plain}` is read as {value} (YAML 1.1): quote it ("{plain}") for the '
                f"text, or write {value}",
            )
        )
    return sorted(found)
