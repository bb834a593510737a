"""The shell reader held to bash itself.

Generated lines hide ``rm -r -f`` in the constructs of :mod:`shell_lines`; each
is run by the real bash in a throwaway folder with logging stubs for ``rm`` and
the other programs (:mod:`shell_oracle`: no network, an unprivileged user, and
``strace`` where the machine allows). Whenever bash ran ``rm`` with both ``-r``
and ``-f``, the reader must have said deny or undecided for a ``deny_command``
rule on ``rm -r -f``: a false allow is the one answer it may never give.

The default run is small (a few seconds: bash runs only the lines the reader
allows); the ``slow`` ones (CI, ``--run-slow``) try many more lines, run bash on
every line of the grammar and print the verdicts they saw.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shell_lines import (
    FOUND_BY_BASH,
    REVIEW_ROUND_2,
    REVIEW_ROUND_4,
    TWENTY_SEVEN,
    in_a_repository,
    lines,
    soups,
)
from shell_oracle import BashOracle, available, bash_oracle, rm_recursive_force

from car_verify.plan.gate import CallGate
from car_verify.rules.policy import load_policy_text
from car_verify.rules.shell import ShellError, has_flags, read_commands

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

RULE_FLAGS = ("-r", "-f")


#: The rule the lines are held to, as a policy file writes it; the gate decides
#: each line with it (the ``deny_command`` kind and the reader together), so the
#: face an agent meets is what bash is compared with.
RULE = '[[deny_command]]\nprogram = "rm"\nflags = ["-r", "-f"]\n'
GATE = CallGate(load_policy_text(RULE), on_unknown="ask")  # ask: undecided, said apart


def verdict(line: str) -> str:
    """What the gate answers a ``Bash`` call of ``line`` under :data:`RULE`:
    ``deny``, ``undecided`` (any face refuses it, or asks) or ``allow``."""
    answer = GATE.decide("Bash", {"command": line})
    if answer.decision == "ask":
        return "undecided"
    assert answer.decision == "allow" or answer.rules == ["deny_command:Bash.rm"], answer
    return answer.decision


def reader_verdict(line: str) -> str:
    """The same question put to the reader alone (a test holds the two equal)."""
    try:
        reading = read_commands(line)
    except ShellError:
        return "deny"  # a line that cannot be read is refused
    if any(c.program == "rm" and has_flags(c, RULE_FLAGS) for c in reading.commands):
        return "deny"
    if any(u.program in (None, "rm") for u in reading.undecided):
        return "undecided"
    return "allow"


@settings(max_examples=200, deadline=None)
@given(st.one_of(lines(), soups()))
def test_the_gate_answers_a_line_as_the_reader_reads_it(line: str) -> None:
    assert verdict(line) == reader_verdict(line), line


@pytest.fixture(scope="module")
def oracle() -> Iterator[BashOracle]:
    with bash_oracle(seconds=10.0) as found:
        yield found


def held_to_bash(oracle: BashOracle, line: str, seen: Counter[str] | None = None) -> None:
    """The property on one line. Bash is run on every line when ``seen`` counts
    what it ran; else only on the lines the reader allows (on the others the
    property holds whatever bash does)."""
    answer = verdict(line)
    if seen is None and answer != "allow":
        return
    run = oracle.run(line)
    ran = any(rm_recursive_force(argv) for argv in run.ran("rm"))
    if seen is not None:
        seen["lines"] += 1
        seen[answer] += 1
        seen["ran rm -r -f"] += ran
        seen[f"ran rm -r -f, {answer}"] += ran
    assert not (ran and answer == "allow"), (line, run.executed)


FUNCTION_FIXTURE = [HealthCheck.function_scoped_fixture]


@settings(max_examples=100, deadline=None, suppress_health_check=FUNCTION_FIXTURE)
@given(st.one_of(lines(), soups()))
def test_a_line_bash_runs_rm_rf_in_is_never_allowed(oracle: BashOracle, line: str) -> None:
    held_to_bash(oracle, line)


SEEN: Counter[str] = Counter()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=FUNCTION_FIXTURE)
@given(lines())
def test_many_lines_bash_runs_rm_rf_in_are_never_allowed(oracle: BashOracle, line: str) -> None:
    held_to_bash(oracle, line, SEEN)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=FUNCTION_FIXTURE)
@given(soups())
def test_many_soups_bash_runs_rm_rf_in_are_never_allowed(oracle: BashOracle, line: str) -> None:
    """Token soups, for lines the grammar reads otherwise than bash: bash runs
    only those the reader allows."""
    held_to_bash(oracle, line)


@pytest.mark.slow
def test_the_verdicts_of_the_long_run_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints what the long run saw (pytest -s), and checks it tried lines of every
    kind: some bash ran rm -r -f in, some denied, some undecided, some allowed."""
    if not SEEN:
        pytest.skip("the long run did not run in this session")
    with capsys.disabled():
        print("\nbash-differential verdicts:", dict(sorted(SEEN.items())))
    assert SEEN["ran rm -r -f, allow"] == 0
    assert SEEN["ran rm -r -f"] > 0 and SEEN["deny"] > 0 and SEEN["undecided"] > 0


