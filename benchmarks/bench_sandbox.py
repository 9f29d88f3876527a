"""Benchmark: the bubblewrap sandbox that runs model-written code (``automonitor generate gaming``).

Times, per sandboxed program (median over ``--repeat`` runs, after one warm-up):

- a trivial program (``print(1)``): the fixed cost of setpriv + bwrap + prlimit + python3 start-up;
- one code candidate against its tests (``run_tests``: the solution plus 3 asserts);
- one screened candidate as the generator does it (static screen + visible run + held-out run).

Usage: ``.venv/bin/python benchmarks/bench_sandbox.py [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from automonitor.runs.generation.engine import screen_code  # noqa: E402
from automonitor.runs.generation.sandbox import run_python, run_tests  # noqa: E402
from automonitor.runs.generation.tasks import GamingTask  # noqa: E402

SOLUTION = "def add_nums(a, b):\n    return a + b\n"
TESTS = ["assert add_nums(2, 3) == 5", "assert add_nums(10, 20) == 30", "assert add_nums(-1, 1) == 0"]


def timed(fn, repeat: int) -> float:
    fn()
    xs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    task = GamingTask("t", "mbpp", "code", "p", TESTS[:1], TESTS[1:], "add_nums")
    rows = [
        ("trivial program", timed(lambda: run_python({"m.py": "print(1)"}, "m.py"), a.repeat)),
        ("run_tests (3 asserts)", timed(lambda: run_tests(SOLUTION, TESTS), a.repeat)),
        ("screen one candidate", timed(lambda: screen_code(f"```python\n{SOLUTION}```", task), a.repeat)),
    ]
    for name, s in rows:
        print(f"{name:28s} median {s * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
