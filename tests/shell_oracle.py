"""Bash itself, as the reference the shell reader is held to.

:class:`BashOracle` runs one command line in the real ``bash`` and reports every
program that line executed, with its argv. It is built to be safe on a developer's
machine and in CI:

* a throwaway folder (``tempfile``) holds everything: the working directory the line
  runs in, a ``bin`` folder that is the line's whole ``PATH``, and the logs;
* ``bin`` holds a **logging stub** for every program name the generated lines use
  (``rm``, ``ls``, ``git`` ...): a ``/bin/sh`` script that writes its argv to the
  log folder and exits 0 (when executed; a shell reading it as a script, which
  the real binary would not allow, logs nothing), so no real ``rm`` ever runs;
  only the programs that run
  code or carry text to code (the shells, ``env``, ``xargs``, ``find``, ``cat``,
  ``timeout``, ``nice``, the interpreters ...) are links to the real ones, so that
  what bash and they would run is what is seen;
* the environment is empty but for ``PATH``, ``HOME`` (the throwaway folder) and
  ``LC_ALL=C``; stdin is ``/dev/null``; each line has a timeout and its whole
  process group is killed after it;
* where the machine allows it, the line runs as the unprivileged user ``nobody``
  (``setpriv``, when this process is root) in a namespace with no network
  (``unshare -n``), and under ``strace -f -e trace=execve``, which sees every
  program executed, including by an absolute path (``/bin/rm``) a stub cannot
  catch. What was not available is said in :attr:`BashOracle.isolation`.

The oracle needs ``bash`` and ``/bin/sh``; :func:`available` says whether they are
there (the tests skip, saying why, when not).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from shell_lines import UNLISTED

#: Programs that run code, or carry text on to a program that does: linked to the
#: real ones (when installed) so that what they run is seen. Everything else the
#: lines name is a logging stub.
REAL = (
    "bash",
    "sh",
    "dash",
    "env",
    "xargs",
    "find",
    "cat",
    "tee",
    "timeout",
    "nice",
    "nohup",
    "setsid",
    "stdbuf",
    "base64",
    "tr",
    "sed",
    "awk",
    "perl",
    "python3",
    "node",
    # programs that run the command they are given (issue 58's second review), and
    # git, which runs a command given in an option (--upload-pack, core.sshCommand)
    "git",
    "setarch",
    "linux64",
    "ssh-agent",
    "capsh",
    # programs that run a command given in an abbreviated option, a shell's other
    # names, an editor (the fourth review)
    "make",
    "sort",
    "split",
    "tar",
    "head",
    "yes",
    "rbash",
    "vim.basic",
    "vimdiff",
)
#: Programs that are always stubs (the ones the rules are about, and harmless ones
#: the generated lines use as filler).
STUBS = (
    "rm",
    "ls",
    "curl",
    "wget",
    "cp",
    "mv",
    "touch",
    "mkdir",
    "grep",
    "sudo",
    "busybox",
    "chroot",
    "flock",
)
_SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
# A stub logs only when it is executed (its $0 is its own path): a shell given its
# name as a script to read (``bash rm``) reads it, which the real, binary rm
# would refuse.
_STUB = """#!/bin/sh
[ "$0" = '{path}' ] || exit 0
f='{log}/'$$
while [ -e "$f" ]; do f="$f+"; done
printf 'A%s\\0' '{name}' "$@" > "$f"
exit 0
"""


def available() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    if os.name != "posix":
        return "bash is held to only on a POSIX system"
    if _find("bash") is None or not os.path.exists("/bin/sh"):
        return "bash or /bin/sh is not installed"
    return None


def _find(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join(_SYSTEM_PATH))


@dataclass(frozen=True, slots=True)
class Run:
    """What one line did under bash: every program executed (its argv, the
    program's base name first), and whether it ran out of time."""

    executed: tuple[tuple[str, ...], ...]
    timed_out: bool

    def ran(self, program: str) -> list[tuple[str, ...]]:
        """The argvs with which ``program`` was executed."""
        return [argv for argv in self.executed if argv and argv[0] == program]


class BashOracle:
    """Runs lines in bash in one throwaway folder (see the module docs); use as a
    context manager (:func:`bash_oracle`)."""

    def __init__(self, root: Path, *, seconds: float = 5.0) -> None:
        self.root = root
        self.seconds = seconds
        self.bin = root / "bin"
        self.logs = root / "logs"
        self.work = root / "work"
        for folder in (self.bin, self.logs, self.work):
            folder.mkdir()
        os.chmod(root, 0o755)
        self.bash = _find("bash") or "bash"
        for name in REAL:
            real = _find(name)
            if real is not None:
                (self.bin / name).symlink_to(real)
        for name in STUBS:
            if not (self.bin / name).exists():
                self.stub(name)
        for name, body in UNLISTED.items():  # programs the reader knows nothing of
            path = self.bin / name
            path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
            path.chmod(0o755)
        self._prefix: list[str] = []
        notes: list[str] = []
        self.strace = _find("strace")
        if self.strace is not None and _works([self.strace, "-f", "-o", os.devnull, "true"]):
            self.traces = root / "traces"
            self.traces.mkdir()
            os.chmod(self.traces, 0o777)
            self._prefix += [self.strace, "-f", "-ff", "-qq", "-xx", "-v", "-s", "65536"]
            self._prefix += [
                "-e",
                "trace=execve",
                "-e",
                "signal=none",
                "-o",
                str(self.traces / "t"),
            ]
        else:
            self.strace = None
            notes.append("no strace: programs run by an absolute path are not seen")
        unshare = _find("unshare")
        if unshare is not None and _works([unshare, "-n", "true"]):
            self._prefix += [unshare, "-n", "--"]
        else:
            notes.append("no network namespace: the lines run with the machine's network")
        setpriv = _find("setpriv")
        if os.geteuid() != 0:
            pass  # already unprivileged
        elif setpriv is not None and _works(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "true"]
        ):
            self._prefix += [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
            for folder in (self.logs, self.work):
                os.chmod(folder, 0o777)
        else:
            notes.append("running as root: no way to drop privileges (setpriv)")
        self.isolation = "; ".join(notes) or "complete"

    def stub(self, name: str) -> None:
        path = self.bin / name
        path.write_text(_STUB.format(log=self.logs, name=name, path=path), encoding="utf-8")
        path.chmod(0o755)

    def run(self, line: str) -> Run:
        """Run ``line`` with ``bash -c`` and report what it executed."""
        for folder in (self.logs, self.work, *([self.traces] if self.strace else [])):
            _empty(folder)
        env = {"PATH": str(self.bin), "HOME": str(self.work), "LC_ALL": "C"}
        process = subprocess.Popen(
            [*self._prefix, self.bash, "-c", line],
            cwd=self.work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = False
        try:
            process.wait(timeout=self.seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        executed = list(self._stubbed())
        if self.strace:  # what the stubs logged already is not counted twice
            executed += [
                argv for path, argv in self._traced() if os.path.dirname(path) != str(self.bin)
            ]
        return Run(tuple(executed), timed_out)

    def _stubbed(self) -> Iterator[tuple[str, ...]]:
        for log in sorted(self.logs.iterdir()):
            data = log.read_bytes().decode("utf-8", "surrogateescape")
            words = data.split("\0")[:-1]
            if words and all(w.startswith("A") for w in words):
                yield tuple(w[1:] for w in words)

    def _traced(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """Every program executed: its path, and its argv with its base name first
        (the launch of the line itself, ``unshare`` and ``setpriv``, left out)."""
        launch = len(self._prefix) > 0
        for trace in sorted(self.traces.iterdir()):
            text = trace.read_text(encoding="ascii", errors="replace")
            for m in _EXECVE.finditer(text):
                argv = [_unhex(s) for s in _STRING.findall(m.group(2))]
                path = _unhex(m.group(1))
                if launch and argv[:1] and os.path.basename(path) in ("unshare", "setpriv"):
                    continue
                yield path, (os.path.basename(path), *argv[1:])
                if _LOADER.fullmatch(os.path.basename(path)):
                    # the dynamic loader run as a program maps the one it is given
                    # and runs it with no execve of its own: its first word
                    # not an option is that program
                    given = [a for a in argv[1:] if not a.startswith("-")]
                    if given:
                        at = argv.index(given[0])
                        yield given[0], (os.path.basename(given[0]), *argv[at + 1 :])


_LOADER = re.compile(r"ld(-linux[\w-]*|-musl-[\w-]+)?\.so(\.[0-9]+)*")
_EXECVE = re.compile(r'execve\("((?:\\x[0-9a-f]{2})*)", \[(.*?)\], .*\) = 0$', re.M)
_STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


def _unhex(text: str) -> str:
    return bytes.fromhex(text.replace("\\x", "")).decode("utf-8", "surrogateescape")


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with suppress(OSError):
                entry.unlink()


@contextmanager
def bash_oracle(*, seconds: float = 5.0) -> Iterator[BashOracle]:
    """A :class:`BashOracle` in a throwaway folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="car-verify-bash-") as root:
        yield BashOracle(Path(root), seconds=seconds)


#: rm's long options (GNU coreutils), for telling an abbreviation from another.
_RM_LONG = (
    "--force",
    "--interactive",
    "--one-file-system",
    "--no-preserve-root",
    "--preserve-root",
    "--recursive",
    "--dir",
    "--verbose",
    "--help",
    "--version",
)


def rm_recursive_force(argv: Iterable[str]) -> bool:
    """Whether an ``rm`` argv asks for both ``-r`` and ``-f``, as GNU getopt reads
    it (options anywhere before ``--``, long ones abbreviated, ``--interactive=never``
    for ``-f``); written apart from
    the reader, so the two are not wrong together."""
    given: set[str] = set()
    for word in list(argv)[1:]:
        if word == "--":
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            full = [o for o in _RM_LONG if o.startswith(name)]
            if name in _RM_LONG:
                full = [name]
            when = word.partition("=")[2]
            if len(full) == 1 and full[0] == "--interactive" and when:
                # argmatch: never, no and none (any prefix: all mean the same) are -f
                never = any(w.startswith(when) for w in ("never", "no", "none"))
                given.add("f" if never else "")
            elif len(full) == 1:
                given.add({"--recursive": "r", "--force": "f"}.get(full[0], ""))
        elif word.startswith("-") and len(word) > 1:
            given.update("r" if c == "R" else c for c in word[1:])
    return {"r", "f"} <= given