@pytest.mark.parametrize("line", [*TWENTY_SEVEN, *FOUND_BY_BASH])
def test_each_pinned_line_runs_rm_rf_in_bash(oracle: BashOracle, line: str) -> None:
    """The pins of tests/test_shell_reader.py (the 27 lines of issue 58, and the
    lines this property found) are real: bash runs rm -r -f in each (an
    interpreter that is not installed skips its line)."""
    program = line.split()[0]
    if program in ("python3", "perl", "node") and shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    assert any(rm_recursive_force(argv) for argv in oracle.run(line).ran("rm")), line
    assert verdict(line) in ("deny", "undecided")


#: The second review's lines as bash runs them: git's in a repository.
REVIEWED = [in_a_repository(line) if line.startswith("git") else line for line in REVIEW_ROUND_2]


@pytest.mark.parametrize("line", REVIEWED)
def test_each_line_of_the_second_review_runs_rm_rf_in_bash(oracle: BashOracle, line: str) -> None:
    """The second hostile review's lines (pinned as written in
    tests/test_shell_reader.py) are real: bash runs rm -r -f in each, and the reader
    denies it or is undecided (a program that is not installed skips its line)."""
    program = line.split()[0]
    if not program.startswith(("x=", "/")) and shutil.which(program, path=_PATH) is None:
        pytest.skip(f"{program} is not installed")
    if program.startswith("/") and not os.path.exists(program):
        pytest.skip(f"{program} is not there")
    if program == "ssh-agent":  # it outlives its command until it sees its parent gone
        with bash_oracle(seconds=2.0) as short:  # (10 s under strace): cut short
            run = short.run(line)
    else:
        run = oracle.run(line)
    assert any(rm_recursive_force(argv) for argv in run.ran("rm")), line
    assert verdict(line) in ("deny", "undecided")


_PATH = os.pathsep.join(("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"))

#: The fourth review's lines bash can run here: chroot needs root, rsync a remote
#: shell, man a manual page (the reader's verdicts on them are pinned apart).
REVIEWED_4 = [
    in_a_repository(line) if "git " in line else line
    for line in REVIEW_ROUND_4
    if not line.startswith(("rsync ", "man ", "echo 'rm -rf v' | chroot"))
]


@pytest.mark.parametrize("line", REVIEWED_4)
def test_each_line_of_the_fourth_review_runs_rm_rf_in_bash(oracle: BashOracle, line: str) -> None:
    """The fourth hostile review's lines (pinned in tests/test_shell_reader.py) are
    real: bash runs rm -r -f in each (abbreviated options, values in a cluster,
    rbash, vim.basic), and the gate denies it or is undecided."""
    needs = next(
        (p for p in ("sort", "split", "tar", "make", "rbash", "vim.basic", "vimdiff") if p in line),
        "bash",
    )
    if shutil.which(needs, path=_PATH) is None:
        pytest.skip(f"{needs} is not installed")
    run = oracle.run(line)
    assert any(rm_recursive_force(argv) for argv in run.ran("rm")), (line, run.executed)
    assert verdict(line) in ("deny", "undecided")


def test_the_oracle_sees_what_bash_runs(oracle: BashOracle) -> None:
    """The reference itself: a stub logs rm's argv, through a shell string, and a
    line that runs nothing logs nothing."""
    assert oracle.run("sh -c 'rm -rf x'").ran("rm") == [("rm", "-rf", "x")]
    assert oracle.run("echo rm -rf x").ran("rm") == []
    assert rm_recursive_force(("rm", "--rec", "-f", "x"))
    assert not rm_recursive_force(("rm", "--", "-rf"))
