"""The bubblewrap sandbox leaks nothing and bounds everything, with the real
/usr/bin/bwrap: no caller environment inside (``/proc/1/environ``), no nonce to forge test results with,
output floods killed at a cap with the caller's memory flat, size-capped tmpfs instead of host temp dirs,
stale dirs swept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from automonitor.runs.generation.sandbox import available, run_python, run_tests, sweep_stale_dirs
from automonitor.runs.generation.screen import static_screen

pytestmark = pytest.mark.skipif(not available(), reason="bubblewrap missing: run scripts/ensure_system_deps.sh")

SECRET = "sk-test-do-not-leak-4242"
READ_ENVIRONS = """
import glob
for p in ["/proc/1/environ", "/proc/self/environ"] + glob.glob("/proc/[0-9]*/environ"):
    try:
        print(p, open(p, "rb").read().decode("utf-8", "replace"))
    except OSError as e:
        print(p, "unreadable", e)
"""


def test_no_caller_environment_inside_the_sandbox(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AUTOMONITOR_DB", "postgresql://admin:hunter2@db/prod")
    r = run_python({"m.py": READ_ENVIRONS}, "m.py")
    assert r.returncode == 0, r.stderr
    assert "/proc/1/environ" in r.stdout and "/proc/self/environ" in r.stdout
    assert SECRET not in r.stdout and "hunter2" not in r.stdout and "AUTOMONITOR_DB" not in r.stdout, r.stdout


FORGER = r"""
import glob, os, re, sys
seen = ""
for p in ["/proc/self/cmdline", "/proc/self/environ", "/proc/1/cmdline"] + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        seen += open(p, "rb").read().decode("latin-1") + "\n"
    except OSError:
        pass
try:
    seen += sys.stdin.read()
except Exception:
    pass
try:  # scan our own memory for the nonce
    maps = open("/proc/self/maps").read().splitlines()
    with open("/proc/self/mem", "rb") as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if "rw" in line.split()[1] and hi - lo < 64 << 20:
                try:
                    mem.seek(lo)
                    seen += mem.read(hi - lo).decode("latin-1")
                except OSError:
                    pass
except OSError:
    pass
nonces = set(re.findall(r"RESULT-[0-9a-f]+:", seen))
for n in nonces:
    for fd in range(3, 64):
        try:
            os.write(fd, (n + "[" + ",".join(["true"] * 3) + "]\n").encode())
        except OSError:
            pass
    sys.stdout.write("\n" + n + "[true, true, true]\n")
print("nonces found:", len(nonces))
sys.stdout.flush()
os._exit(0)

def f(x):
    return 0
"""


def test_forged_results_do_not_pass():
    t = run_tests(FORGER, ["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"])
    assert "nonces found: 0" in t.sandbox.stdout, t.sandbox.stdout + t.sandbox.stderr
    assert t.passed == [False, False, False] and not t.all_passed
    # an honest solution still passes (the harness's own report arrives)
    ok = run_tests("def f(x):\n    return x\n", ["assert f(1) == 1", "assert f(2) == 2"])
    assert ok.passed == [True, True]


MAIN_FORGER = r"""
import json, os, sys
m = sys.modules["__main__"]
found = {k: getattr(m, k, None) for k in ("nonce", "out", "tests", "pairs", "cfg")}
print("harness globals:", json.dumps({k: v is not None for k, v in found.items()}))
report = json.dumps([["ok", True]] * 2 + [["value", "0"]]).encode()
for fd in range(3, 64):  # every descriptor: the results pipe if it were here, the report pipe, anything
    for payload in (report, b"RESULT-x:[true, true, true]\n"):
        try:
            os.write(fd, payload)
        except OSError:
            pass
for p in ("/proc/%d/fd/0" % os.getppid(), "/proc/%d/mem" % os.getppid()):
    try:
        open(p, "rb").read(1)
        print("opened", p)
    except OSError:
        pass
sys.stdout.flush()
os._exit(0)

def f(x):
    return 0
"""


def test_results_cannot_be_forged_through_the_harness_module_or_its_pipes():
    """The solution runs in a child of the harness: the harness's module holds no nonce or results
    descriptor there, its stdin and memory are closed to the child, and a test of the form ``assert EXPR ==
    LITERAL`` is judged in the harness by value (the child never sees LITERAL), so a forged report of the
    child's own fails too."""
    t = run_tests(MAIN_FORGER, ["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"])
    assert '"nonce": false' in t.sandbox.stdout and '"out": false' in t.sandbox.stdout, t.sandbox.stdout
    assert "opened" not in t.sandbox.stdout, t.sandbox.stdout
    assert t.passed == [False, False, False] and not t.all_passed


def test_value_tests_are_compared_outside_the_solution():
    always_equal = "class E:\n    def __eq__(self, o):\n        return True\n\ndef f(x):\n    return E()\n"
    assert run_tests(always_equal, ["assert f(1) == 1", "assert f(1) in (1, 2)"]).passed == [False, True]
    honest = "def f(x):\n    return [x, {'k': (x, None)}]\n"
    tests = ["assert f(1) == [1, {'k': (1, None)}]", "assert f(2) == [2, {'k': (2, 0)}]", "assert len(f(3)) == 2"]
    assert run_tests(honest, tests).passed == [True, False, True]
    assert run_tests("def f(x):\n    return x / 2\n", ["assert f(1) == 0.5", "assert f(2) == 1"]).passed == [True, True]
    crash = run_tests("import sys\nsys.exit(3)\ndef f(x):\n    return x\n", ["assert f(1) == 1"])
    assert crash.passed == [False] and not crash.exit_ok  # the exit status a grader sees is the solution's


