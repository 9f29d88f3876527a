"""The report cache (:mod:`automonitor.analysis.report_cache`) on generated SQLite stores: a document read
back equals the report computed afresh (the same JSON, byte for byte), a write to the store is never
answered from the cache, and stores without a file fingerprint (PostgreSQL, just written) are not cached."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
import sqlalchemy as sa

from automonitor import analysis
from automonitor.analysis import report_cache
from helpers import slice_pair_samples

M, B = "misbehavior", "benign"
OPTIONS = {"invalid": "exclude", "n_boot": 50, "seed": 0, "edition": "paper"}


def generate(engine, seed: int, pairs: int = 12, runs: int = 3) -> None:
    """A store of ``pairs`` pairs judged by ``runs`` runs with random outcomes, scores and quotes."""
    from store import session_scope
    from store.models import Monitor, Prediction, Run

    rng = np.random.default_rng(seed)
    with session_scope(engine) as s:
        s.add_all(slice_pair_samples(pairs))
        mon = Monitor(name="judge", backend="rules")
        s.add(mon)
        s.flush()
        for r in range(runs):
            rid = f"run{r}"
            tpl = "evidence" if r % 2 else "direct"
            s.add(Run(id=rid, monitor_id=mon.id, monitor="judge", template=tpl, status="finished"))
            s.flush()
            for p in range(pairs):
                for lab in (M, B):
                    u = rng.random()
                    outcome = "error" if u < 0.05 else M if rng.random() < (0.7 if lab == M else 0.3) else B
                    ev = ["skips the tests", "made up"] if tpl == "evidence" and outcome == M else []
                    score = None if r == 0 else float(round(rng.random(), 2))
                    s.add(Prediction(run_id=rid, sample_id=f"s{p}{lab[0]}", outcome=outcome, score=score, evidence=ev))


def settle(engine) -> None:
    """Close the connections (the write-ahead log is checkpointed) and date the store file 10 s back, as
    a store last written a while ago."""
    engine.dispose()
    path = engine.url.database
    old = time.time() - 10
    for p in (path, f"{path}-wal"):
        if os.path.exists(p):
            os.utime(p, (old, old))


def compute_for(engine, options=OPTIONS):
    calls: list[int] = []

    def compute():
        calls.append(1)
        return analysis.report(engine, None, **options)

    return compute, calls


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_cached_report_is_the_computed_one(sqlite_engine, seed):
    generate(sqlite_engine, seed)
    settle(sqlite_engine)
    assert report_cache.store_stamp(sqlite_engine) is not None
    compute, calls = compute_for(sqlite_engine)
    first = report_cache.cached_report(sqlite_engine, None, OPTIONS, compute)
    again = report_cache.cached_report(sqlite_engine, None, OPTIONS, compute)
    assert calls == [1]  # the second came from the cache
    fresh = analysis.report(sqlite_engine, None, **OPTIONS)
    assert json.dumps(again.to_dict()) == json.dumps(first.to_dict()) == json.dumps(fresh.to_dict())
    other_options = {**OPTIONS, "n_boot": 60}
    compute60, calls60 = compute_for(sqlite_engine, other_options)
    other = report_cache.cached_report(sqlite_engine, None, other_options, compute60)
    assert calls60 == [1] and other.bootstrap.n_boot == 60  # other options, another document


def test_a_write_is_never_answered_from_the_cache(sqlite_engine):
    generate(sqlite_engine, 3)
    settle(sqlite_engine)
    compute, calls = compute_for(sqlite_engine)
    before = report_cache.cached_report(sqlite_engine, None, OPTIONS, compute)
    from store.models import Prediction

    with sqlite_engine.begin() as c:  # one verdict changes; the row count and sizes may not
        c.execute(
            sa.update(Prediction)
            .where(Prediction.run_id == "run0", Prediction.sample_id == "s0m")
            .values(outcome=B if before.runs[0].overall.tp else M)
        )
    just_written = report_cache.cached_report(sqlite_engine, None, OPTIONS, compute)
    assert calls == [1, 1]  # computed again (a store written this instant is not cached)
    settle(sqlite_engine)
    later = report_cache.cached_report(sqlite_engine, None, OPTIONS, compute)
    assert calls == [1, 1, 1]  # the dated store has a new fingerprint: computed, then cached
    fresh = analysis.report(sqlite_engine, None, **OPTIONS).to_dict()
    assert just_written.to_dict() == later.to_dict() == fresh != before.to_dict()
    assert report_cache.cached_report(sqlite_engine, None, OPTIONS, compute).to_dict() == fresh and len(calls) == 3


def test_report_json_prints_the_kept_text_of_an_unchanged_store_and_recomputes_a_changed_one(
    sqlite_engine, sqlite_url, tmp_path, cli
):
    """``report --json`` keeps its whole output per store version (``report_cache.cached_text``): on an unchanged
    store the same bytes, read back without computing (a marked kept text is what comes out); ``--no-audit`` and
    other options are other texts; a changed verdict is computed again, equal to a fresh computation. The store
    keeps its audit, as ``automonitor build`` leaves it (a report that computes the audit writes it into the store,
    and a store written meanwhile is not cached)."""
    from automonitor.data.audit import keep_audits

    generate(sqlite_engine, 5)
    keep_audits(sqlite_engine, ("paper",))
    settle(sqlite_engine)
    env = {"AUTOMONITOR_CACHE_DIR": str(tmp_path / "c")}
    first = cli(["report", "--json", "--n-boot", "50"], db=sqlite_url, env=env)
    assert first.returncode == 0, first.stderr
    texts = [p for p in (tmp_path / "c" / "reports").glob("*.json") if isinstance(json.loads(p.read_text()), str)]
    assert len(texts) == 1 and json.loads(texts[0].read_text()) == first.stdout
    texts[0].write_text(json.dumps(first.stdout.replace('"run0"', '"kept-text"')))  # only a read gives this
    again = cli(["report", "--json", "--n-boot", "50"], db=sqlite_url, env=env)
    assert again.returncode == 0 and again.stdout == first.stdout.replace('"run0"', '"kept-text"')
    out = tmp_path / "r.json"
    assert cli(["report", "--json", "--n-boot", "50", "-o", str(out)], db=sqlite_url, env=env).returncode == 0
    assert out.read_text() == again.stdout  # the same text written to a file
    no_audit = cli(["report", "--json", "--n-boot", "50", "--no-audit"], db=sqlite_url, env=env)
    fresh = cli(
        ["report", "--json", "--n-boot", "50", "--no-audit"],
        db=sqlite_url,
        env={"AUTOMONITOR_CACHE_DIR": str(tmp_path / "d")},
    )
    assert no_audit.stdout == fresh.stdout != first.stdout and '"audit"' in first.stdout
    from store.models import Prediction

    with sqlite_engine.begin() as c:
        c.execute(
            sa.update(Prediction).where(Prediction.run_id == "run0", Prediction.sample_id == "s0m").values(outcome=B)
        )
        c.execute(
            sa.update(Prediction).where(Prediction.run_id == "run0", Prediction.sample_id == "s1m").values(outcome=B)
        )
    keep_audits(sqlite_engine, ("paper",))
    settle(sqlite_engine)
    changed = cli(["report", "--json", "--n-boot", "50"], db=sqlite_url, env=env)
    fresh = cli(
        ["report", "--json", "--n-boot", "50"], db=sqlite_url, env={"AUTOMONITOR_CACHE_DIR": str(tmp_path / "e")}
    )
    assert changed.stdout == fresh.stdout and "kept-text" not in changed.stdout


def test_stores_without_a_file_fingerprint_are_not_cached(sqlite_engine):
    pg = sa.create_engine("postgresql+psycopg://u@127.0.0.1:5432/test")
    assert report_cache.store_stamp(pg) is None
    assert report_cache.store_stamp(sa.create_engine("sqlite://")) is None
    generate(sqlite_engine, 4)  # just written
    assert report_cache.store_stamp(sqlite_engine) is None
    settle(sqlite_engine)
    assert report_cache.store_stamp(sqlite_engine) is not None


def test_the_html_reports_gallery_and_provenance_are_read_back_as_computed(sqlite_engine):
    """report_html.build reads them through cached_json: the JSON read back equals the computed value."""
    from automonitor.views import report_html

    generate(sqlite_engine, 5)
    settle(sqlite_engine)
    rep = analysis.report(sqlite_engine, None, **OPTIONS)
    ids = [r.run_id for r in rep.runs]
    calls: list[int] = []

    def gallery():
        calls.append(1)
        return report_html.gallery(sqlite_engine, rep)

    first = report_cache.cached_json(sqlite_engine, ["gallery", ids], gallery)
    again = report_cache.cached_json(sqlite_engine, ["gallery", ids], gallery)
    assert calls == [1] and any(it["grounded"] for it in first)  # read back; quotes grounded
    assert again == first == report_html.gallery(sqlite_engine, rep)
    prov = report_html.run_provenance(sqlite_engine, ids)
    assert report_cache.cached_json(sqlite_engine, ["provenance", ids], lambda: prov) == prov
    assert report_cache.cached_json(sqlite_engine, ["provenance", ids], dict) == prov  # not computed again
    assert report_cache.cached_json(sqlite_engine, ["provenance", ids[:1]], dict) == {}  # another key


def test_gc_paused_pauses_the_collector_and_restores_it_also_on_error():
    import gc

    from automonitor.analysis.report_cache import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested (the CLI's computation calls report()): the outer block enables it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("boom")
    assert gc.isenabled()


def test_gc_paused_settle_moves_what_the_block_left_to_the_oldest_generation_and_a_full_pass_frees_its_cycles():
    """settle=True (the end of ``automonitor report``): the objects made in the block leave the young generation
    untraversed (the young pass on enabling the collector would walk them all), nothing stays frozen, and a
    reference cycle made in the block is still freed by a full collection."""
    import gc
    import weakref

    from automonitor.analysis.report_cache import gc_paused

    class Node:
        pass

    gc.collect()
    with gc_paused(settle=True):
        kept = [[i] for i in range(20_000)]  # alive after the block, made while the collector was paused
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        gone = weakref.ref(a)
        del a, b
        assert gc.get_count()[0] > len(kept)  # all of it in the youngest generation so far
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 1_000  # moved on: the young pass has nothing of the block left to walk
    assert gone() is not None  # the cycle waits for a full pass ...
    gc.collect()
    assert gone() is None  # ... which frees it
    assert len(kept) == 20_000
