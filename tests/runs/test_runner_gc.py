"""A judge job runs with the cyclic collector's young passes spaced (``young_gc_spaced``): the threshold is
raised while the job executes and restored once every job that raised it has ended."""

from __future__ import annotations

import gc
import threading

import pytest

from automonitor.runs import runner
from automonitor.runs.runner.execute import JOB_GC_THRESHOLD, young_gc_spaced
from servers.data import add_pairs


@pytest.fixture
def thresholds():
    """The process's collector thresholds, put back after the test whatever it did."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_a_job_runs_with_the_young_threshold_raised_and_restores_it(engine, thresholds):
    add_pairs(engine, 3)
    rid = runner.create_run(engine, "rules", "direct")
    seen: list[tuple[int, ...]] = []
    out = runner.execute_run(engine, rid, progress=lambda d, t: seen.append(gc.get_threshold()))
    assert sum(out["counts"].values()) == 6
    # the first call comes before the job starts; every later one from the job's event loop
    assert seen[0] == (700, 10, 10)
    assert seen[1:] and all(t == (JOB_GC_THRESHOLD, 10, 10) for t in seen[1:])
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_blocks_raise_once_and_the_last_restores(thresholds):
    entered, leave = threading.Event(), threading.Event()
    inside: list[tuple[int, ...]] = []

    def other() -> None:
        with young_gc_spaced():
            entered.set()
            leave.wait(5)
            inside.append(gc.get_threshold())

    t = threading.Thread(target=other)
    with young_gc_spaced():
        assert gc.get_threshold() == (JOB_GC_THRESHOLD, 10, 10)
        t.start()
        assert entered.wait(5)
    assert gc.get_threshold() == (JOB_GC_THRESHOLD, 10, 10)  # the other block is still open
    leave.set()
    t.join(5)
    assert inside == [(JOB_GC_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("start", [(0, 10, 10), (50_000, 10, 10)])
def test_a_switched_off_or_higher_threshold_is_left_alone(thresholds, start):
    gc.set_threshold(*start)
    with young_gc_spaced():
        assert gc.get_threshold() == start
    assert gc.get_threshold() == start


def test_a_threshold_changed_inside_the_block_is_kept(thresholds):
    with young_gc_spaced():
        gc.set_threshold(5_000, 20, 20)
    assert gc.get_threshold() == (5_000, 20, 20)


def test_the_threshold_is_restored_when_the_block_raises(thresholds):
    with pytest.raises(RuntimeError):
        with young_gc_spaced():
            raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)
