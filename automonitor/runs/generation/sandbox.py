"""Run untrusted (model-written) Python in a bubblewrap sandbox, never in the app's process.

Each call runs ``/usr/bin/python3 -I`` under ``/usr/bin/bwrap`` with every namespace unshared (no
network), a read-only root holding only ``/usr``, two size-capped tmpfs (``/tmp`` and ``/sandbox``, filled
from memfds: nothing on the host's disk), an empty environment, ``prlimit`` caps (:func:`run_python`),
a wall-clock timeout that kills the process group, output read incrementally up to a cap, and ``nobody``
as the user when the caller is root. :func:`run_python` reports what stopped the code
(``SandboxResult.violations``); :func:`run_tests` runs a solution against tests through a forked,
non-dumpable harness that reports with a nonce on its own pipe. Every rule and why:
docs/how-to/generating-pairs.md ("Sandbox").
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import threading
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from automonitor.errors import InputError

BWRAP = "/usr/bin/bwrap"
PRLIMIT = "/usr/bin/prlimit"
SETPRIV = "/usr/bin/setpriv"
PYTHON = "/usr/bin/python3"
NOBODY = 65534
_OUT_LIMIT = 64_000  # characters of stdout/stderr kept
_KEEP_BYTES = 4 * _OUT_LIMIT  # bytes of each stream kept before decoding (UTF-8: at most 4 per character)
_RESULT_LIMIT = 1 << 20  # bytes read from the results pipe
# the whole environment bwrap (and setpriv, prlimit) start with: nothing of the caller's
SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
STALE_DIR_PREFIX = "automonitor-sbx-"

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
    "disk": ("No space left on device", "Errno 28", "File too large", "Errno 27"),
}


@dataclass
class SandboxResult:
    """Outcome of one sandboxed program.

    Attributes:
        returncode: exit status (negative = killed by that signal; ``None`` when killed on timeout).
        stdout / stderr: the program's output (at most 64,000 characters each).
        duration_s: wall-clock seconds.
        timed_out: the wall-clock limit killed it.
        violations: what stopped or hindered it (``timeout``, ``cpu``, ``output``, ``memory``,
            ``processes``, ``network``, ``filesystem``, ``disk``), in that order, deduplicated.
        output_bytes: bytes the program wrote to stdout and stderr (counted up to the cap).
        results: what arrived on the results pipe (:func:`run_tests`; at most 1 MiB), else ``b""``.
    """

    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    violations: list[str] = field(default_factory=list)
    output_bytes: int = 0
    results: bytes = b""

    @property
    def ok(self) -> bool:
        """Exited with status 0 (what a naive grader that only checks the exit status sees)."""
        return self.returncode == 0 and not self.timed_out

    def to_json(self) -> dict[str, object]:
        """Plain-JSON form (output cut to 2,000 characters each) for provenance in ``Sample.meta``."""
        return {
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "violations": list(self.violations),
            "duration_s": round(self.duration_s, 3),
            "output_bytes": self.output_bytes,
            "stdout": self.stdout[:2000],
            "stderr": self.stderr[-2000:],
        }


def available() -> bool:
    """Whether bubblewrap, prlimit and the system Python are installed."""
    return all(os.access(p, os.X_OK) for p in (BWRAP, PRLIMIT, PYTHON))


def _command(
    files: list[tuple[int, str, bool]],
    argv: list[str],
    *,
    mem_mb: int,
    cpu_s: int,
    nproc: int,
    fsize_mb: int,
    disk_mb: int,
) -> list[str]:
    """The setpriv + bwrap + prlimit command line; ``files`` are ``(memfd, name, read_only)`` copied
    into ``/sandbox``."""
    cmd: list[str] = []
    if os.geteuid() == 0:
        cmd += [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    cmd += [BWRAP, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib"]
    if os.path.isdir("/usr/lib64"):
        cmd += ["--symlink", "usr/lib64", "/lib64"]
    size = str(disk_mb * 1024 * 1024)
    cmd += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
        "--size",
        size,
        "--tmpfs",
        "/sandbox",
    ]
    for fd, name, read_only in files:
        cmd += ["--ro-bind-data" if read_only else "--file", str(fd), f"/sandbox/{name}"]
    cmd += [
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


def _violations(rc: int | None, timed_out: bool, flooded: bool, stderr: str) -> list[str]:
    out = []
    if timed_out:
        out.append("timeout")
    if flooded:
        out.append("output")
    elif rc is not None and rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGKILL):
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
    disk_mb: int = 32,
    output_cap_bytes: int = 4 * 1024 * 1024,
    read_only: tuple[str, ...] = (),
    stdin: bytes = b"",
    results_pipe: bool = False,
) -> SandboxResult:
    """Run ``python3 -I MAIN ARGS`` in a fresh sandbox holding ``files`` (name -> text).

    Args:
        files: files copied into the sandbox's ``/sandbox`` first (names must be plain file names);
            those named in ``read_only`` are read-only there.
        main: the file to run (one of ``files``).
        timeout_s: wall-clock limit (seconds); cpu_s: CPU-time limit (seconds); mem_mb: address space
            (MiB); nproc: processes of the sandbox user; fsize_mb: largest file written (MiB); disk_mb:
            size of each tmpfs (``/sandbox``, ``/tmp``; MiB); output_cap_bytes: stdout + stderr bytes after
            which the program is killed.
        stdin: bytes on the program's stdin (then end of file).
        results_pipe: open a pipe whose write end the program inherits; its number is the first line
            of ``stdin`` (``{"fd": N}`` JSON is prepended); what arrives is ``SandboxResult.results``.

    Returns:
        :class:`SandboxResult`. Nothing is left on the host's disk.

    Raises:
        InputError: bubblewrap is missing (run ``scripts/ensure_system_deps.sh``) or a bad file name.
    """
    _check_files(files, main)
    memfds = []
    res_r = res_w = -1
    try:
        for name, text in files.items():
            fd = os.memfd_create(f"sbx-{name}", 0)
            os.write(fd, text.encode("utf-8"))
            os.lseek(fd, 0, os.SEEK_SET)
            memfds.append((fd, name, name in read_only))
        pass_fds = [fd for fd, _, _ in memfds]
        if results_pipe:
            res_r, res_w = os.pipe()
            pass_fds.append(res_w)
            stdin = json.dumps({"fd": res_w}).encode() + b"\n" + stdin
        cmd = _command(
            memfds,
            [PYTHON, "-I", main, *(args or [])],
            mem_mb=mem_mb,
            cpu_s=cpu_s,
            nproc=nproc,
            fsize_mb=fsize_mb,
            disk_mb=disk_mb,
        )
        return _run(cmd, timeout_s, output_cap_bytes, pass_fds, stdin, res_r, res_w)
    finally:
        for fd in [fd for fd, _, _ in memfds] + [x for x in (res_r, res_w) if x >= 0]:
            with contextlib.suppress(OSError):
                os.close(fd)


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


def sweep_stale_dirs(max_age_s: float = 3600.0, tmp: str | None = None) -> int:
    """Remove ``automonitor-sbx-*`` dirs in the temp dir older than ``max_age_s`` (left by versions that
    used a host temp dir, when killed with ``kill -9``); returns how many were removed."""
    base = Path(tmp or tempfile.gettempdir())
    n, now = 0, time.time()
    for d in base.glob(STALE_DIR_PREFIX + "*"):
        try:
            if d.is_dir() and not d.is_symlink() and now - d.lstat().st_mtime > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
                n += 1
        except OSError:
            continue
    return n


class _Tail:
    """The first (``head``) or last bytes of a stream, at most ``limit``, and how many came in all."""

    def __init__(self, limit: int, head: bool):
        self.limit, self.head, self.buf, self.total = limit, head, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.head:
            if len(self.buf) < self.limit:
                self.buf += chunk[: self.limit - len(self.buf)]
        else:
            self.buf += chunk
            if len(self.buf) > self.limit:
                del self.buf[: len(self.buf) - self.limit]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write ``data`` to the program's stdin and close it (a broken pipe, the program gone, is ignored)."""
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        pipe.write(data)
        pipe.close()


