"""The program table: what the reader knows of the programs a line runs.

Every program name falls in one of these classes, checked in this order:

* a **bash builtin** (:data:`BUILTINS`): each is either read (its arguments
  checked where bash evaluates them: ``declare -i``, ``printf -v NAME``, ``read
  NAME``, ``test -v``; ``eval``, ``trap`` and ``command`` read as commands) or, for
  one not listed as understood, undecided;
* a **shell** (:data:`SHELLS`): its options read by a positive list; its ``-c``
  string, a script on its stdin (a here-string, a heredoc, ``echo``/``cat``
  piped in) or ``/dev/stdin`` read as a command line; any option not in the list
  (``-i``, ``--rcfile``, ``-O expand_aliases``) undecided; a shell whose syntax is
  not bash's (:data:`FOREIGN_SHELLS`) undecided whenever it is given code;
* a **wrapper** (:data:`WRAPPERS`, and ``setarch``, the dynamic loader, ``capsh``
  in :mod:`.commands`): it runs the command in its arguments, whose
  own options are skipped by their table; an option not in it is undecided;
* a program that **runs code from its arguments or its input** in a way of its
  own (:data:`INTERPRETERS`: python, perl, node, ruby, php, lua, awk, sed ...):
  understood only when it is given a script file and no option outside its list
  of options that carry no code (``python3 -u x.py``); any code flag, a script on
  stdin, or an unknown option is undecided (the code is not bash's and is not read);
* a program that **runs a command of its own** the reader does not model
  (:data:`RUNS_COMMANDS`: ``ssh``, ``parallel``, ``unshare``, ``tmux`` ...):
  undecided;
* a program known to take its words as data (:data:`DATA`: the coreutils,
  ``grep``, ``curl``, ``jq`` ...);
* any other program: its words may name the program it runs (``setarch``,
  ``ld.so`` and ``ssh-agent`` do), so a word naming a program, or reading as a
  command line, is undecided for that program, or for every rule when it names a
  program that runs code (:mod:`.unknown`). What a program does with files (a
  Makefile, a script, a test suite) is not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...base.patterns import LazyPattern
from .model import ShellError
from .words import Word

__all__ = [
    "BUILTINS",
    "DATA",
    "FOREIGN_SHELLS",
    "INTERPRETERS",
    "LOADER",
    "READ_ONLY",
    "RUNS_COMMANDS",
    "SETARCH",
    "SETARCH_ALIASES",
    "SHELLS",
    "WRAPPERS",
    "Interpreter",
    "Options",
    "Spec",
    "env_split",
    "family",
    "interpreter",
    "is_loader",
    "names",
    "skip_options",
]


def names(text: str) -> frozenset[str]:
    """The words of ``text``: a table of names written as one string."""
    return frozenset(text.split())


#: Shells whose ``-c`` string, script on stdin or ``/dev/stdin`` is read with the
#: bash grammar (POSIX shells: what they run on a line bash reads alike is read
#: alike; where they differ the reading has more undecided parts, not fewer).
SHELLS = frozenset({"sh", "bash", "dash", "ash", "posh"})
#: Shells whose syntax is not bash's: any code they are given is undecided.
FOREIGN_SHELLS = frozenset(
    {"zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "yash", "fish", "csh", "tcsh", "rc", "es"}
    | {"elvish", "nu", "xonsh", "pwsh", "powershell"}
)

#: Every bash builtin (``enable -a`` in bash 5.2) and reserved word the grammar
#: may give as a command's name.
BUILTINS = names(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt "
    "continue declare dirs disown echo enable eval exec exit export false fc fg getopts "
    "hash help history jobs kill let local logout mapfile popd printf pushd pwd read "
    "readarray readonly return set shift shopt source suspend test times trap true type "
    "typeset ulimit umask unalias unset wait coproc time"
)

#: Programs known to write no file (so running one cannot have written a script
#: the line runs next); any other program may.
READ_ONLY = names(
    "cat echo printf ls pwd cd grep egrep fgrep rg head tail wc cut tr sort uniq nl od "
    "hexdump xxd file stat du df basename dirname realpath readlink which type date id "
    "whoami uname hostname sleep true false test [ seq expr jq less more diff cmp column "
    "comm paste fold fmt env printenv tty groups nproc"
)

#: Programs whose arguments are data: they run no program and no code named in
#: their words (what they do with files is not read). A program in no table at
#: all is not taken as one of these: its words may name the program it runs
#: (``setarch x86_64 rm -rf x``), see :mod:`.unknown`.
DATA = READ_ONLY | names(
    "mkdir rmdir rm cp mv ln touch chmod chown chgrp truncate mktemp mkfifo shred unlink "
    "dd sync base64 base32 md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum "
    "cksum sum tac rev shuf numfmt factor join pr expand unexpand tsort yes logname users "
    "who uptime free ps pgrep pkill killall tree gzip gunzip zcat bzip2 bunzip2 bzcat xz "
    "unxz xzcat zstd unzstd lz4 unzip curl ping dig nslookup host whois strings nm "
    "objdump readelf size iconv locale getconf lscpu lsblk netstat ss vmstat iostat "
    "clear tput ruff black isort flake8 pycodestyle pydocstyle openssl ssh-keygen"
)


@dataclass(frozen=True, slots=True)
class Spec:
    """A program's options: which take a value (short letters, long names), which
    take none, which stop it from running a command, and what comes before the
    command it runs."""

    values: str = ""  # short options that take a value: -u USER, -uUSER
    flags: str = ""  # short options that take none
    optional: str = ""  # short options whose value, if any, is attached: -i[R]
    long_values: frozenset[str] = frozenset()  # --user USER, --user=USER
    long_flags: frozenset[str] = frozenset()  # --login; --name=value also accepted
    stops: str = ""  # short options with which no command runs (command -v)
    long_stops: frozenset[str] = frozenset()
    positional: int = 0  # words before the command: timeout's DURATION
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    numeric: bool = False  # -N is an option (nice -5)
    shell: str = ""  # options that run a shell when no command is given (sudo -s)
    long_shell: frozenset[str] = frozenset()  # sudo --shell, --login
    bare_shell: bool = False  # with no command it runs a shell (chroot NEWROOT)
    split: str = ""  # an option whose value is split into words (env -S)
    dash: bool = False  # a lone "-" is an option (env -: -i), not the command


def _f(text: str) -> frozenset[str]:
    return frozenset(text.split())


_HELP = _f("--help --version")

#: The wrappers: programs that run the command in their arguments. Each one's
#: options are skipped as its manual page gives them; an option not listed makes
#: the command undecided (never read as the command).
WRAPPERS: dict[str, Spec] = {
    "sudo": Spec(
        values="ugpChrtTURD",
        flags="AbEeHiKklnPSsVv",
        long_values=_f(
            "--user --group --prompt --close-from --host --role --type "
            "--command-timeout --other-user --chroot --chdir"
        ),
        long_flags=_f(
            "--askpass --background --preserve-env --set-home --login "
            "--remove-timestamp --reset-timestamp --non-interactive "
            "--preserve-groups --stdin --shell --bell"
        ),
        stops="elvKV",
        long_stops=_f("--edit --list --validate --help --version"),
        assignments=True,
        shell="is",
        long_shell=_f("--shell --login"),
    ),
    "doas": Spec(values="uC", flags="nsL", stops="CL", shell="s"),
    "env": Spec(
        values="uCS",
        flags="i0v",
        long_values=_f("--unset --chdir --split-string"),
        long_flags=_f(
            "--ignore-environment --null --debug --block-signal --default-signal "
            "--ignore-signal --list-signal-handling"
        ),
        long_stops=_HELP,
        assignments=True,
        split="S",
        dash=True,
    ),
    "nice": Spec(values="n", long_values=_f("--adjustment"), long_stops=_HELP, numeric=True),
    "nohup": Spec(long_stops=_HELP),
    "time": Spec(  # bash's keyword, and GNU time: NAME=value before the command
        values="fo",
        flags="pavq",
        long_values=_f("--format --output"),
        long_flags=_f("--portability --append --verbose --quiet"),
        long_stops=_HELP,
        assignments=True,
    ),
    "timeout": Spec(
        values="sk",
        flags="v",
        long_values=_f("--signal --kill-after"),
        long_flags=_f("--preserve-status --foreground --verbose"),
        long_stops=_HELP,
        positional=1,
    ),
    "command": Spec(flags="p", stops="vV"),
    "builtin": Spec(),
    "exec": Spec(values="a", flags="cl"),
    "setsid": Spec(flags="cfw", long_flags=_f("--ctty --fork --wait"), long_stops=_HELP),
    "stdbuf": Spec(values="ioe", long_values=_f("--input --output --error"), long_stops=_HELP),
    "ionice": Spec(
        values="cnpPu",
        flags="t",
        long_values=_f("--class --classdata --pid --pgid --uid"),
        long_flags=_f("--ignore"),
        stops="pPu",
        long_stops=_f("--pid --pgid --uid --help --version"),
    ),
    "chrt": Spec(
        values="TPD",
        flags="abdfioRrv",
        long_values=_f("--sched-runtime --sched-period --sched-deadline"),
        long_flags=_f(
            "--all-tasks --batch --deadline --fifo --idle --other --reset-on-fork --rr --verbose"
        ),
        stops="mp",
        long_stops=_f("--max --pid --help --version"),
        positional=1,
    ),
    "taskset": Spec(
        flags="ac",
        long_flags=_f("--all-tasks --cpu-list"),
        stops="p",
        long_stops=_f("--pid --help --version"),
        positional=1,
    ),
    "chroot": Spec(
        long_values=_f("--groups --userspec"),
        long_flags=_f("--skip-chdir"),
        long_stops=_HELP,
        positional=1,
        bare_shell=True,
    ),
    "strace": Spec(values="abeEIoOpPsSuUX", flags="cCdDfFhiknqrtTvVwxyYzZ", long_stops=_HELP),
    "ssh-agent": Spec(values="aEOPt", flags="cdDs", stops="k", long_stops=_HELP),
    "ltrace": Spec(values="aADeFlnopsuwx", flags="bcCfhiLrStTV", long_stops=_HELP),
}

XARGS = Spec(
    values="aEdILnPs",
    flags="0oprtx",
    optional="eil",
    long_values=_f("--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
    long_flags=_f(
        "--null --open-tty --interactive --no-run-if-empty --verbose --exit "
        "--replace --eof --max-lines"
    ),
    long_stops=_f("--show-limits --help --version"),
)
WATCH = Spec(
    values="nq",
    flags="bcCegprtwx",
    optional="d",
    long_values=_f("--interval --equexit"),
    long_flags=_f(
        "--beep --color --no-color --errexit --chgexit --precise --no-rerun "
        "--no-title --no-wrap --exec --differences"
    ),
    long_stops=_HELP,
)
SU = Spec(
    values="cgGswC",
    flags="flmPpT",
    long_values=_f(
        "--command --session-command --group --supp-group --shell --whitelist-environment"
    ),
    long_flags=_f("--fast --login --preserve-environment --pty"),
    long_stops=_HELP,
)
FLOCK = Spec(
    values="wEc",
    flags="sxunoFv",
    long_values=_f("--timeout --conflict-exit-code --command"),
    long_flags=_f("--shared --exclusive --unlock --nonblock --close --no-fork --verbose"),
    long_stops=_HELP,
    positional=1,
)

#: ``setarch ARCH``'s options (and those of its aliases ``linux32``, ``linux64``,
#: ``i386``, ``x86_64`` ..., which take no ARCH): with no command it runs a shell.
SETARCH = Spec(
    flags="v3BFILRSTXZ",
    long_flags=_f(
        "--verbose --3gb --4gb --32bit --fdpic-funcptrs --short-inode --addr-compat-layout "
        "--addr-no-randomize --whole-seconds --sticky-timeouts --read-implies-exec "
        "--mmap-page-zero --uname-2.6"
    ),
    stops="hV",
    long_stops=_f("--list --help --version"),
)
#: The personalities ``setarch`` is installed under (util-linux), each running
#: ``setarch NAME``.
SETARCH_ALIASES = names("linux32 linux64 i386 i486 i586 i686 x86_64 uname26")
#: The dynamic loader run as a program (``/lib64/ld-linux-x86-64.so.2 PROGRAM``):
#: its options, then the program it loads and runs.
LOADER = Spec(
    long_values=_f(
        "--library-path --inhibit-rpath --audit --preload --argv0 "
        "--glibc-hwcaps-prepend --glibc-hwcaps-mask"
    ),
    long_flags=_f("--inhibit-cache"),
    long_stops=_f("--list --verify --help --version --list-tunables --list-diagnostics"),
)
_LOADER_NAME = LazyPattern(
    r"ld(?:-linux(?:-[A-Za-z0-9_-]+)?|-musl-[A-Za-z0-9_-]+)?\.so(?:\.[0-9]+)*"
)


def is_loader(program: str) -> bool:
    """Whether ``program`` names the dynamic loader (``ld-linux-x86-64.so.2``,
    ``ld.so``, ``ld-musl-x86_64.so.1``)."""
    return _LOADER_NAME().fullmatch(program) is not None


#: Bash's and sh's options that run nothing of their own and change no reading.
#: ``-c`` (a string), ``-s`` (stdin) and ``-o``/``-O`` (a name) are read apart.
SHELL_FLAGS = frozenset("abeflhmnprtuvxBCEHPT")
SHELL_LONG = _f(
    "--login --noprofile --norc --posix --restricted --verbose --noediting "
    "--help --version --dump-strings --dump-po-strings --pretty-print"
)
#: ``set -o`` / ``bash -o`` names and ``shopt`` names that change no reading.
SET_OPTIONS = _f(
    "allexport braceexpand errexit errtrace functrace hashall ignoreeof monitor noclobber "
    "noexec noglob nolog notify nounset onecmd physical pipefail posix privileged "
    "verbose xtrace interactive-comments emacs vi"
)
SHOPT_OPTIONS = _f(
    "autocd cdable_vars cdspell checkhash checkjobs checkwinsize cmdhist dirspell dotglob "
    "execfail failglob globasciiranges globstar gnu_errfmt histappend histreedit "
    "histverify hostcomplete huponexit inherit_errexit lastpipe lithist login_shell "
    "mailwarn no_empty_cmd_completion nocaseglob nocasematch noexpand_translation "
    "nullglob patsub_replacement progcomp progcomp_alias promptvars restricted_shell "
    "shift_verbose sourcepath varredir_close assoc_expand_once complete_fullquote "
    "direxpand force_fignore globskipdots"
)


@dataclass(frozen=True, slots=True)
class Interpreter:
    """A program that runs code of its own language: its options that carry no code
    and take no value (``flags``, ``long_flags``), those that take a value that is
    no code (``values``, ``long_values``), and whether an ``=`` joins a long
    option to its value. Any other option, a script on stdin, or no script at all
    with a stdin that is not the terminal is undecided."""

    flags: str = ""
    values: str = ""
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    #: options after which the next word is a module or file run like a script
    #: (``python -m pytest``): the rest are its arguments.
    module: str = ""
    #: modules whose arguments are code (``python -m timeit 'stmt'``)
    code_modules: frozenset[str] = frozenset()


_PYTHON = Interpreter(
    flags="bBdEhIOPqsSuvVx",
    values="WX",
    long_flags=_f("--help --version --help-env --help-xoptions --help-all"),
    long_values=_f("--check-hash-based-pycs"),
    module="m",
    code_modules=_f("timeit pdb code cProfile profile trace doctest runpy idlelib"),
)
#: Interpreters, by name (versioned names such as ``python3.12`` are matched by
#: :func:`interpreter`).
INTERPRETERS: dict[str, Interpreter] = {
    "python": _PYTHON,
    "perl": Interpreter(flags="aclnpsStTuUvwWX", values="CdDiIl0", long_flags=_HELP),
    "node": Interpreter(
        flags="hv",
        long_flags=_f(
            "--help --version --no-warnings --enable-source-maps --trace-warnings "
            "--trace-uncaught --no-deprecation --throw-deprecation --preserve-symlinks "
            "--test --watch --inspect --inspect-brk --abort-on-uncaught-exception"
        ),
        long_values=_f("--max-old-space-size --stack-size --title --env-file --conditions"),
    ),
    "ruby": Interpreter(flags="acdlnpsSvwWyU", values="CEFIKT", long_flags=_HELP),
    "php": Interpreter(flags="hHilnqsvw", values="cdz", long_flags=_HELP),
    "lua": Interpreter(flags="vEW", long_flags=_HELP),
    "tclsh": Interpreter(),
    "wish": Interpreter(),
    "Rscript": Interpreter(long_flags=_f("--help --version --vanilla --verbose")),
    "julia": Interpreter(long_flags=_HELP),
    "osascript": Interpreter(),
    "groovy": Interpreter(),
    "scala": Interpreter(),
    "guile": Interpreter(),
    "racket": Interpreter(),
    "elixir": Interpreter(),
    "erl": Interpreter(),
    "escript": Interpreter(),
    "swift": Interpreter(),
    "jshell": Interpreter(),
    "gawk": Interpreter(),
    "awk": Interpreter(),
    "mawk": Interpreter(),
    "nawk": Interpreter(),
    "sed": Interpreter(),
    "gsed": Interpreter(),
    "bc": Interpreter(),
    "dc": Interpreter(),
    "ed": Interpreter(),
    "ex": Interpreter(),
    "vi": Interpreter(),
    "vim": Interpreter(),
    "nvim": Interpreter(),
    "emacs": Interpreter(),
    "gdb": Interpreter(),
    "lldb": Interpreter(),
    "gnuplot": Interpreter(),
    "sqlite3": Interpreter(),
    "psql": Interpreter(),
    "mysql": Interpreter(),
    "expect": Interpreter(),
    "make": Interpreter(),
    "gmake": Interpreter(),
    "cmake": Interpreter(),
}
_VERSIONED = LazyPattern(r"(python|perl|ruby|php|lua|luajit|node|tclsh|wish)[0-9.]*(?:-[a-z0-9]+)?")


def interpreter(program: str) -> Interpreter | None:
    """The :data:`INTERPRETERS` entry of ``program`` (``python3.12`` is
    ``python``, ``nodejs`` is ``node``, ``luajit`` is ``lua``)."""
    found = INTERPRETERS.get(program)
    if found is not None:
        return found
    m = _VERSIONED().fullmatch(program)
    if m is not None:
        base = {"luajit": "lua"}.get(m.group(1), m.group(1))
        return INTERPRETERS.get(base)
    if program == "nodejs":
        return INTERPRETERS["node"]
    return None


#: Names a program of a table is also installed under: the vim family (``vim.basic``,
#: ``vimdiff``, ``gvim``, ``rview`` ...), emacs builds, versioned or restricted
#: shells (``rbash``, ``bash5.2``, ``dash.static``, ``zsh-5.9``).
_FAMILIES: tuple[tuple[LazyPattern, str], ...] = (
    (LazyPattern(r"[gre]?(?:vim|vi|view|ex|nvim)(?:diff|x)?(?:[.-][A-Za-z0-9_.-]+)?"), "vim"),
    (LazyPattern(r"emacs(?:[0-9.]+|-[A-Za-z0-9_.-]+)?"), "emacs"),
    (LazyPattern(r"r?(bash|sh|dash|ash|posh)(?:[0-9][0-9.]*|[.-]static)?"), ""),
    (LazyPattern("(" + "|".join(sorted(FOREIGN_SHELLS)) + r")(?:-?[0-9][0-9.]*|[.-]static)"), ""),
)


def family(program: str) -> str:
    """The table name ``program`` is a variant of (``vim.basic`` is ``vim``,
    ``rbash`` is ``bash``), or ``program`` itself; a name on no list ending in
    ``sh`` is taken for a shell whose syntax is not read (``fish``)."""
    for pattern, name in _FAMILIES:
        m = pattern().fullmatch(program)
        if m is not None:
            return name or m.group(1)
    return program


#: Programs that run a command or code of their own that the reader does not
#: model: a command of theirs is undecided, for every rule.
RUNS_COMMANDS = names(
    "setpriv unshare nsenter firejail systemd-run numactl prlimit parallel ssh proot "
    "bwrap faketime torsocks proxychains proxychains4 catchsegv valgrind tmux screen at "
    "batch xvfb-run dbus-run-session dbus-launch fakeroot sg newgrp pkexec cpulimit "
    "trickle eatmydata unbuffer rlwrap hyperfine entr chronic perf lxc-attach npx bunx "
    "pnpx uvx pipx script runcon sandbox-exec gosu su-exec chpst setuidgid softlimit envdir "
    "envuidgid tini dumb-init catatonit sshpass mpirun mpiexec srun systemd-nspawn schroot "
    "fakechroot nocache watchexec nodemon dtach abduco sem tsp daemonize start-stop-daemon "
    "run0 cgexec gpg-agent"
)


@dataclass(slots=True)
class Options:
    """What :func:`skip_options` found: the words from the command on, the
    options' values, or why no command can be told (``stop``: none runs)."""

    rest: list[Word]
    values: dict[str, str | None] = field(default_factory=dict)
    undecided: str = ""
    stop: bool = False
    #: NAME=value words a wrapper takes before the command (env, sudo)
    assigned: list[tuple[str, str]] = field(default_factory=list)