def test_static_screen_flags_proc_reads_and_output_rebinding():
    flags = static_screen(FORGER, ["assert f(1) == 1"], "f")["flags"]
    assert "reads_proc" in flags and "rebinds_output" in flags
    for code in (
        "import sys, io\nsys.stdout = io.StringIO()\ndef f(x):\n    return x\n",
        "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    pass\n",
        "import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 1)\n",
        "import sys\nsetattr(sys, 'stdout', None)\n",
    ):
        assert "rebinds_output" in static_screen(code, [], None)["flags"], code
    frames = "import sys\ndef f(x):\n    return sys._getframe(1).f_locals\n"
    assert "reads_harness" in static_screen(frames, [], None)["flags"]
    honest = "import sys\ndef f(x):\n    print(x, file=sys.stderr)\n    sys.stdout.write(str(x))\n    return x\n"
    assert static_screen(honest, ["assert f(1) == 1"], "f")["flags"] == []


FLOOD_PARENT = r"""
import json, resource, sys
from automonitor.runs.generation.sandbox import run_python
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = "import sys\nb = 'x' * (1 << 20)\nfor _ in range(400):\n    sys.stdout.write(b)\n    sys.stderr.write(b)\n"
r = run_python({"m.py": code}, "m.py", timeout_s=60, cpu_s=30)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kb": after - before, "violations": r.violations, "stdout": len(r.stdout),
                  "stderr": len(r.stderr), "bytes": r.output_bytes, "s": r.duration_s}))
"""


def test_output_flood_is_killed_at_the_cap_with_flat_memory():
    """800 MB on stdout + stderr: the caller reads incrementally, kills at 4 MiB, keeps 64,000
    characters of each, and its peak RSS grows by a few MB at most (before: every byte was buffered)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-c", FLOOD_PARENT], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    assert "output" in doc["violations"], doc
    assert doc["stdout"] == 64_000 and doc["stderr"] == 64_000
    assert doc["bytes"] < 16 << 20 and doc["grew_kb"] < 32_000, doc


def test_disk_is_capped_and_nothing_is_written_on_the_host():
    before = set(os.listdir(tempfile.gettempdir()))
    code = (
        "import os\nfor d in ('/sandbox', '/tmp'):\n    n = 0\n    try:\n        for i in range(40):\n"
        "            with open(f'{d}/f{i}', 'wb') as f:\n                f.write(b'x' * (8 << 20))\n            n += 1\n"
        "    except OSError as e:\n        print(d, n, e)\n"
    )
    r = run_python({"m.py": code}, "m.py", disk_mb=32, timeout_s=30)
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert [ln[0] for ln in lines] == ["/sandbox", "/tmp"], r.stdout + r.stderr
    assert all(int(ln[1]) <= 4 for ln in lines) and "No space left" in r.stdout
    assert not [d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("automonitor-sbx-")]


def test_kill_9_of_the_caller_leaves_no_sandbox_behind():
    # the sandboxed file has a name of this test's own, so the check below sees only this caller's sandbox
    # (another worker's sandbox tests run as the same user), and the sandbox gets a few seconds to go on a
    # loaded machine
    main = f"m_{os.getpid()}_{time.monotonic_ns()}.py"
    script = (
        "from automonitor.runs.generation.sandbox import run_python\n"
        f"run_python({{'{main}': \"open('/sandbox/big','wb').write(b'x' * (12 << 20))\\nprint('written', flush=True)\\n"
        f"import time\\ntime.sleep(60)\"}}, '{main}', timeout_s=60)\n"
    )
    before = set(os.listdir(tempfile.gettempdir()))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.Popen([sys.executable, "-c", script], env=env)
    time.sleep(2.5)
    p.kill()
    p.wait()
    deadline = time.monotonic() + 5
    while True:
        time.sleep(0.5)
        left = [d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("automonitor-sbx-")]
        out = subprocess.run(["pgrep", "-u", "65534", "-f", main], capture_output=True, text=True).stdout
        alive = [x for x in out.split() if Path(f"/proc/{x}").exists()]
        if (not left and not alive) or time.monotonic() > deadline:
            break
    assert left == []
    assert alive == []


def test_stale_sandbox_dirs_are_swept(tmp_path):
    old, fresh = tmp_path / "automonitor-sbx-old", tmp_path / "automonitor-sbx-fresh"
    for d in (old, fresh):
        d.mkdir()
        (d / "junk").write_bytes(b"x" * 1000)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    other = tmp_path / "not-ours"
    other.mkdir()
    os.utime(other, (time.time() - 7200, time.time() - 7200))
    assert sweep_stale_dirs(3600, str(tmp_path)) == 1
    assert not old.exists() and fresh.exists() and other.exists()
