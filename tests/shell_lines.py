"""A grammar of shell lines that hide ``rm -r -f`` (or a harmless decoy) in the
constructs bash expands at run time: wrappers, shells given strings or stdin,
here-documents, ``eval``, substitutions, control flow, functions, arithmetic and
subscripts, prompt strings, exported functions, interpreters, files written and
run. :func:`lines` is the Hypothesis strategy; each construct is a function from
a command to a command, applied up to three deep, quoting what it embeds so that
bash reads it back as written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from hypothesis import strategies as st

Wrap = Callable[[str, int], str]

#: The 27 lines of issue 58: each runs ``rm -r -f x`` in bash 5.2.
TWENTY_SEVEN = [
    "bash <<EOF\nr\\\\m -rf x\nEOF",  # a heredoc body is unescaped: r\\m is r\m, which is rm
    "sh <<EOF\nr\\\\m -rf x\nEOF",
    "cat <<EOF | bash\nr\\\\m -rf x\nEOF",
    "env -S 'rm\\_-rf\\_x'",  # env -S: \_ is a space
    "bash /dev/stdin <<< 'rm -rf x'",
    "$'rm\\0' -rf x",  # bash ends $'...' at its first NUL
    "bash -c \"\\$'rm\\\\0' -rf x\"",
    "echo 'rm -rf x' \\\n| sh",  # a line continuation before | sh
    "echo 'rm -rf x' |\\\nsh",
    "v='a[$(rm -rf x)]'; [[ $v -eq 0 ]]",  # arithmetic evaluates the subscript
    "v='a[$(rm -rf x)]'; a=(1); echo \"${a[v]}\"",
    "v='a[$(rm -rf x)]'; echo \"${!v}\"",
    "s=abc; v='a[$(rm -rf x)]'; echo \"${s:v}\"",
    "v='a[$(rm -rf x)]'; [[ -v $v ]]",
    "test -v 'a[$(rm -rf x)]'",
    "declare -i n='a[$(rm -rf x)]'",
    "declare -i n; n='a[$(rm -rf x)]'",
    "PS4='$(rm -rf x)' bash -xc :",  # set -x expands PS4
    "export PS4='$(rm -rf x)'; bash -xc :",
    "read PS4 <<< '$(rm -rf x)'; set -x; :",
    "printf -v PS4 %s '$(rm -rf x)'; set -x; :",
    "env 'BASH_FUNC_ls%%=() { rm -rf x; }' bash -c ls",  # an exported function
    "bash --rcfile <(echo 'rm -rf x') -i </dev/null",
    "python3 -u -c 'import os; os.system(\"rm -rf x\")'",
    "perl -Mstrict -e 'system(\"rm -rf x\")'",
    'node --eval \'require("child_process").execSync("rm -rf x")\'',
    "python3 - <<EOF\nimport os\nos.system('rm -rf x')\nEOF",
]


def sq(text: str) -> str:
    """``text`` single-quoted for bash."""
    return "'" + text.replace("'", "'\\''") + "'"


def _heredoc_escaped(text: str) -> str:
    """``text`` for an unquoted here-document body (bash unescapes it back)."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


def _env_s(text: str) -> str:
    """``text`` for ``env -S``: a space is ``\\_`` (the string is single-quoted)."""
    return text.replace("\\", "\\\\").replace(" ", "\\_")