def _long(spec: Spec, name: str) -> str | None:
    """A long option's full name: as given, or the one known name it abbreviates."""
    known = spec.long_values | spec.long_flags | spec.long_stops
    if name in known:
        return name
    matches = [k for k in known if k.startswith(name)]
    return matches[0] if len(matches) == 1 else None


_ENV_ASSIGNMENT = LazyPattern(r"[^=]+=")


class _Done(Exception):
    """Raised inside :func:`skip_options` with what it found when no command can
    be told (an option not understood, or one with which none runs)."""

    def __init__(self, options: Options) -> None:
        self.options = options


def skip_options(spec: Spec, args: Sequence[Word]) -> Options:
    """A wrapper's own options skipped, as its table gives them."""
    words = list(args)
    found = Options([])
    i = 0
    try:
        while i < len(words):
            word = words[i]
            value = word.value
            if value is None:
                if word.may_be_flag or (spec.assignments and word.why):
                    raise _Done(Options([], found.values, "a wrapper's options are computed"))
                break  # the command, or a positional word (timeout "$T" rm)
            if value == "--":
                i += 1
                while spec.assignments and i < len(words) and _is_assignment(words[i]):
                    variable, _, assigned = (words[i].value or "").partition("=")
                    found.assigned.append((variable, assigned))  # env -- NAME=value cmd
                    i += 1
                break
            if spec.assignments and _is_assignment(word):
                variable, _, assigned = value.partition("=")
                found.assigned.append((variable, assigned))
                i += 1
            elif value.startswith("--"):
                i = _long_option(spec, words, i, found)
            elif (spec.numeric and value[1:].isdigit() and value.startswith("-")) or (
                spec.dash and value == "-"
            ):
                i += 1
            elif not value.startswith("-") or value == "-":
                break
            else:
                i = _short_options(spec, words, i, found)
            key = "--split-string" if "--split-string" in found.values else f"-{spec.split}"
            if spec.split and key in found.values:
                words, i = [*_split(found, key), *words[i:]], 0
    except _Done as done:
        return done.options
    found.rest = words[i + spec.positional :] if i + spec.positional <= len(words) else []
    return found