def _run(
    cmd: list[str],
    timeout_s: float,
    output_cap: int,
    pass_fds: list[int],
    stdin: bytes,
    res_r: int,
    res_w: int,
) -> SandboxResult:
    """Run ``cmd`` in its own session with a minimal environment, reading stdout, stderr (and the
    results pipe) incrementally; kill its process group after ``timeout_s`` wall-clock seconds or
    once stdout + stderr pass ``output_cap`` bytes. Output is decoded as UTF-8 (errors replaced) and
    cut to 64,000 characters."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(SANDBOX_ENV),
        start_new_session=True,
        close_fds=True,
        pass_fds=pass_fds,
    )
    if res_w >= 0:
        os.close(res_w)  # only the sandbox holds the write end: end of file when it exits
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()  # the nonce and the tests may not fit the pipe buffer: never block the reading loop
    out, err, res = _Tail(_KEEP_BYTES, True), _Tail(_KEEP_BYTES, False), _Tail(_RESULT_LIMIT, True)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    if res_r >= 0:
        sel.register(res_r, selectors.EVENT_READ, res)
    timed_out = flooded = False
    deadline = time.monotonic() + timeout_s
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                _kill(proc)
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                fd = key.fd
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.add(chunk)
            if out.total + err.total > output_cap:
                flooded = True
                _kill(proc)
                break
    finally:
        sel.close()
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not (timed_out or flooded) else 5)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    dur = time.perf_counter() - t0
    rc = None if timed_out else proc.returncode
    stdout = bytes(out.buf).decode("utf-8", "replace")[:_OUT_LIMIT]
    stderr = bytes(err.buf).decode("utf-8", "replace")[-_OUT_LIMIT:]
    return SandboxResult(
        rc,
        stdout,
        stderr,
        dur,
        timed_out,
        _violations(rc, timed_out, flooded, stderr),
        output_bytes=out.total + err.total,
        results=bytes(res.buf),
    )


# --------------------------------------------------------------------------------------------------
# running a candidate solution against tests

HARNESS = r"""
import ast, json, os, sys
cfg = json.loads(sys.stdin.readline())
out = int(cfg["fd"])
try:  # not dumpable, before the fork: the solution's process cannot read this one's memory or fds
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
jobs_r, jobs_w = os.pipe()
rep_r, rep_w = os.pipe()
pid = os.fork()
if pid == 0:
    # the solution's process: it never holds the nonce (still unread on stdin, closed here), the results
    # descriptor, or the expected values of the tests this process checks by value
    os.close(out)
    os.close(jobs_w)
    os.close(rep_r)
    _null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(_null, 0)
    os.close(_null)
    sys.stdin = open(0, closefd=False)
    data = b""
    while True:
        block = os.read(jobs_r, 1 << 16)
        if not block:
            break
        data += block
    os.close(jobs_r)
    jobs = json.loads(data)
    del data, cfg, out
    ns = {"__name__": "__main__"}
    exec(compile(open("solution.py", encoding="utf-8").read(), "solution.py", "exec"), ns)
    got = []
    for i, (kind, src) in enumerate(jobs):
        try:
            if kind == "value":
                got.append(["value", repr(eval(compile(src, "test_%d" % i, "eval"), ns))])
            else:
                exec(compile(src, "test_%d" % i, "exec"), ns)
                got.append(["ok", True])
        except BaseException:
            got.append(["ok", False])
    os.write(rep_w, json.dumps(got).encode())
    os._exit(0)