#: Lines this property found allowed while the reader was rebuilt (each runs rm -r
#: -f in bash): pinned, the reader must deny them or be undecided.
FOUND_BY_BASH = [
    "bash <<'E0'\n\\rm -rf x\nE0",  # the grammar took the body's first line as words
    "! ! rm -rf x",  # the grammar took the second ! as a program
    ": >./-f; rm -r *",  # the glob gives the file -f as a flag
    "echo | xargs >/dev/null rm -rf x",  # words after a redirection are arguments
    "time ! printf -v PS4 %s '$(w=rm; $w -rf x)'; set -x; :",
    "bash -c 'time ! $'\\''rm\\0x'\\'' -vrf x' _",
    "time PS4='$(env -- rm -rf x)' bash -xc :",  # time's NAME=value is an assignment
    "time RANDOM='a[$(\\rm -vrf x)]'",  # RANDOM is evaluated as arithmetic
    "echo ${x:-`rm -rf x`}",  # a backquote the grammar leaves as text
    'echo "`echo \\`rm -rf x\\``"',  # a nested backquote, seen after unescaping
    "env - $IFS rm -rf x",  # env's lone - is -i, not the command
    "a=$ rm -rf x",  # the grammar takes "$ rm" for one expansion
    "env -- ]= rm -rf x",  # env takes NAME=value after -- too
    "&>\r rm -rf x",  # bash takes a carriage return as part of a word
    ">a {fd}>-- rm -rf x",  # a {name}> redirection, which the grammar takes as a word
    "eval -- rm -rf x",  # -- ends eval's options
    "f(){ sh; }; echo 'rm -rf x' | f",  # a function given a pipe
    "echo 'rm -rf x' | tee >(sh) >/dev/null",  # >(...) reads what tee writes into it
    "echo 'rm -rf x' | echo \"$(sh)\"",  # $(...) inherits the pipe
]

#: The lines of issue 58's second hostile review (each ran rm -r -f in bash and
#: was allowed): programs that run the command they are given but were on no
#: list, git given a command to run, and bash's old arithmetic ``$[...]``.
REVIEW_ROUND_2 = [
    "setarch x86_64 rm -rf v",
    "linux64 rm -rf v",
    "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf v",
    "ssh-agent rm -rf v",
    "capsh -- -c 'rm -rf v'",
    "git ls-remote --upload-pack='rm -r -f v; git-upload-pack' .",
    "git fetch --upload-pack='rm -rf v;git-upload-pack' .",
    "git fetch-pack --upload-pack='rm -rf v;git-upload-pack' . HEAD",
    "git clone -u 'rm -rf v;git-upload-pack' . y",
    "git archive --remote=. --exec='rm -rf v; git-upload-archive' HEAD",
    "x='a[$(rm -rf v)]'; echo $[x]",
    "x='a[$(rm -rf v)]'; y=$[x]",
    "x='a[$(rm -rf v)]'; echo >$[x]",
]
#: The lines of the fourth hostile review (each ran rm -r -f in bash and was
#: allowed), by class: a long option abbreviated (GNU getopt and git take any
#: unique prefix), a value attached inside a cluster of short options, git config
#: renaming a section into ``alias``, program names on no list (``vim.basic``,
#: ``rbash``), a wrapper whose default command is a shell, and rm's synonym of
#: ``-f``. Lines that need a git repository start with ``git``.
REVIEW_ROUND_4 = [
    "yes 'rm -rf v; exit' | head -n 200000 | sort -S 64k --compress=sh >/dev/null",
    "yes 'rm -rf v; exit' | head -n 200000 | sort -S 64k --compress-prog=sh >/dev/null",
    "echo x > f; tar -cf x.tar --checkpoint=1 --checkpoint-act=exec='rm -rf v' f",
    "echo x > f; tar -cf x.tar f; tar -xf x.tar --to-c='rm -rf v'",
    "echo 'rm -rf v' > s; tar -cf x.tar s; tar -xf x.tar --to-c=sh",
    "echo 'rm -rf v' | split --fil=sh",
    "rsync --rs='sh -c \"rm -rf v\"' x localhost:y",
    "man --pag='rm -rf v' ls",
    "git config color.x.y '!rm -rf v'; git config --rename-section color.x alias; git y",
    "git -c user.name=a -c user.email=a@b rebase --root -x'rm -rf v'",
    "git -c user.name=a -c user.email=a@b rebase --root --exe='rm -rf v'",
    "git status -s; echo a > t; git add t; git -c user.name=a -c user.email=a@b commit -qm y; "
    "echo b > t; git difftool -y -x'rm -rf v;:'",
    "echo x > t; git grep --no-index -O'rm -rf v;:' x t",
    "echo x > t; git grep --no-index --open-files='rm -rf v;:' x t",
    "printf 'all:\\n\\trm -rf v\\n' | make --file=/dev/stdin",
    "printf 'all:\\n\\trm -rf v\\n' | make -f/dev/stdin",
    "make --eva='all:;rm -rf v' all",
    "make --ev='$(shell rm -rf v)'",
    "make -sE'$(shell rm -rf v)'",
    "echo x | sed --exp='e rm -rf v'",
    "echo x | sed -ne 'e rm -rf v' -e p",
    "echo x | sed -Ee 's/x/rm -rf v/e' -e p",
    "echo x | sed -ne 'e rm -rf v'",
    "vim.basic -es -c 'call system(\"rm -rf v\")' -c q",
    "vimdiff -es -c 'call system(\"rm -rf v\")' -c q",
    "printf 'rm -rf v\\n' | rbash",
    "yes 'rm -rf v' | head -n 1 | rbash",
    "echo 'rm -rf v' | chroot --skip-chdir /",
    "rm -r --interactive=never v",
]
#: Programs the reader knows nothing of that run what they are given (the bash
#: oracle installs them): its argv, or its first word as a shell line.
UNLISTED = {"unlisted-run": 'exec "$@"', "unlisted-sh-c": 'exec sh -c "$1"'}