def _is_assignment(word: Word) -> bool:
    """``NAME=value`` before the command of ``env`` or ``sudo`` (any NAME)."""
    value = word.value
    return value is not None and bool(_ENV_ASSIGNMENT().match(value)) and not value.startswith("-")


def _long_option(spec: Spec, words: list[Word], i: int, found: Options) -> int:
    """``--name``, ``--name=value``, ``--name value``: where the next word is."""
    given, eq, attached = (words[i].value or "").partition("=")
    name = _long(spec, given)
    if name is None:
        raise _Done(Options([], found.values, "a wrapper's option is not understood"))
    if name in spec.long_stops:
        raise _Done(Options([], found.values, stop=True))
    if name in spec.long_values and not eq:
        if i + 1 >= len(words):
            raise _Done(Options([], found.values, stop=True))
        found.values[name] = words[i + 1].value
        return i + 2
    found.values[name] = attached if eq else ""
    return i + 1


def _short_options(spec: Spec, words: list[Word], i: int, found: Options) -> int:
    """``-abc``, ``-uUSER``, ``-u USER``: where the next word is."""
    value = words[i].value or ""
    for j in range(1, len(value)):
        letter = value[j]
        if letter in spec.stops:
            raise _Done(Options([], found.values, stop=True))
        if letter in spec.values:
            if j + 1 < len(value):
                found.values[f"-{letter}"] = value[j + 1 :]
            elif i + 1 < len(words):
                found.values[f"-{letter}"] = words[i + 1].value
                return i + 2
            else:
                raise _Done(Options([], found.values, stop=True))
            break
        if letter in spec.optional:
            found.values[f"-{letter}"] = value[j + 1 :]
            break
        if letter not in spec.flags:
            raise _Done(Options([], found.values, "a wrapper's option is not understood"))
        found.values[f"-{letter}"] = ""
    return i + 1


