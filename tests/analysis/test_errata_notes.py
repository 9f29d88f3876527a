"""``automonitor.analysis.from_store.errata_notes``: per edition of the report's runs, the samples they judged
(pending predictions left out, a sample judged by several runs once) and how many an erratum marks."""

from __future__ import annotations

import pandas as pd

from automonitor.analysis.from_store import errata_notes


def _seed(engine) -> None:
    from store import session_scope
    from store.models import Sample

    marks = {"s1": {"erratum": {"verdict": "wrong"}}, "s2": {"erratum": {"verdict": "doubtful"}}, "s4": {}}
    with session_scope(engine) as s:
        for sid in ("s1", "s2", "s3", "s4", "s5"):
            s.add(Sample(id=sid, pair_id=f"p-{sid}", category="safety_permission", task="qa", label="benign",
                         request="q", response="a", source="test", split="test", request_hash=sid,
                         response_hash=sid, content_hash=sid, meta=marks.get(sid, {})))  # fmt: skip


def test_errata_notes_count_each_editions_judged_samples_once(sqlite_engine):
    _seed(sqlite_engine)
    rows = [
        ("r1", "s1", "benign"),
        ("r1", "s3", "misbehavior"),
        ("r1", "s5", None),  # pending: not judged
        ("r2", "s1", "invalid"),  # the same sample in another paper run: once
        ("r2", "s4", "benign"),
        ("r3", "s2", "benign"),
        ("r3", "s1", None),
        ("r4", "s3", "error"),  # a run recorded before editions: paper
    ]
    preds = pd.DataFrame(rows, columns=["run_id", "sample_id", "outcome"])
    notes = errata_notes(sqlite_engine, preds, {"r1": "paper", "r2": "paper", "r3": "verified"})
    assert list(notes) == ["paper", "verified"]
    paper, verified = notes["paper"], notes["verified"]
    assert (paper.samples, paper.wrong, paper.doubtful) == (3, 1, 0)  # s1, s3, s4
    assert (verified.samples, verified.wrong, verified.doubtful) == (1, 0, 1)  # s2
    assert errata_notes(sqlite_engine, preds.iloc[:0], {}) == {}
    only_paper = errata_notes(sqlite_engine, preds[preds["run_id"].isin(["r1", "r4"])], {"r1": "paper"})
    assert list(only_paper) == ["paper"] and only_paper["paper"].samples == 2 and only_paper["paper"].wrong == 1