def in_a_repository(line: str) -> str:
    """``line`` run in a new git repository with a commit (git's transport lines
    need one to run their command), made by the user the line runs as (git refuses
    a repository another user owns)."""
    return (
        "git init -q r && cd r && "
        "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x; " + line
    )


#: Spellings of the program rm.
PROGRAMS = [
    "rm",
    "\\rm",
    "r''m",
    '"rm"',
    "$'rm'",
    "$'\\x72m'",
    "$'\\162m'",
    "$'rm\\0x'",
    "r\\\nm",
    '"r"m',
    "r$'\\0'm",
]
#: Flag spellings: the first ones are -r and -f, the last ones are not both.
DENIED_FLAGS = [
    "-rf",
    "-fr",
    "-r -f",
    "-R -f",
    "--recursive --force",
    "-r --force",
    "--rec --for",
    "-vrf",
    "x -rf",
]
OTHER_FLAGS = ["-r", "-f", "-- -rf", "-i", "'-r'", "-rv"]
#: Whole commands that run rm -r -f in bash through a trick of their own.
ATOMS = [
    "echo -rf x | xargs rm",
    "printf 'x\\0' | xargs -0 rm -rf",
    "{rm,-rf,x}",
    "IFS=,; X=rm,-rf,x; $X",
    'set -- -rf; rm "$@" x',
    'a=(rm -rf x); "${a[@]}"',
    "rm -r$'f' x",
    'rm -r"f" x',
    "rm -$'\\x72'f x",
    "rm -r\\f x",
    ">/dev/null rm -rf x",
    "rm -rf x |& cat",
    "X=-rf; rm $X x",
    "rm ${X:--rf} x",
    "rm $(echo -rf) x",
    '"$(echo rm)" -rf x',
    "exec 3<<<'rm -rf x'; bash /dev/fd/3",
    "exec 3<<<'rm -rf x'; bash <&3",
    "sh <(echo 'rm -rf x')",
    ". /dev/stdin <<< 'rm -rf x'",
    "source <(echo 'rm -rf x')",
    "bash -c \"$(echo 'rm -rf x')\"",
    "echo 'rm -rf x' | tee /dev/null | sh",
    "cat - <<E9 | sh\nrm -rf x\nE9",
    "sh <<-E9\n\trm -rf x\n\tE9",
    "echo 'r\\0155 -rf x' | sh",
    "sh -c \"echo 'r\\0155 -rf x' | sh\"",
    "bash -O expand_aliases -c $'alias ll=\"rm -rf\"\\nll x'",
    "time -p rm -rf x",
    "select i in a; do rm -rf x; break; done <<< 1",
    "coproc rm -rf x",
    "command -p rm -rf x",
    "env -S 'rm \"-rf\" x'",
    'env -S"rm -rf x"',
    "env -- rm -rf x",
    "nohup rm -rf x",
    "rm -rf x # comment",
    "# comment\nrm -rf x",
    "rm\t-rf\tx",
    "w=rm; $w -rf x",
    'f=x; rm -rf "$f"',
    "rm -rf *",
    ": >./-f; rm -r *",
]
DECOYS = [
    "ls -la",
    "echo rm -rf x",
    "printf '%s\\n' 'rm -rf x'",
    "grep -rf x y",
    "git status",
    "true",
]