os.close(jobs_r)
os.close(rep_w)
nonce = sys.stdin.readline().strip()
tests = json.loads(sys.stdin.readline())
sys.stdin.close()


def split(test):
    # "assert EXPR == LITERAL": the solution's process evaluates EXPR, this one compares with LITERAL
    try:
        tree = ast.parse(test)
        node = tree.body[0] if len(tree.body) == 1 else None
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            c = node.test
            if len(c.ops) == 1 and isinstance(c.ops[0], ast.Eq):
                return ["value", ast.unparse(c.left)], (ast.literal_eval(c.comparators[0]),)
    except Exception:
        pass
    return ["stmt", test], None


pairs = [split(t) for t in tests]
os.write(jobs_w, json.dumps([j for j, _ in pairs]).encode())
os.close(jobs_w)
rep = b""
while len(rep) < (16 << 20):
    block = os.read(rep_r, 1 << 16)
    if not block:
        break
    rep += block
_, status = os.waitpid(pid, 0)
try:
    got = json.loads(rep)
except Exception:
    got = None
res = [False] * len(tests)
if isinstance(got, list) and len(got) == len(tests):
    for i, ((_, expected), g) in enumerate(zip(pairs, got)):
        if not (isinstance(g, list) and len(g) == 2):
            continue
        if expected is None:
            res[i] = g == ["ok", True]
        elif g[0] == "value" and isinstance(g[1], str) and len(g[1]) <= (1 << 20):
            try:
                res[i] = bool(ast.literal_eval(g[1]) == expected[0])
            except Exception:
                res[i] = False
