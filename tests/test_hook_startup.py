"""The hook's start-up (issue 61): what a call imports, and the speed tricks on its
path, each held to its plain version (the time is benchmarks/bench_hook.py's)."""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from car_verify.base.digest import sha256_hex, sha256_hex_plain
from car_verify.base.patterns import LazyPattern, compiled_plain
from car_verify.hook import _parser, fast_args
from car_verify.rules.kinds.trace_rule import _position_of, _position_of_plain

#: What no hook call of the policies below imports: the proposal model, the passes,
#: the command line, the trace-rule grammar's parser (the parse is cached), and the
#: heavy libraries; ``hashlib``, ``argparse`` and ``importlib.resources`` (their work
#: is done without them); the modules of rule kinds the policies do not hold.
HEAVY = [
    "car_verify.api",
    "car_verify.cli",
    "car_verify.ir.model",
    "car_verify.passes",
    "car_verify.semantics.dag",
    "lark",
    "jsonschema",
    "z3",
    "networkx",
    "yaml",
    "pydot",
    "tqdm",
    "pathspec",
    "re2",
    "hashlib",
    "argparse",
    "importlib.resources",
    "threading",
    # the modules of the rule kinds the policies below do not hold
    "car_verify.rules.kinds.registered",
    "car_verify.rules.kinds.deny_keyword",
    "car_verify.rules.kinds.allow_tool_param",
    "car_verify.rules.kinds.deny_tool_param_matching",
    "car_verify.rules.kinds.allow_command",
]
#: The rules of a project's policies folder: one of each kind a hook call meets but
#: the regular-expression one (which needs re2 to read).
RULES = """deny_tool = ["rm"]
[[deny_tool_param]]
tool = "Write"
param = "file_path"
contains = ".env"
[[deny_command]]
program = "git"
args = ["push"]
[[rate_limit_tool]]
tool = "WebFetch"
max_calls = 30
interval_secs = 60
[[trace_rule]]
name = "no-push-after-secrets"
rule = 'never Bash where command contains "push" after Read where file_path contains ".env"'
"""


def loaded(
    tmp: Path, tool: str, params: dict[str, Any], modules: list[str]
) -> tuple[list[str], str]:
    """Which of ``modules`` the second of two fresh hook processes (the user has
    accepted the rules; the first caches their parse) has loaded by its end, and
    its answer."""
    folder = tmp / ".car" / "policies"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rules.toml").write_text(RULES)
    accept = ["policy", "accept", str(folder), "--state-dir", str(tmp / "state")]
    subprocess.run([sys.executable, "-m", "car_verify", *accept], capture_output=True,
                   check=True, cwd=tmp)  # fmt: skip
    payload = json.dumps({"session_id": "s", "cwd": str(tmp), "hook_event_name": "PreToolUse",
                          "tool_name": tool, "tool_input": params})  # fmt: skip
    argv = ["car-verify", "hook", "--policies", str(folder), "--state-dir", str(tmp / "state")]
    probe = (
        f"import sys; from car_verify._launch import main; sys.argv = {argv!r};"
        f"code = main(); sys.stderr.write(repr([m for m in {modules!r} if m in sys.modules]));"
        "raise SystemExit(code)"
    )
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", probe], input=payload,
                              capture_output=True, text=True, check=True, cwd=tmp)  # fmt: skip
    return ast.literal_eval(done.stderr.splitlines()[-1]), done.stdout


def test_a_shell_call_imports_none_of_the_heavy_modules(tmp_path: Path) -> None:
    found, answer = loaded(tmp_path, "Bash", {"command": "git push origin main"}, HEAVY)
    assert found == []
    said = json.loads(answer)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny"  # the shell rule read the line
    assert "deny_command:Bash.git" in said["permissionDecisionReason"]