def _d(n: int) -> str:
    return f"E{n}"


#: The constructs: each takes the command to hide and a depth (for delimiters).
WRAPS: list[Wrap] = [
    lambda c, n: c,
    lambda c, n: f"env {c}",
    lambda c, n: f"env -u HOME X=1 {c}",
    lambda c, n: f"env -S {sq(_env_s(c))}",
    lambda c, n: f"nice -n 5 {c}",
    lambda c, n: f"timeout 5 {c}",
    lambda c, n: f"command {c}",
    lambda c, n: f"time {c}",
    lambda c, n: f"echo | xargs {c}",
    lambda c, n: f"find . -maxdepth 0 -exec {c} \\;",
    lambda c, n: f"sh -c {sq(c)}",
    lambda c, n: f"bash -c {sq(c)} _",
    lambda c, n: f"bash -xc {sq(c)}",
    lambda c, n: f"sh <<< {sq(c)}",
    lambda c, n: f"bash /dev/stdin <<< {sq(c)}",
    lambda c, n: f"bash -s <<< {sq(c)}",
    lambda c, n: f"bash <<'{_d(n)}'\n{c}\n{_d(n)}",
    lambda c, n: f"bash <<{_d(n)}\n{_heredoc_escaped(c)}\n{_d(n)}",
    lambda c, n: f"cat <<{_d(n)} | sh\n{_heredoc_escaped(c)}\n{_d(n)}",
    lambda c, n: f"echo {sq(c)} | sh",
    lambda c, n: f"echo {sq(c)} \\\n| bash",
    lambda c, n: f"printf '%s\\n' {sq(c)} | bash",
    lambda c, n: f"eval {sq(c)}",
    lambda c, n: f"echo $({c})",
    lambda c, n: f': "$({c})"',
    lambda c, n: f"x=$({c})",
    lambda c, n: f"echo `{c}`" if "`" not in c and "\n" not in c else f"echo $({c})",
    lambda c, n: f"cat <({c})",
    lambda c, n: f"echo ${{x:-$({c})}}",
    lambda c, n: f"[[ -n $({c}) ]]",
    lambda c, n: f"if true; then {c}; fi",
    lambda c, n: f"for i in 1; do {c}; done",
    lambda c, n: f"case a in a) {c};; esac",
    lambda c, n: f"{{ {c}; }}",
    lambda c, n: f"({c})",
    lambda c, n: f"true && {c}",
    lambda c, n: f"false || {c}",
    lambda c, n: f"! {c}",
    lambda c, n: f"f() {{ {c}; }}; f",
    lambda c, n: f"f() {{ {c}; }}",
    lambda c, n: f"v={sq('a[$(' + c + ')]')}; [[ $v -eq 0 ]]",
    lambda c, n: f'a=(1); v={sq("a[$(" + c + ")]")}; echo "${{a[v]}}"',
    lambda c, n: f'v={sq("a[$(" + c + ")]")}; echo "${{!v}}"',
    lambda c, n: f's=abc; v={sq("a[$(" + c + ")]")}; echo "${{s:v}}"',
    lambda c, n: f"test -v {sq('a[$(' + c + ')]')}",
    lambda c, n: f"declare -i n={sq('a[$(' + c + ')]')}",
    lambda c, n: f"typeset -i n; n={sq('a[$(' + c + ')]')}",
    lambda c, n: f"a=(1); unset {sq('a[$(' + c + ')]')}",
    lambda c, n: f"let {sq('a[$(' + c + ')]=1')}",
    lambda c, n: f"v={sq('a[$(' + c + ')]')}; (( v ))",
    lambda c, n: f"RANDOM={sq('a[$(' + c + ')]')}",
    lambda c, n: f"PS4={sq('$(' + c + ')')} bash -xc :",
    lambda c, n: f"read PS4 <<< {sq('$(' + c + ')')}; set -x; :",
    lambda c, n: f"printf -v PS4 %s {sq('$(' + c + ')')}; set -x; :",
    lambda c, n: f'x={sq("$(" + c + ")")}; echo "${{x@P}}"',
    lambda c, n: f"env {sq('BASH_FUNC_ls%%=() { ' + c + '; }')} bash -c ls",
    lambda c, n: f"bash --rcfile <(echo {sq(c)}) -i </dev/null",
    lambda c, n: f"BASH_ENV=<(echo {sq(c)}) bash -c :",
    lambda c, n: f"trap {sq(c)} EXIT",
    lambda c, n: f"echo {sq(c)} > s.sh; sh s.sh",
    lambda c, n: f"printf '%s\\n' {sq(c)} > s.sh && bash ./s.sh",
    lambda c, n: f"X={sq(c)}; $X",
    lambda c, n: f'set -- {c}; "$@"' if "\n" not in c else f"eval {sq(c)}",
    lambda c, n: f"mapfile -C {sq(c + ' #')} -c 1 <<< x",
    lambda c, n: f"python3 -c {sq('import os; os.system(' + repr(c) + ')')}",
    lambda c, n: f"python3 -u - <<< {sq('import os; os.system(' + repr(c) + ')')}",
    lambda c, n: (
        f"perl -Mstrict -e {sq('system(q(' + c + '))')}" if ")" not in c else f"sh -c {sq(c)}"
    ),
    lambda c, n: (
        f"node --eval {sq('require(' + repr('child_process') + ').execSync(' + repr(c) + ')')}"
    ),
    lambda c, n: f"awk {sq('BEGIN { system(' + _awk_string(c) + ') }')}",
    lambda c, n: f"sed -n {sq('1e ' + c)} <<< x" if "\n" not in c else f"sh -c {sq(c)}",
    lambda c, n: f"shopt -s expand_aliases\nalias ll={sq(c)}\nll",
    lambda c, n: f"exec {c}",
    lambda c, n: f"nohup {c}",
    lambda c, n: f"setsid -w {c}",
    lambda c, n: f"stdbuf -oL {c}",
    lambda c, n: f"timeout -s KILL 5 {c}",
    lambda c, n: f"echo x | xargs -I{{}} {c}",
    lambda c, n: f"find . -maxdepth 0 -execdir {c} \\;",
    lambda c, n: f"echo {sq(c)} | tee >(sh) >/dev/null",
    lambda c, n: f"sh < <(echo {sq(c)})",
    lambda c, n: f"source /dev/stdin <<< {sq(c)}",
    lambda c, n: f'eval "$(echo {sq(c)})"',
    lambda c, n: f"true &&\\\n{c}",
    lambda c, n: f"{{ {c}; }} 2>&1 | cat",
    lambda c, n: f"until {c}; do break; done",
    lambda c, n: f'[ -n "$({c})" ]',
    lambda c, n: f"read -r x <<< {sq(c)}; $x",
    lambda c, n: f'mapfile -t a <<< {sq(c)}; eval "${{a[0]}}"',
    lambda c, n: f"cat <<-{_d(n)} | sh\n\t{_heredoc_escaped(c)}\n\t{_d(n)}",
    lambda c, n: f'bash -c "$1" _ {sq(c)}',
    lambda c, n: f"command -p {c}" if not c.startswith("rm") else f"command {c}",
    lambda c, n: f"x=1 {c}",
    lambda c, n: f"{c} 2>/dev/null",
    lambda c, n: f"declare -x X=1; {c}",
    # programs that run the command they are given (issue 58's second review)
    lambda c, n: f"setarch x86_64 {c}",
    lambda c, n: f"linux64 -R {c}",
    lambda c, n: f"capsh -- -c {sq(c)}",
    lambda c, n: f"unlisted-run {c}",
    lambda c, n: f"unlisted-run env {c}",
    lambda c, n: f"unlisted-sh-c {sq(c)}",
    lambda c, n: f"unlisted-run sh -c {sq(c)}",
    lambda c, n: f"git ls-remote --upload-pack={sq(c + chr(10) + ':')} .",
    lambda c, n: f"git ls-remote --upload-p={sq(c + chr(10) + ':')} .",
    lambda c, n: f"git -c core.sshCommand={sq(c + chr(10) + ':')} ls-remote ssh://h/r",
    lambda c, n: f"GIT_SSH_COMMAND={sq(c + chr(10) + ':')} git ls-remote ssh://h/r",
    lambda c, n: f"v={sq('a[$(' + c + ')]')}; echo $[v]",
    lambda c, n: f'v={sq("a[$(" + c + ")]")}; echo "$[v]"',
    lambda c, n: f"v={sq('a[$(' + c + ')]')}; y=$[v]",
    lambda c, n: f"v={sq('a[$(' + c + ')]')}; cat <<< $[v]",
]


