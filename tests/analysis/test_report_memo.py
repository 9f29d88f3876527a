"""The report's content-keyed memo (:mod:`automonitor.analysis.memo`): each run's evidence grounding, each paired
comparison and Pearson r are kept by their inputs, so a new store version computes only what changed. What is
held here: a report read through the memo is byte for byte the report computed with an empty memo, after every
kind of change to what those parts read (a sample's text, a quote, a verdict, a run added, the bootstrap's
options, the code), on SQLite and PostgreSQL; and the parts unchanged by a write are read back, not computed."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sqlalchemy as sa

from automonitor import analysis
from automonitor.analysis import bootstrap, memo, metrics, roc_grounding
from helpers import slice_pair_samples

M, B = "misbehavior", "benign"
OPTIONS = {"invalid": "exclude", "n_boot": 50, "seed": 0}
QUOTES = ["skips the tests", "SKIPS  the “tests”", "made up", "request 1"]


def generate(engine, seed: int, pairs: int = 10, runs: int = 4) -> None:
    """``pairs`` pairs judged by ``runs`` runs of one monitor (so every two are compared); the odd runs quote
    evidence (verbatim, normalised, made-up and request quotes); random verdicts and scores."""
    from store import session_scope
    from store.models import Monitor

    rng = np.random.default_rng(seed)
    with session_scope(engine) as s:
        s.add_all(slice_pair_samples(pairs))
        mon = Monitor(name="judge", backend="rules")
        s.add(mon)
        s.flush()
        for r in range(runs):
            add_run(s, f"run{r}", mon.id, "evidence" if r % 2 else "direct", pairs, rng)


def add_run(s, rid: str, monitor_id: int, template: str, pairs: int, rng) -> None:
    from store.models import Prediction, Run

    s.add(Run(id=rid, monitor_id=monitor_id, monitor="judge", template=template, status="finished"))
    s.flush()
    for p in range(pairs):
        for lab in (M, B):
            u = rng.random()
            outcome = "invalid" if u < 0.1 else M if rng.random() < (0.7 if lab == M else 0.3) else B
            ev = [QUOTES[int(rng.integers(len(QUOTES)))] for _ in range(2)] if template == "evidence" else []
            s.add(
                Prediction(
                    run_id=rid,
                    sample_id=f"s{p}{lab[0]}",
                    outcome=outcome,
                    score=float(round(rng.random(), 2)),
                    evidence=ev,
                )
            )


@pytest.fixture
def memo_dir(tmp_path, monkeypatch):
    """The memo's cache directory for this test (empty)."""
    home = tmp_path / "cache"
    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(home))
    return home


@pytest.fixture
def counted(monkeypatch):
    """How many runs' grounding, paired bootstraps and Pearson r the report computed (not read back)."""
    calls = {"grounding": 0, "paired": 0, "pearson": 0, "bootstrap": 0}

    def wrap(module, name, kind, runs=lambda *a: 1):
        real = getattr(module, name)

        def counting(*a, **k):
            calls[kind] += runs(*a)
            return real(*a, **k)

        monkeypatch.setattr(module, name, counting)

    wrap(roc_grounding, "grounding_summaries", "grounding", lambda run, sids, evs, n_runs, *rest: n_runs)
    wrap(metrics, "paired_bootstrap", "paired")
    wrap(metrics, "pearson_r", "pearson")
    wrap(bootstrap, "group_intervals", "bootstrap", lambda run_counts, weights: len(run_counts))
    return calls


def counts(grounding=0, paired=0, pearson=0, bootstrap=0):
    return {"grounding": grounding, "paired": paired, "pearson": pearson, "bootstrap": bootstrap}


def text(rep) -> str:
    return json.dumps(rep.to_dict(), sort_keys=True)