def test_a_call_of_another_tool_does_not_load_the_shell_reader(tmp_path: Path) -> None:
    """Only a call a shell rule reads loads the shell reader (and tree-sitter)."""
    shell = ["car_verify.rules.shell.reader", "tree_sitter", *HEAVY]
    found, answer = loaded(tmp_path, "Read", {"file_path": "README.md"}, shell)
    assert found == []
    assert json.loads(answer) == {"hookSpecificOutput": {"hookEventName": "PreToolUse"}}


# --- the speed tricks and their plain versions ---------------------------------------


@given(st.binary(max_size=200))
def test_the_digest_is_hashlibs(data: bytes) -> None:
    assert sha256_hex(data) == sha256_hex_plain(data)


#: Pieces of a policy file around a ``rule`` key: quotes of every kind, line ends,
#: comments, keys that end in "rule", the rule's own text.
PIECES = st.sampled_from(
    ["rule", " ", "=", '"', "'", '"""', "'''", "\n", "\r", "#", "x", "-", "a", "name", "never a"]
)


@settings(max_examples=150)
@given(st.lists(PIECES, max_size=24).map("".join), st.lists(PIECES, max_size=4).map("".join),
       st.integers(0, 40))  # fmt: skip
@example('rule = "x"\nrule = """\nx"""', "x", 0)
@example("# rule = \"never a\"\nrule = 'never a'", "never a", 0)
@example('arule = "x" rule = """\r\nx', "\nx", 0)
@example('rule = """\r\n\n\n', "\n\n", 0)  # two quotes fit: the first one tried wins
def test_a_rules_position_is_the_plain_patterns(text: str, needle: str, after: int) -> None:
    assert _position_of(text, needle, after) == _position_of_plain(text, needle, after)


#: Words of a hook command line: every option, by its whole name and abbreviated,
#: with and without ``=``, values of their choices and others, help, stray words.
WORDS = st.sampled_from(
    ["--agent", "--agent=codex", "codex", "claude", "auto", "--profile", "car", "strict",
     "--profile=strict", "--policies", "/p", "--policies=/q", "--policies=", "", "--state-dir",
     "--state-dir=/s", "/s", "--on-unknown", "deny", "allow", "ask", "--on-unknown=allow",
     "--ask", "deny_tool", "--ask=x", "--grant", "--accept-edits", "--grant=1", "--pol", "-h",
     "--help", "-x", "-1", "--", "a=b", "--agent=other"]
)  # fmt: skip


@settings(max_examples=150)
@given(st.lists(WORDS, max_size=7))
@example(["--policies", "/p", "--state-dir", "/s"])
@example(["--ask", "a", "--ask=b", "--grant", "--on-unknown", "deny"])
def test_the_fast_arguments_are_the_parsers(argv: list[str]) -> None:
    fast = fast_args(argv)
    if fast is None:
        return
    try:
        parsed = _parser().parse_args(argv)
    except SystemExit:  # the parser refuses it: the fast reading must not take it
        pytest.fail(f"fast_args read {argv!r}, which the parser refuses")
    assert vars(fast) == vars(parsed)


def test_the_usual_arguments_are_read_fast() -> None:
    """What an agent's settings hold takes the fast path (else the test above is
    vacuous), and the rest goes to the parser."""
    read = fast_args(["--policies", "/p", "--state-dir=/s", "--on-unknown", "deny", "--grant"])
    assert read is not None
    assert vars(read) == vars(argparse.Namespace(
        agent="auto", profile=None, policies="/p", state_dir="/s", on_unknown="deny",
        ask=None, grant=True, accept_edits=False))  # fmt: skip
    assert fast_args([]) is not None
    for argv in (["--help"], ["--pol", "/p"], ["--policies"], ["--agent", "x"], ["x"]):
        assert fast_args(argv) is None