def _awk_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def available_wraps() -> list[Wrap]:
    """The constructs whose programs are installed (an interpreter may be missing)."""
    programs = ("python3", "perl", "node", "awk", "sed", "setarch", "linux64", "git")
    needs = [(name, f"{name} ") for name in programs]
    needs += [("capsh", "capsh "), ("git", "GIT_SSH_COMMAND=")]
    path = os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/sbin"))
    missing = [mark for name, mark in needs if shutil.which(name, path=path) is None]
    return [w for w in WRAPS if not any(w("X", 0).startswith(m) for m in missing)]


@st.composite
def lines(draw: st.DrawFn, *, denied_share: float = 0.8) -> str:
    """A line hiding ``rm -r -f`` most of the time, else ``rm`` with other flags or a
    decoy, inside up to three constructs."""
    kind = draw(st.floats(0, 1))
    if kind < denied_share / 3:
        command = draw(st.sampled_from(ATOMS))
    elif kind < denied_share:
        command = f"{draw(st.sampled_from(PROGRAMS))} {draw(st.sampled_from(DENIED_FLAGS))} x"
    elif kind < (1 + denied_share) / 2:
        command = f"{draw(st.sampled_from(PROGRAMS))} {draw(st.sampled_from(OTHER_FLAGS))} x"
    else:
        command = draw(st.sampled_from(DECOYS))
    wraps = available_wraps()
    for depth in range(draw(st.integers(0, 3))):
        command = draw(st.sampled_from(wraps))(command, depth)
    return command


