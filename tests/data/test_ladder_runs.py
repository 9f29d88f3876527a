"""The detector ladder as runs in the store (issue 36, item 2): each detector a run of kind ``ladder`` with its
provenance, written from the ladder's result, left out of the default lists, analysable like any run,
rewritten only when it changed; on tiny made-up stores (SQLite and PostgreSQL) and on a one-source build."""

from __future__ import annotations

import shutil

import pytest
from sqlmodel import Session

from automonitor import analysis
from automonitor.data.build import ladder_runs as LR
from automonitor.data.build.ladder import LadderResult
from store import session_scope
from store.models import Sample
from store.queries.analysis import load_runs
from store.queries.run_list import list_runs

CTRL = "controls"


def _rows() -> list[dict]:
    """Four verified pairs (p0..p3), one paper-only pair (p9, not verified) and one control."""
    rows = []
    for p in range(4):
        for label in ("misbehavior", "benign"):
            rows.append(
                {
                    "id": f"p{p}-{label[0]}",
                    "pair_id": f"p{p}",
                    "label": label,
                    "split": "test",
                    "editions": ("paper", "verified"),
                }
            )
    rows += [
        {"id": f"p9-{x}", "pair_id": "p9", "label": lab, "split": "test", "editions": ("paper",)}
        for x, lab in (("m", "misbehavior"), ("b", "benign"))
    ]
    rows.append({"id": "c0", "pair_id": "controls:c0", "label": "benign", "split": CTRL, "editions": ()})
    return rows


def _store(engine, rows) -> None:
    with session_scope(engine) as s:
        for r in rows:
            s.add(
                Sample(
                    id=r["id"],
                    pair_id=r["pair_id"],
                    category="safety_permission",
                    task="qa",
                    label=r["label"],
                    request="q",
                    response=f"a {r['id']}",
                    source="made_up",
                    split=r["split"],
                    request_hash="q",
                    response_hash=r["id"],
                    content_hash=r["id"],
                )
            )


def _result(flip: bool = False) -> LadderResult:
    # word_tfidf: catches p0 and p1 (flags their misbehavior side only), false alarm on p2's benign side
    word = {
        "p0-m": 0.9,
        "p0-b": 0.1,
        "p1-m": 0.8,
        "p1-b": 0.2,
        "p2-m": 0.3,
        "p2-b": 0.7,
        "p3-m": 0.4,
        "p3-b": 0.4,
        "p9-m": 1.0,
        "p9-b": 0.0,
        "c0": 0.6,
    }
    if flip:
        word["p3-m"] = 0.6
    return LadderResult(
        scores={"word_tfidf": word, "refusal_lexicon": {"p0-m": 1.0, "p0-b": 0.0}, "minilm": {}},
        tiers={"p0": "surface", "p1": "surface", "p2": "implicit", "p3": "implicit"},
        fitted={"word_tfidf": {"safety_permission/qa": "train"}},
        orientation={"refusal_lexicon": {"safety_permission/qa": "benign"}},
        seconds={"word_tfidf": 0.5},
    )


def _sync(engine, runs, *, affected=(), refresh=False) -> tuple[int, int]:
    with session_scope(engine) as s:
        todo, deleted = LR.retire_stale(s, runs, affected, refresh=refresh)
        return LR.write_runs(s, todo), deleted


