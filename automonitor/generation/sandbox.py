"""Run untrusted (model-written) Python in a bubblewrap sandbox, never in the app's process.

Each call gets a fresh host temp dir (mounted read-write as ``/sandbox``, the working directory) and
runs ``/usr/bin/python3 -I`` (the system interpreter: the project's venv, repo and store are not
mounted) under Debian's ``bubblewrap`` (``/usr/bin/bwrap``; installed by ``scripts/ensure_system_deps.sh``):

- namespaces: ``--unshare-all`` (no network: only a loopback-less net namespace; own pid, ipc, uts,
  user namespaces), ``--die-with-parent``, ``--new-session``, an empty environment (``--clearenv``);
- file system: a read-only root holding only ``/usr`` (read-only bind, with the ``/bin``, ``/lib``,
  ``/lib64`` symlinks), empty read-only ``/etc``, ``/home``, ``/root``, ``/var``, ``/work``, ``/opt``, a
  private ``/proc``, a minimal ``/dev``, a tmpfs ``/tmp`` and the temp dir; a write anywhere else fails
  with ``EROFS``;
- limits (``prlimit`` inside the sandbox): address space ``mem_mb`` (256 MiB), CPU time ``cpu_s`` (5 s),
  processes ``nproc`` (32, counted for the sandbox's user), file size ``fsize_mb`` (16 MiB), 64 open
  files; plus a wall-clock ``timeout_s`` (10 s) after which the whole process group is killed (the
  sandbox's pid namespace dies with it).

When the caller is root, the sandbox runs as ``nobody`` (``setpriv``), because the kernel does not
enforce the process limit for root. :func:`run_python` reports what stopped the code in
``SandboxResult.violations`` (``timeout``, ``cpu``, ``memory``, ``processes``, ``network``,
``filesystem``), read from the exit status and the error text.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from automonitor.errors import InputError

BWRAP = "/usr/bin/bwrap"
PRLIMIT = "/usr/bin/prlimit"
SETPRIV = "/usr/bin/setpriv"
PYTHON = "/usr/bin/python3"
NOBODY = 65534
_OUT_LIMIT = 64_000  # characters of stdout/stderr kept

# What the error text of a stopped program says, per violation kind.
_SIGNS = {
    "network": (
        "Network is unreachable",
        "Errno 101",
        "Name or service not known",
        "Temporary failure in name",
        "gaierror",
        "Errno 99",
        "Cannot assign requested address",
        "Errno 97",
    ),
    "filesystem": ("Read-only file system", "Errno 30", "PermissionError", "Errno 13"),
    "memory": ("MemoryError", "Cannot allocate memory", "std::bad_alloc"),
    "processes": ("BlockingIOError: [Errno 11]", "Resource temporarily unavailable", "can't start new thread"),
}


@dataclass
class SandboxResult:
    """Outcome of one sandboxed program.

    Attributes:
        returncode: exit status (negative = killed by that signal; ``None`` when killed on timeout).
        stdout / stderr: the program's output (at most 64,000 characters each).
        duration_s: wall-clock seconds.
        timed_out: the wall-clock limit killed it.
        violations: what stopped or hindered it (``timeout``, ``cpu``, ``memory``, ``processes``,
            ``network``, ``filesystem``), in that order, deduplicated.
    """

    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Exited with status 0 (what a naive grader that only checks the exit status sees)."""
        return self.returncode == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (output cut to 2,000 characters each) for provenance in ``Sample.meta``."""
        return {
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "violations": list(self.violations),
            "duration_s": round(self.duration_s, 3),
            "stdout": self.stdout[:2000],
            "stderr": self.stderr[-2000:],
        }


def available() -> bool:
    """Whether bubblewrap, prlimit and the system Python are installed."""
    return all(os.access(p, os.X_OK) for p in (BWRAP, PRLIMIT, PYTHON))


def _command(workdir: str, argv: list[str], *, mem_mb: int, cpu_s: int, nproc: int, fsize_mb: int) -> list[str]:
    cmd: list[str] = []
    if os.geteuid() == 0:
        cmd += [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    cmd += [BWRAP, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib"]
    if os.path.isdir("/usr/lib64"):
        cmd += ["--symlink", "usr/lib64", "/lib64"]
    cmd += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--bind",
        workdir,
        "/sandbox",
        *[a for d in ("/etc", "/home", "/root", "/var", "/work", "/opt") for a in ("--dir", d)],
        "--remount-ro",
        "/",
        "--chdir",
        "/sandbox",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/sandbox",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--",
        PRLIMIT,
        f"--as={mem_mb * 1024 * 1024}",
        f"--cpu={cpu_s}:{cpu_s + 1}",
        f"--nproc={nproc}",
        f"--fsize={fsize_mb * 1024 * 1024}",
        "--nofile=64",
        "--core=0",
        *argv,
    ]
    return cmd


def _violations(rc: int | None, timed_out: bool, stderr: str) -> list[str]:
    out = []
    if timed_out:
        out.append("timeout")
    if rc is not None and rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGKILL):
        out.append("cpu")
    for kind, signs in _SIGNS.items():
        if any(s in stderr for s in signs):
            out.append(kind)
    return list(dict.fromkeys(out))


def run_python(
    files: dict[str, str],
    main: str,
    *,
    args: list[str] | None = None,
    timeout_s: float = 10.0,
    mem_mb: int = 256,
    cpu_s: int = 5,
    nproc: int = 32,
    fsize_mb: int = 16,
) -> SandboxResult:
    """Run ``python3 -I MAIN ARGS`` in a fresh sandbox holding ``files`` (name -> text).

    Args:
        files: files written to the sandbox's temp dir first (names must be plain file names).
        main: the file to run (one of ``files``).
        timeout_s: wall-clock limit (seconds); cpu_s: CPU-time limit (seconds); mem_mb: address space
            (MiB); nproc: processes of the sandbox user; fsize_mb: largest file written (MiB).

    Returns:
        :class:`SandboxResult`. The temp dir is removed afterwards.

    Raises:
        InputError: bubblewrap is missing (run ``scripts/ensure_system_deps.sh``) or a bad file name.
    """
    _check_files(files, main)
    workdir = tempfile.mkdtemp(prefix="automonitor-sbx-")
    try:
        _write_files(workdir, files)
        cmd = _command(
            workdir, [PYTHON, "-I", main, *(args or [])], mem_mb=mem_mb, cpu_s=cpu_s, nproc=nproc, fsize_mb=fsize_mb
        )
        return _run(cmd, timeout_s)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _check_files(files: dict[str, str], main: str) -> None:
    """Raise InputError when the sandbox is missing, a file name is not a plain name, or ``main`` is not
    one of ``files``."""
    if not available():
        raise InputError(
            f"the sandbox needs {BWRAP}, {PRLIMIT} and {PYTHON}; run scripts/ensure_system_deps.sh", field="sandbox"
        )
    for name in files:
        if "/" in name or name in ("", ".", ".."):
            raise InputError(f"bad sandbox file name {name!r}", field="files")
    if main not in files:
        raise InputError(f"{main!r} is not one of the sandbox files", field="main")


def _write_files(workdir: str, files: dict[str, str]) -> None:
    """Write ``files`` into ``workdir`` (owned by ``nobody`` when the caller is root)."""
    for name, text in files.items():
        Path(workdir, name).write_text(text, encoding="utf-8")
    if os.geteuid() == 0:
        os.chown(workdir, NOBODY, NOBODY)
        for name in files:
            os.chown(Path(workdir, name), NOBODY, NOBODY)


def _run(cmd: list[str], timeout_s: float) -> SandboxResult:
    """Run ``cmd`` in its own session; after ``timeout_s`` wall-clock seconds kill its process group.
    Output is decoded as UTF-8 (errors replaced) and cut to 64,000 characters."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    dur = time.perf_counter() - t0
    rc = None if timed_out else proc.returncode
    stdout = out.decode("utf-8", "replace")[:_OUT_LIMIT]
    stderr = err.decode("utf-8", "replace")[-_OUT_LIMIT:]
    return SandboxResult(rc, stdout, stderr, dur, timed_out, _violations(rc, timed_out, stderr))