#: Tokens of a "soup": shell syntax in random order around ``rm -rf x``, where the
#: grammar may read a line otherwise than bash (most soups are no valid line).
SOUP = [
    *("rm", "rm -rf x", "-rf", "x", ";", "&&", "||", "|", "&", "(", ")", "{", "}", "$("),
    *("`", "'", '"', "\\", "\n", "<<", "EOF", "<<<", "#", "!", "if", "then", "fi", "else"),
    *("case", "in", "esac", ";;", "=", "$", "${", "[[", "]]", "eval", "sh -c", "time"),
    *("function", "f()", "f", "do", "done", "while", "for", "echo", "cat", "<", ">", "2>&1"),
    *("$'", "a=", "export", "declare", "--", "-", "*", "?", "~", "\t", "<(", ">(", "|&"),
    *("coproc", "select", "until", "elif", "[", "]", "test", "let", "((", "))", "$((", "exec"),
    *("command", "builtin", "source", ".", "alias", "xargs", "env", "-S", "bash", "<<-"),
    *("<&", ">&", "{a,b}", "IFS=", "$IFS", "PS4=", "set -x", "trap", "EXIT"),
]


@st.composite
def soups(draw: st.DrawFn) -> str:
    """``rm -rf x`` among up to twelve tokens of :data:`SOUP`, with or without
    blanks between them."""
    tokens = draw(st.lists(st.sampled_from(SOUP), min_size=1, max_size=12))
    tokens.insert(draw(st.integers(0, len(tokens))), "rm -rf x")
    blanks = draw(st.lists(st.booleans(), min_size=len(tokens), max_size=len(tokens)))
    return "".join(t + (" " if b else "") for t, b in zip(tokens, blanks, strict=True))
