"""The Trade-off page's operating point reads a score run's predictions once (issue 38): its ROC curve and its
labels and scores come from one read (``pages/_ui/data.load_score_run``; two loaders read them twice before),
the same frames as ``analysis.roc_frame`` and the run's scored predictions."""

from __future__ import annotations

import pandas as pd

from automonitor import analysis
from pages._ui import data as loaders
from store.queries import analysis as queries


def test_a_score_run_is_read_once(seeded, monkeypatch):
    reads: list[list[str]] = []
    real = queries.load_predictions

    def counting(engine, run_ids=None, **kwargs):
        reads.append(list(run_ids or []))
        return real(engine, run_ids, **kwargs)

    monkeypatch.setattr(queries, "load_predictions", counting)
    loaders.load_score_run.clear()
    roc, scores = loaders.load_score_run(seeded["url"], ("test",), "r002")
    assert reads == [["r002"]]

    eng = seeded["engine"]
    pd.testing.assert_frame_equal(roc, analysis.roc_frame(eng, "r002"))
    preds = analysis.predictions_frame(eng, ["r002"], light=True)
    want = preds[preds["score"].notna() & preds["label"].isin(["misbehavior", "benign"])][["label", "score"]]
    pd.testing.assert_frame_equal(scores, want.reset_index(drop=True))
    assert len(roc) > 2 and len(scores) > 10  # a real score run