def fresh(engine, tmp_path, monkeypatch, **options) -> str:
    """The report computed with an empty memo (a new cache directory), as JSON text."""
    home = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    with monkeypatch.context() as m:
        m.setenv("AUTOMONITOR_CACHE_DIR", str(home))
        out = text(analysis.report(engine, None, **{**OPTIONS, **options}))
    assert (home / "memo" / "grounding").is_dir() and (home / "memo" / "paired").is_dir()  # it did keep them
    return out


def report(engine, **options) -> str:
    return text(analysis.report(engine, None, **{**OPTIONS, **options}))


def reset(calls) -> None:
    for k in calls:
        calls[k] = 0


def update(engine, table, where, **values) -> None:
    with engine.begin() as c:
        c.execute(sa.update(table).where(*where).values(**values))


def test_the_memo_reads_back_what_it_computed_and_each_changed_input_is_computed_again(
    engine, memo_dir, counted, tmp_path, monkeypatch
):
    """Runs on SQLite and PostgreSQL (the store's own JSON, text and NULL handling reach the keys)."""
    from store.models import Prediction, Sample

    generate(engine, 0)
    first = report(engine)
    assert counted == counts(2, 6, 1, 4)  # 2 evidence runs, 4 runs: 6 pairs
    reset(counted)
    assert report(engine) == first
    assert counted == counts()  # all read back
    assert first == fresh(engine, tmp_path, monkeypatch)

    # some samples' responses: the runs that quoted them are grounded again, the paired comparisons are kept
    before = json.loads(first)
    update(engine, Sample, [Sample.pair_id.in_(["p0", "p1", "p2"])], response="nothing quoted here")
    reset(counted)
    changed = report(engine)
    assert counted == counts(grounding=2)
    assert changed == fresh(engine, tmp_path, monkeypatch)
    assert [r["grounding"] for r in json.loads(changed)["runs"] if "grounding" in r] != [
        r["grounding"] for r in before["runs"] if "grounding" in r
    ]

    # the request: a quote not in the response is looked up there
    update(engine, Sample, [Sample.id == "s1b"], request="no such words")
    reset(counted)
    changed = report(engine)
    assert counted == counts(grounding=2) and changed == fresh(engine, tmp_path, monkeypatch)

    # one quote of run1: only run1 is grounded again
    update(engine, Prediction, [Prediction.run_id == "run1", Prediction.sample_id == "s2m"], evidence=["made up"])
    reset(counted)
    changed = report(engine)
    assert counted == counts(grounding=1) and changed == fresh(engine, tmp_path, monkeypatch)

    # one verdict of run0: its intervals, the three comparisons with run0 and Pearson r are computed again
    old = report(engine)
    with engine.connect() as c:
        outcome = c.execute(
            sa.select(Prediction.outcome).where(Prediction.run_id == "run0", Prediction.sample_id == "s0m")
        ).scalar()
    update(
        engine,
        Prediction,
        [Prediction.run_id == "run0", Prediction.sample_id == "s0m"],
        outcome=B if outcome == M else M,
    )
    reset(counted)
    new = report(engine)
    assert counted == counts(paired=3, pearson=1, bootstrap=1)
    assert new == fresh(engine, tmp_path, monkeypatch) and new != old

    # a run added: its own grounding and its three comparisons; the rest is kept
    from store import session_scope

    from store.models import Monitor

    with session_scope(engine) as s:
        mon = s.execute(sa.select(Monitor.id)).scalar_one()
        add_run(s, "run4", mon, "evidence", 10, np.random.default_rng(9))
    reset(counted)
    changed = report(engine)
    assert counted == counts(grounding=1, paired=4, pearson=1, bootstrap=1)
    assert changed == fresh(engine, tmp_path, monkeypatch)

    # other bootstrap options: every comparison again, none of the grounding
    reset(counted)
    changed = report(engine, n_boot=60)
    assert counted == counts(paired=10, bootstrap=5)
    assert changed == fresh(engine, tmp_path, monkeypatch, n_boot=60)
    reset(counted)
    changed = report(engine, seed=3)
    assert counted == counts(paired=10, bootstrap=5)
    assert changed == fresh(engine, tmp_path, monkeypatch, seed=3)
    # the unscored policy changes the cells the comparisons read
    reset(counted)
    assert report(engine, invalid="as-flag") == fresh(engine, tmp_path, monkeypatch, invalid="as-flag")