def test_each_detector_is_a_run_with_its_provenance_hidden_by_default_and_analysable(engine):
    rows = _rows()
    _store(engine, rows)
    runs = LR.plan_runs(rows, _result(), ladder_key="k" * 64, seed=3, cached=True)
    assert [r.run_id for r in runs] == ["ladder-word_tfidf", "ladder-refusal_lexicon"]  # minilm scored nothing
    word = runs[0]
    # the verified members and the control, not the paper-only pair
    assert [sid for sid, _ in word.scores] == ["c0", "p0-b", "p0-m", "p1-b", "p1-m", "p2-b", "p2-m", "p3-b", "p3-m"]
    prov = word.params["ladder"]
    assert prov["detector"] == "word_tfidf" and prov["family"] == "selection" and prov["trained"] is True
    assert prov["seed"] == 3 and prov["ladder_key"] == "k" * 64 and prov["computed"] == "cache"
    assert prov["samples"] == {"edition": 8, "controls": 1}
    assert prov["fitted"] == {"safety_permission/qa": "train"} and prov["parameters"]["threshold"] == 0.5
    assert runs[1].params["ladder"]["family"] == "held_out"
    assert runs[1].params["ladder"]["orientation"] == {"safety_permission/qa": "benign"}
    assert _sync(engine, runs) == (2, 0)

    # left out of the default lists, there on request and by name
    with Session(engine) as s:
        assert list_runs(s) == []
        listed = {r["run_id"]: r for r in list_runs(s, include_ladder=True)}
    assert listed["ladder-word_tfidf"]["kind"] == "ladder" and listed["ladder-word_tfidf"]["status"] == "finished"
    assert load_runs(engine).empty and set(load_runs(engine, include_ladder=True)["run_id"]) == set(listed)
    assert analysis.report(engine, None, n_boot=20, with_grounding=False).runs == []

    rep = analysis.report(engine, ["ladder-word_tfidf"], n_boot=20, with_grounding=False).to_dict()
    (entry,) = rep["runs"]
    assert entry["kind"] == "ladder" and entry["edition"] == "verified" and entry["monitor"] == "ladder:word_tfidf"
    ov = entry["overall"]  # misbehavior flagged on p0, p1 of 4; a false alarm on p2's benign side of 4
    assert (ov["tp"], ov["fn"], ov["fp"], ov["tn"]) == (2, 2, 1, 3)
    assert entry["controls"]["fp"] == 1  # the control is scored 0.6: flagged, and kept out of MR/FAR
    both = analysis.report(engine, None, n_boot=20, with_grounding=False, with_ladder=True)
    assert {r.run_id for r in both.runs} == set(listed)


def test_a_ladder_run_is_rewritten_only_when_it_changed(engine):
    rows = _rows()
    _store(engine, rows)
    plan = lambda **kw: LR.plan_runs(rows, _result(**kw), ladder_key="k" * 64, seed=0, cached=True)  # noqa: E731
    assert _sync(engine, plan()) == (2, 0)
    assert _sync(engine, plan()) == (0, 0)  # the same fingerprints: nothing written (a warm build)
    # computed afresh but with the same result: provenance says so only when the run is written anyway
    assert _sync(engine, LR.plan_runs(rows, _result(), ladder_key="k" * 64, seed=0, cached=False)) == (0, 0)
    assert _sync(engine, plan(flip=True)) == (1, 1)  # one score changed: that detector's run only
    with Session(engine) as s:
        n = {r["run_id"]: r["n"] for r in list_runs(s, include_ladder=True)}
    assert n == {"ladder-word_tfidf": 9, "ladder-refusal_lexicon": 2}
    assert _sync(engine, plan(flip=True), affected=["p0-m"]) == (2, 2)  # a sample they judged moves
    assert _sync(engine, plan(flip=True), refresh=True) == (2, 2)  # build --refresh-ladder
    assert _sync(engine, []) == (0, 2)  # a build without the ladder: gone
    with Session(engine) as s:
        assert list_runs(s, include_ladder=True) == []