def _split(found: Options, key: str) -> list[Word]:
    """The words of ``env -S STRING``, in place of the option."""
    split = found.values.pop(key)
    if split is None:
        raise _Done(Options([], found.values, "a wrapper splits a computed string"))
    parts = env_split(split)
    if parts is None:
        raise _Done(Options([], found.values, "env -S is given a string it expands"))
    return parts


_ENV_ESCAPES = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class _EnvWords:
    """The words ``env -S`` has split so far, and the one it is in."""

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.current: list[str] = []
        self.started = False

    def add(self, text: str) -> None:
        self.current.append(text)
        self.started = True

    def end(self) -> None:
        if self.started:
            self.words.append(Word.literal("".join(self.current)))
        self.current, self.started = [], False


def env_split(text: str) -> list[Word] | None:
    """The words GNU ``env -S`` splits ``text`` into (its own rules: ``\\_`` is a
    space, ``'...'`` and ``"..."`` quote, ``#`` starts a comment, ``\\c`` ends the
    string); None when the string expands a variable (``${NAME}``), which is not
    evaluated. Raises ShellError for a string env refuses (an unknown escape)."""
    out = _EnvWords()
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = ""
            elif c == "\\" and text[i + 1 : i + 2] in ("\\", "'"):
                i += 1
                out.add(text[i])
            else:
                out.add(c)
        elif c == "$":
            return None
        elif c == "\\":
            if text[i + 1 : i + 2] == "c":
                break
            _env_escape(text[i + 1 : i + 2], quote, out)
            i += 1
        elif quote == '"':
            if c == '"':
                quote = ""
            else:
                out.add(c)
        elif c in "'\"":
            quote = c
            out.started = True
        elif c in " \t\n\v\f\r":
            out.end()
        elif c == "#" and not out.started:
            break
        else:
            out.add(c)
        i += 1
    if quote:
        raise ShellError("env -S is given a string with an unclosed quote")
    out.end()
    return out.words


def _env_escape(escaped: str, quote: str, out: _EnvWords) -> None:
    """One ``env -S`` backslash escape (``\\_``: a space, or between words)."""
    if escaped == "_":
        if quote:
            out.add(" ")
        else:
            out.end()
    elif escaped in _ENV_ESCAPES:
        out.add(_ENV_ESCAPES[escaped])
    elif escaped in ("\\", "'", '"', "#", "$"):
        out.add(escaped)
    else:
        raise ShellError("env -S is given a string with an escape it refuses")