def test_the_lazy_registry_is_the_whole_ones() -> None:
    """``file_kind`` (one module imported per kind asked for) gives the kinds of the
    plain registry, in its order, and the registered keys are its registered kinds'."""
    from car_verify.rules import kinds

    assert [kinds.file_kind(key) for key in kinds.FILE_KEYS] == list(kinds.FILE_KINDS.values())
    assert tuple(kinds.FILE_KINDS) == kinds.FILE_KEYS
    assert [k.key for k in kinds.KINDS if not k.registered] == list(kinds.FILE_KEYS)
    assert tuple(kinds.REGISTERED) == kinds.REGISTERED_KEYS
    for key in kinds.REGISTERED_KEYS:
        assert kinds.registered_kind(key) is kinds.REGISTERED[key]
    for kind in kinds.KINDS:
        assert kinds.by_name(kind.name) is kind


def test_a_policy_set_loads_only_the_kinds_it_holds() -> None:
    """Reading a policy file imports the modules of the kinds it holds, and the
    engine over it the same; the rest come in when asked for by name."""
    probe = """
import sys
from car_verify.rules.policy import PolicyEngine, load_policy_text
rules = load_policy_text('deny_tool = ["rm"]\\n[[rate_limit_tool]]\\ntool = "X"\\nmax_calls = 1\\n'
                         'interval_secs = 60\\n')
engine = PolicyEngine(rules)
assert engine.check_call("rm", {}) == [("deny_tool:rm", engine.check_call("rm", {})[0][1])]
loaded = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("car_verify.rules.kinds."))
print(loaded)
from car_verify.rules.policy import MatchRule
print(MatchRule.__module__)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert lines == [
        "['_base', '_values', 'deny_tool', 'rate_limit_tool']",
        "car_verify.rules.kinds.deny_tool_param_matching",
    ], done.stderr


#: The modules whose patterns are compiled on first use (the shell reader's, and
#: the rule kinds' and values' a usual call never reads).
LAZY_MODULES = [
    "car_verify.base.values",
    "car_verify.rules.kinds.allow_command",
    "car_verify.rules.shell.commands",
    "car_verify.rules.shell.languages",
    "car_verify.rules.shell.programs",
    "car_verify.rules.shell.reader",
    "car_verify.rules.shell.unknown",
    "car_verify.rules.shell.words",
]


def _lazy_patterns() -> list[tuple[str, LazyPattern]]:
    import importlib

    found = []
    for name in LAZY_MODULES:
        module = importlib.import_module(name)
        found += [(f"{name}.{k}", v) for k, v in vars(module).items() if isinstance(v, LazyPattern)]
    return found


def test_a_lazy_pattern_is_the_plain_compile() -> None:
    found = _lazy_patterns()
    assert len(found) >= 20  # the modules still hold their patterns this way
    for where, lazy in found:
        fast = lazy()
        assert fast is lazy()  # compiled once
        assert fast == compiled_plain(lazy), where
        assert (fast.pattern, fast.flags) == (
            compiled_plain(lazy).pattern,
            compiled_plain(lazy).flags,
        )


def test_importing_the_shell_reader_compiles_no_lazy_pattern() -> None:
    probe = f"""
import importlib
from car_verify.base.patterns import LazyPattern
made = []
for name in {LAZY_MODULES!r}:
    module = importlib.import_module(name)
    made += [k for k, v in vars(module).items() if isinstance(v, LazyPattern) and v._compiled]
print(made)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_grammar_loaded_alone_is_the_packages() -> None:
    """The bash grammar's module loaded without its package's ``__init__`` is the
    one the package then imports, and reads a line as the package's does."""
    probe = """
import sys
from car_verify.rules.shell.parse import bash_binding, bash_binding_plain
fast = bash_binding()
assert "tree_sitter_bash" not in sys.modules and "importlib.resources" not in sys.modules
import tree_sitter, tree_sitter_bash
assert bash_binding_plain() is fast and tree_sitter_bash.language is fast.language
line = b"for f in *.py; do grep -q x \\"$f\\" && echo $(basename $f) >> out; done"
trees = []
for module in (fast, tree_sitter_bash):
    parser = tree_sitter.Parser(tree_sitter.Language(module.language()))
    trees.append(str(parser.parse(line).root_node))
assert trees[0] == trees[1] and "for_statement" in trees[0], trees
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
