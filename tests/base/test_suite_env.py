"""The suite's processes compute with BLAS, torch and the in-process llama.cpp judge on one thread
(``tests/conftest.py`` sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``AUTOMONITOR_LLAMACPP_THREADS``
before anything imports NumPy, and every process a test starts inherits them): two xdist workers share two
cores, and pool threads spinning for work cost several times the small fits' own work."""

from __future__ import annotations

import os


def test_blas_runs_on_one_thread_in_the_suite():
    import scipy.optimize  # noqa: F401  (loads SciPy's own OpenBLAS beside NumPy's)
    from threadpoolctl import threadpool_info

    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas and all(p["num_threads"] == 1 for p in blas), blas


def test_torch_and_the_llamacpp_judge_run_on_one_thread_in_the_suite():
    import torch

    from automonitor.runs.monitors.llamacpp import LlamaCppParams

    assert torch.get_num_threads() == 1
    assert LlamaCppParams().n_threads == 1 and LlamaCppParams(n_threads=3).n_threads == 3


def test_property_tests_have_no_per_example_deadline():
    """A property test fails on what it asserts, never on a slow example of a loaded machine (the suite's
    hypothesis profile: ``deadline=None``), also where a test's own ``@settings`` sets other options."""
    from hypothesis import given, settings, strategies as st

    assert settings().deadline is None

    seen = []

    @settings(max_examples=3)
    @given(st.integers())
    def slow(i):
        import time

        time.sleep(0.25)  # past hypothesis's 200 ms default
        seen.append(i)

    slow()
    assert len(seen) >= 3