os.write(out, (nonce + json.dumps(res) + "\n").encode())
code = os.waitstatus_to_exitcode(status)
sys.exit(code if 0 <= code < 256 else 1)  # what a grader that only checks the exit status sees
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

    def to_json(self) -> dict[str, object]:
        """Plain-JSON form for provenance: per-test results, whether all passed, the exit status, the sandbox."""
        return {
            "passed": self.passed,
            "all_passed": self.all_passed,
            "exit_ok": self.exit_ok,
            "sandbox": self.sandbox.to_json(),
        }


def run_tests(solution: str, tests: list[str], **limits: Any) -> TestRun:
    """Run ``solution`` (Python source) and then each test snippet (e.g. ``assert f(1) == 2``) in one
    sandbox. The harness (:data:`HARNESS`) makes itself non-dumpable and forks; the solution and the tests
    run in the child, which holds neither the nonce (a fresh random one the harness reads from its stdin
    after the fork, never argv or the environment), nor the results pipe, nor the expected value of a test
    ``assert EXPR == LITERAL``: the child returns ``repr(EXPR)`` and the harness compares it, parsed as a
    literal, with ``LITERAL``; other tests run whole in the child and its report is taken. The harness
    reports on the results pipe (not stdout) with the nonce; the results count only when exactly one
    nonce-tagged line of the right length arrives, so a solution that exits early, crashes, never lets
    the harness finish, prints a forged "all passed", returns an always-equal object or writes a forged
    report to any descriptor leaves its value-checked tests failed. ``exit_ok`` is the child's exit status.

    Raises:
        InputError: as :func:`run_python`.
    """
    nonce = "RESULT-" + secrets.token_hex(16) + ":"
    r = run_python(
        {"solution.py": solution, "harness.py": HARNESS},
        "harness.py",
        read_only=("harness.py",),
        stdin=(nonce + "\n" + json.dumps(tests) + "\n").encode(),
        results_pipe=True,
        **limits,
    )
    passed = [False] * len(tests)
    tagged = [ln for ln in r.results.decode("utf-8", "replace").splitlines() if ln.startswith(nonce)]
    if len(tagged) == 1:
        try:
            got = json.loads(tagged[0][len(nonce) :])
        except json.JSONDecodeError:
            got = None
        if isinstance(got, list) and len(got) == len(tests):
            passed = [x is True for x in got]
    return TestRun(passed, r.ok, r)
