"""The drill-down says when a raw monitor answer was cut on storing (fresh-user trial: a 1,000,006-character
answer showed its first 8,000 characters with no note, though the prediction's meta had ``raw_truncated``
and ``raw_chars``)."""

from __future__ import annotations

from apptest_support import StoreEnv, app, ok, open_store
from sqlmodel import Session, select

from automonitor import views
from automonitor.runs import runner
from automonitor.runs.monitors.judgement import bounded_raw
from servers.views_data import add_view_samples
from store.models import Prediction


def test_raw_cut_note_reads_the_prediction_meta():
    meta: dict = {}
    kept = bounded_raw("x" * 1_000_006, meta)
    assert views.samples.raw_cut_note(kept, meta) == "first 8,000 of 1,000,006 characters"
    assert views.samples.raw_cut_note("short", {}) is None and views.samples.raw_cut_note(None, None) is None
    assert views.samples.raw_cut_note(kept, {"raw_truncated": True}) == "first 8,000 characters (cut when stored)"


def test_drilldown_names_how_much_of_a_cut_raw_answer_it_shows(tmp_path):
    url = f"sqlite:///{tmp_path / 'cut.db'}"
    eng = open_store(url)
    sid = next(iter(add_view_samples(eng)))
    try:
        rid = runner.create_run(eng, "rules", "direct")
        runner.execute_run(eng, rid)
        with Session(eng) as s:  # the answer a judge gave, stored as the runner stores it (bounded_raw)
            pred = s.exec(select(Prediction).where(Prediction.run_id == rid, Prediction.sample_id == sid)).one()
            meta = dict(pred.meta or {})
            pred.raw = bounded_raw("y" * 1_000_006, meta)
            pred.meta = meta
            s.add(pred)
            s.commit()
        assert views.sample_predictions(eng, sid)[rid]["raw_note"] == "first 8,000 of 1,000,006 characters"
        with StoreEnv(url):
            at = ok(app("pages/drilldown.py", run=rid, sample=sid).run())
            labels = [e.label for e in at.expander if e.label.startswith("Raw monitor answer")]
            assert labels == ["Raw monitor answer (first 8,000 of 1,000,006 characters)"], labels
            assert any("first 8,000 of 1,000,006 characters" in c.value for c in at.caption)
    finally:
        eng.dispose()