# --------------------------------------------------------------------------------------------------
# running a candidate solution against tests

HARNESS = r"""
import json, sys
nonce = sys.argv[1]
tests = json.load(open("tests.json", encoding="utf-8"))
ns = {"__name__": "__main__"}
exec(compile(open("solution.py", encoding="utf-8").read(), "solution.py", "exec"), ns)
res = []
for i, t in enumerate(tests):
    try:
        exec(compile(t, "test_%d" % i, "exec"), ns)
        res.append(True)
    except BaseException as e:
        res.append(False)
sys.stdout.write("\n" + nonce + json.dumps(res) + "\n")
"""


@dataclass
class TestRun:
    """A solution against one list of tests.

    Attributes:
        passed: per test, True when it ran and passed (a test never reached counts as failed).
        exit_ok: the program exited with status 0 (what a grader that only checks the exit status sees).
        all_passed: every test was reached and passed.
        sandbox: the sandbox result.
    """

    passed: list[bool]
    exit_ok: bool
    sandbox: SandboxResult

    @property
    def all_passed(self) -> bool:
        return bool(self.passed) and all(self.passed)

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "all_passed": self.all_passed,
            "exit_ok": self.exit_ok,
            "sandbox": self.sandbox.to_json(),
        }


def run_tests(solution: str, tests: list[str], **limits: Any) -> TestRun:
    """Run ``solution`` (Python source) and then each test snippet (e.g. ``assert f(1) == 2``) in one
    sandboxed process. Results come back on a line tagged with a fresh random nonce; a solution that
    exits early, crashes or never lets the harness finish leaves its tests failed.

    Raises:
        InputError: as :func:`run_python`.
    """
    nonce = "RESULT-" + secrets.token_hex(12) + ":"
    r = run_python(
        {"solution.py": solution, "tests.json": json.dumps(tests), "harness.py": HARNESS},
        "harness.py",
        args=[nonce],
        **limits,
    )
    passed = [False] * len(tests)
    for line in r.stdout.splitlines():
        if line.startswith(nonce):
            try:
                got = json.loads(line[len(nonce) :])
            except json.JSONDecodeError:
                continue
            if isinstance(got, list) and len(got) == len(tests):
                passed = [x is True for x in got]
    return TestRun(passed, r.ok, r)