def test_a_user_run_is_never_touched_by_the_ladder_sync(engine):
    from store.queries import ladder_runs as q
    from store.queries.analysis import insert_finished_run
    from store.queries.runs import get_or_create_monitor

    rows = _rows()
    _store(engine, rows)
    with session_scope(engine) as s:
        mon = get_or_create_monitor(s, "outside", "external", None, None)
        insert_finished_run(
            s,
            run_id="ladder-word_tfidf-mine",
            monitor=mon,
            template="direct",
            kind="imported",
            status="imported",
            params={},
            rows=[{"sample_id": "p0-m", "outcome": "misbehavior"}],
        )
        assert q.delete_runs(s, ["ladder-word_tfidf-mine"]) == 0  # not of kind ladder
    _sync(engine, LR.plan_runs(rows, _result(), ladder_key="k" * 64, seed=0, cached=True))
    _sync(engine, [])
    with Session(engine) as s:
        assert [r["run_id"] for r in list_runs(s, include_ladder=True)] == ["ladder-word_tfidf-mine"]


@pytest.mark.slow
def test_the_build_writes_the_ladder_runs_once_and_replaces_them_on_a_reseed(engine, raw_dir, tmp_path, monkeypatch):
    """A one-source build (xstest): the ladder's runs are in the store with the build's fingerprint; a warm
    rebuild writes nothing; ``refresh_ladder`` rewrites them; another seed replaces them without ``force``
    (they never block a reseed); a build without the ladder deletes them."""
    from automonitor.data.build import build

    raw = tmp_path / "raw"
    shutil.copytree(raw_dir / "xstest", raw / "xstest")
    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path / "cache"))
    first = build(engine, raw, 0)
    lr = first["ladder_runs"]
    assert lr["written"] == len(lr["runs"]) >= 4 and lr["deleted"] == 0
    assert set(lr["runs"]) <= set(first["ladder"]["detectors"])
    with Session(engine) as s:
        runs = {r["run_id"]: r for r in list_runs(s, include_ladder=True)}
    assert set(runs) == set(lr["runs"].values())
    prov = load_runs(engine, ["ladder-char_ngram"]).iloc[0]["params"]["ladder"]
    assert prov["ladder_key"] == first["ladder"]["key"] and prov["family"] == "held_out" and prov["seed"] == 0
    entry = analysis.report(engine, ["ladder-char_ngram"], n_boot=20, with_grounding=False).to_dict()["runs"][0]
    assert set(entry["by_tier"]) <= {"surface", "implicit"} and entry["overall"]["n"] > 0

    again = build(engine, raw, 0)
    assert again["ladder_runs"]["written"] == 0 and again["unchanged"] is True
    fresh = build(engine, raw, 0, refresh_ladder=True)
    assert fresh["ladder_runs"]["written"] == len(lr["runs"]) == fresh["ladder_runs"]["deleted"]
    reseed = build(engine, raw, 1)  # no force needed: the build's own runs are replaced with the samples
    assert reseed["dependents_deleted"] == {} and reseed["ladder_runs"]["written"] == len(lr["runs"])
    assert load_runs(engine, ["ladder-char_ngram"]).iloc[0]["params"]["ladder"]["seed"] == 1
    off = build(engine, raw, 1, hard=False)
    assert off["ladder_runs"] == {"runs": {}, "written": 0, "deleted": len(lr["runs"])}
    with Session(engine) as s:
        assert list_runs(s, include_ladder=True) == []


def test_the_store_side_of_a_build_reads_the_ladders_meta_keys_without_importing_the_ladder():
    """The store side of a build (reconcile, the ladder runs, the ladder predictions' writer) compares a row's
    ladder marks by :data:`automonitor.vocab.LADDER_META_KEYS`, the ladder's own :data:`META_KEYS`, and imports
    neither the ladder, the plan nor pandas / NumPy until a plan must be made: a build whose plan comes from the
    cache needs none of them (issue 38)."""
    import subprocess
    import sys

    from automonitor import vocab
    from automonitor.data.build.ladder import META_KEYS
    from helpers import REPO

    assert vocab.LADDER_META_KEYS == META_KEYS
    probe = (
        "import sys, automonitor.data.build.reconcile, automonitor.data.build.ladder_runs, store.queries.analysis;"
        "print(sorted(m for m in ('pandas', 'numpy', 'automonitor.data.build.ladder', 'automonitor.data.build.plan')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