def test_other_code_or_libraries_compute_again(sqlite_engine, memo_dir, counted, monkeypatch):
    from automonitor.analysis import report_cache

    generate(sqlite_engine, 1)
    first = report(sqlite_engine)
    reset(counted)
    monkeypatch.setattr(report_cache, "code_stamp", lambda: "edited")
    assert report(sqlite_engine) == first
    assert counted == counts(2, 6, 1, 4)
    import scipy

    reset(counted)
    monkeypatch.setattr(scipy, "__version__", "0.0")
    assert report(sqlite_engine) == first
    assert counted == counts(2, 6, 1, 4)
    reset(counted)
    assert report(sqlite_engine) == first
    assert counted == counts()


def test_recall_keys_on_every_input_and_computes_outside_a_block(memo_dir):
    calls: list[str] = []

    def value(v):
        def compute():
            calls.append(v)
            return {"v": v, "x": [1.5, None, float("nan")]}

        return compute

    assert memo.recall("k", ["a"], value("out"))["v"] == "out" and not memo.memo_active()
    assert not (memo_dir / "memo").exists()  # nothing kept outside a block
    with memo.memo_block():
        assert memo.memo_active()
        assert memo.recall("k", ["ab", "c"], value(1))["v"] == 1
        assert memo.recall("k", ["a", "bc"], value(2))["v"] == 2  # inputs are delimited
        assert memo.recall("k", ["abc"], value(3))["v"] == 3
        assert memo.recall("j", ["ab", "c"], value(4))["v"] == 4  # kinds apart
        assert memo.recall("k", [b"ab", "c"], value(5))["v"] == 1  # bytes and text alike: read back
        back = memo.recall("k", ["a", "bc"], value(6))
        assert back["v"] == 2 and back["x"][:2] == [1.5, None] and np.isnan(back["x"][2])
        for f in (memo_dir / "memo" / "k").glob("*.json"):
            f.write_text("{broken")
        assert memo.recall("k", ["abc"], value(7))["v"] == 7  # an unreadable entry is computed again
    assert calls == ["out", 1, 2, 3, 4, 7]


def test_recall_many_computes_only_what_is_not_kept_and_keeps_only_json(memo_dir):
    asked: list[list[int]] = []

    def squares(todo):
        asked.append(todo)
        return [i * i for i in todo]

    with memo.memo_block():
        assert memo.recall_many("sq", [["1"], ["2"], ["3"]], lambda todo: squares([int(i) + 1 for i in todo])) == [
            1,
            4,
            9,
        ]
        assert memo.recall_many("sq", [["0"], ["2"], ["3"], ["1"]], lambda todo: [0] * len(todo)) == [0, 4, 9, 1]
        assert memo.recall("odd", ["x"], lambda: {1, 2}) == {1, 2}  # not JSON: returned, not kept
        assert memo.recall("odd", ["x"], lambda: "again") == "again"
    assert asked == [[1, 2, 3]]


def test_a_runs_intervals_do_not_depend_on_the_runs_computed_beside_it():
    """bootstrap.group_intervals of several runs at once = of each run alone (what keeping them per run assumes)."""
    rng = np.random.default_rng(5)
    run_counts = rng.integers(0, 3, size=(6, 40, 4)).astype(float)
    run_counts[2, :, :2] = 0  # a run without misbehavior samples: no MR interval
    weights = metrics.cluster_bootstrap_weights(40, 200, 3)
    together = bootstrap.group_intervals(run_counts, weights)
    assert together == [bootstrap.group_intervals(run_counts[[k]], weights)[0] for k in range(6)]
    assert together == bootstrap.group_intervals(run_counts[::-1], weights)[::-1]
    assert together[2]["mr_ci"] is None and together[0]["mr_ci"] is not None
