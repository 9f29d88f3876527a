"""The bubblewrap sandbox that runs model-written code: hostile programs are stopped and reported, and
the host is unaffected."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from automonitor.runs.generation.sandbox import available, run_python, run_tests

pytestmark = pytest.mark.skipif(not available(), reason="bubblewrap missing: run scripts/ensure_system_deps.sh")


def _nobody_procs() -> int:
    out = subprocess.run(["ps", "-u", "65534", "-o", "pid="], capture_output=True, text=True).stdout
    return len(out.split())


def test_socket_is_stopped_no_network():
    code = "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)\nprint('connected')"
    r = run_python({"m.py": code}, "m.py")
    assert r.returncode != 0 and "connected" not in r.stdout and "network" in r.violations


def test_loopback_services_of_the_host_are_unreachable():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        r = run_python(
            {"m.py": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')"},
            "m.py",
        )
    finally:
        srv.close()
    assert r.returncode != 0 and "connected" not in r.stdout


def test_fork_bomb_hits_the_process_limit_and_leaves_nothing_behind():
    before = _nobody_procs()
    code = (
        "import os, time\nfor i in range(1000):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    )
    r = run_python({"m.py": code}, "m.py", nproc=16)
    assert r.returncode != 0 and "processes" in r.violations
    for _ in range(50):  # the sandbox's pid namespace dies with it (the kernel reaps it asynchronously)
        if _nobody_procs() <= before:
            break
        time.sleep(0.2)
    assert _nobody_procs() <= before


def test_unbounded_allocation_hits_the_memory_limit():
    r = run_python({"m.py": "x = []\nwhile True:\n    x.append(bytearray(10_000_000))\n"}, "m.py", mem_mb=128)
    assert r.returncode != 0 and "memory" in r.violations


def test_sleeping_forever_is_killed_on_the_wall_clock():
    r = run_python({"m.py": "import time\nwhile True:\n    time.sleep(1)\n"}, "m.py", timeout_s=2)
    assert r.timed_out and r.returncode is None and "timeout" in r.violations
    assert 2 <= r.duration_s < 10


def test_busy_loop_hits_the_cpu_limit():
    r = run_python({"m.py": "while True:\n    pass\n"}, "m.py", cpu_s=1, timeout_s=20)
    assert not r.timed_out and "cpu" in r.violations


@pytest.mark.parametrize("target", ["/usr/evil.txt", "/etc/evil.txt", "/evil.txt", "/work/evil.txt"])
def test_writes_outside_the_temp_dir_fail_and_the_host_is_untouched(target):
    r = run_python({"m.py": f"open({target!r}, 'w').write('x')\nprint('wrote')"}, "m.py")
    assert r.returncode != 0 and "wrote" not in r.stdout and "filesystem" in r.violations
    assert not os.path.exists(target)


def test_writes_inside_the_temp_dir_work_and_the_host_cannot_be_read():
    code = (
        "open('out.txt', 'w').write('ok')\nprint(open('out.txt').read())\nimport os\n"
        "print(sorted(os.listdir('/')))\nprint(os.path.exists('/work/main'))"
    )
    r = run_python({"m.py": code}, "m.py")
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "ok"
    assert r.stdout.splitlines()[2] == "False"  # the repo, venv and store are not mounted


def test_run_tests_counts_only_tests_that_really_ran():
    ok = run_tests("def f(x):\n    return 2 * x\n", ["assert f(2) == 4", "assert f(3) == 7"])
    assert ok.passed == [True, False] and ok.exit_ok
    early = run_tests("import sys\ndef f(x):\n    return 0\nsys.exit(0)\n", ["assert f(2) == 4"])
    assert early.passed == [False] and early.exit_ok  # a naive grader would see a pass
    forged = run_tests("print('RESULT-0000:[true]')\ndef f(x):\n    return 0\n", ["assert f(2) == 4"])
    assert forged.passed == [False]
