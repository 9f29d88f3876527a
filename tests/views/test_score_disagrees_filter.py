"""A run-level way to find the samples whose log-probability score disagrees with their verdict
(``meta.score_disagrees``; the report counts them as ``answers.score_disagrees``): the Drill-down's core view
lists them (:func:`automonitor.views.score_disagreeing_samples`) as a filter of a cell's samples (fresh-user
trial: the report said "score disagrees 4" and nothing led to those four samples). The list is exactly what the
report counts, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor import analysis, views
from automonitor.errors import NotFound
from automonitor.runs import runner
from automonitor.runs.status import answer_quality
from servers.data import add_pairs
from store import session_scope
from store.models import Prediction, Run

#: the values a prediction's ``meta.score_disagrees`` may hold in a store: only JSON ``true`` is the flag the
#: backend writes; ``"absent"`` leaves the key out, ``"nested"`` puts it one level down
FLAG_VALUES = st.sampled_from([True, False, "yes", "true", 1, None, "absent", "nested"])


def _scored_run(engine, *, repeat: int = 1, score_method: str | None = "verdict-token") -> str:
    """A finished ``rules`` run over the store's test samples, its config marked as reading a verdict-token
    score (as an ``openai`` log-probability run's is) unless ``score_method`` is None."""
    rid = runner.create_run(engine, "rules", "direct", params={"repeat": repeat} if repeat > 1 else None)
    runner.execute_run(engine, rid)
    if score_method is not None:
        with session_scope(engine) as s:
            run = s.get(Run, rid)
            run.params = {**run.params, "config": {**run.params.get("config", {}), "score_method": score_method}}
    return rid


def _set_flags(engine, rid: str, flags: dict[str, object], repeat: int = 0) -> None:
    """Write ``meta.score_disagrees`` per sample id (``"absent"``: no key; ``"nested"``: under another key),
    with Core updates (the ORM would skip ``1`` after ``True``: they compare equal)."""
    with session_scope(engine) as s:
        rows = s.execute(
            sa.select(Prediction.id, Prediction.sample_id, Prediction.meta).where(
                Prediction.run_id == rid, Prediction.repeat == repeat
            )
        ).all()
        for pid, sid, old in rows:
            value = flags.get(sid, "absent")
            meta = {k: v for k, v in (old or {}).items() if k not in ("score_disagrees", "detail")}
            if value == "nested":
                meta["detail"] = {"score_disagrees": True}
            elif value != "absent":
                meta["score_disagrees"] = value
            s.execute(sa.update(Prediction).where(Prediction.id == pid).values(meta=meta))


def _sample_ids(engine, rid: str) -> list[str]:
    with engine.connect() as c:
        return list(
            c.execute(sa.select(Prediction.sample_id).where(Prediction.run_id == rid, Prediction.repeat == 0)).scalars()
        )


def test_the_listed_samples_are_those_the_report_counts_and_filter_each_cell(engine):
    add_pairs(engine, 4)
    rid = _scored_run(engine, repeat=2)
    ids = sorted(_sample_ids(engine, rid))
    flagged = {ids[0], ids[3], ids[5]}
    _set_flags(engine, rid, {ids[0]: True, ids[3]: True, ids[5]: True, ids[1]: "yes", ids[2]: "nested"})
    _set_flags(engine, rid, {ids[4]: True}, repeat=1)  # a later repeat is not the run's verdict
    assert views.score_disagreeing_samples(engine, rid) == flagged
    assert answer_quality(engine, [rid])[rid]["score_disagrees"] == len(flagged)
    rep = analysis.report(engine, [rid], n_boot=10).run(rid)
    assert rep is not None and rep.answers is not None and rep.answers.score_disagrees == len(flagged)
    # as the Drill-down filters a cell: the cell's samples that carry the flag, and over all cells every one
    seen: set[str] = set()
    for cell in ("tp", "fn", "fp", "tn", "unscored"):
        samples = analysis.cell_samples(engine, rid, cell)
        shown = views.filter_cell(samples, only=views.score_disagreeing_samples(engine, rid))
        assert set(shown["sample_id"]) == set(samples["sample_id"]) & flagged
        seen |= set(shown["sample_id"])
    assert seen == flagged


def test_a_run_without_verdict_token_scores_lists_none_as_the_report_counts_none(engine):
    add_pairs(engine, 2)
    rid = _scored_run(engine, score_method=None)
    _set_flags(engine, rid, {sid: True for sid in _sample_ids(engine, rid)})
    assert views.score_disagreeing_samples(engine, rid) == set()
    assert answer_quality(engine, [rid])[rid]["score_disagrees"] == 0


def test_an_unknown_run_is_not_found(engine):
    with pytest.raises(NotFound):
        views.score_disagreeing_samples(engine, "run_nope")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(FLAG_VALUES, min_size=8, max_size=8))
def test_any_stored_flags_list_exactly_the_true_ones_and_match_the_count(engine, values):
    with engine.connect() as c:
        rid = c.execute(sa.select(Run.id)).scalar()
    if rid is None:
        add_pairs(engine, 4)
        rid = _scored_run(engine)
    ids = sorted(_sample_ids(engine, rid))
    flags = dict(zip(ids, values))
    _set_flags(engine, rid, flags)
    expected = {sid for sid, v in flags.items() if v is True}
    assert views.score_disagreeing_samples(engine, rid) == expected
    assert answer_quality(engine, [rid])[rid]["score_disagrees"] == len(expected)
