"""The store as the pages read it (Streamlit): the engine and the cached loaders.

- ``engine()``: the store engine for ``AUTOMONITOR_DB`` (migrated once per process, ``st.cache_resource``).
- ``version()``: a cheap fingerprint of the store (``automonitor.views.store_version``); every cached
  loader takes it as an argument, so caches are invalidated exactly when a run is created, finishes or
  is imported, or samples are added.
- ``load_*``: the core's frames and reports, cached per store URL and version (results are plain, picklable
  data). What they compute lives in the core (``automonitor.views``, ``automonitor.analysis``); a loader with
  a selection takes it as one typed options object (``load_tradeoff``: :class:`automonitor.views.TradeoffOptions`).
"""

from __future__ import annotations

import streamlit as st

from automonitor import views
from store.engine import db_url  # the store URL (``AUTOMONITOR_DB`` or the default SQLite file)


@st.cache_resource(show_spinner=False)
def engine_for(url: str):
    """The (cached, migrated) SQLAlchemy engine of the store at ``url``."""
    from store import get_engine, init_db

    return init_db(get_engine(url))


def engine():
    """The (cached, migrated) SQLAlchemy engine of the store."""
    return engine_for(db_url())


def version() -> tuple:
    """Cheap store fingerprint used as cache key (see ``automonitor.views.store_version``)."""
    return views.store_version(engine())


@st.cache_data(show_spinner=False, max_entries=32)
def load_runs(url: str, ver: tuple, ladder: bool = False):
    """Run history frame (``automonitor.views.runs_frame``; the detector ladder's runs with ``ladder``)."""
    return views.runs_frame(engine_for(url), include_ladder=ladder)


def load_report(url: str, ver: tuple, invalid: str = "exclude", ladder: bool = False):
    """:func:`_load_report` with every argument passed by position: Streamlit keys its cache on the
    arguments as passed, so ``load_report(u, v, p)`` and ``load_report(u, v, p, ladder=False)``
    were two entries and a cold Trade-off page computed the same report twice."""
    return _load_report(url, ver, invalid, ladder)


@st.cache_data(show_spinner=False, max_entries=64)
def _load_report(url: str, ver: tuple, invalid: str, ladder: bool):
    """The analysis report (:class:`automonitor.analysis.report_schema.Report`, the typed contract JSON + extras)
    over every run.

    The pages use the per-slice counts, MR/FAR, Wilson intervals, Pareto front and ROC summaries;
    so the report is computed without evidence grounding and with a small pair bootstrap (neither is
    shown), which halves its cold cost on a paper-sized store, and without the paired comparisons
    (``compare=()``: no page shows them; their McNemar tests import ``scipy.special``). ``ladder``: every
    run includes the detector ladder's (kind ``ladder``; left out by default). Kept on disk per store version too
    (:func:`automonitor.analysis.report_cache.cached_report`): a restarted app reads it back."""
    from automonitor import analysis
    from automonitor.analysis.report_cache import cached_report

    engine = engine_for(url)
    options = dict(invalid=invalid, n_boot=100, with_grounding=False, edition=None, with_ladder=ladder, compare=())
    return cached_report(engine, None, options, lambda: analysis.report(engine, None, **options))


@st.cache_data(show_spinner="Scoring evidence against gold spans…", max_entries=8)
def load_localisation(url: str, ver: tuple, invalid: str, category: str | None, task: str | None):
    """Each run's localised hits share in a slice (``automonitor.views.localisation_shares``): needs a
    report with evidence grounding (slower than :func:`load_report`), so only computed on request."""
    from automonitor import analysis

    rep = analysis.report(engine_for(url), None, invalid=invalid, n_boot=20, with_grounding=True)
    return views.localisation_shares(rep, category, task)


@st.cache_data(show_spinner=False, max_entries=8)
def load_reported():
    """The paper's reported MR/FAR points (``automonitor.analysis.reported_points``)."""
    from automonitor import analysis

    return analysis.reported_points()


@st.cache_data(show_spinner=False, max_entries=64)
def load_score_run(url: str, ver: tuple, run_id: str):
    """A score run's ROC curve frame (``automonitor.analysis.roc_frame``) and the gold labels and
    P(misbehavior) scores of its scored predictions (frame ``label, score``), from one read of its predictions
    (the Trade-off page's operating point needs both)."""
    from automonitor import analysis

    preds = analysis.predictions_frame(engine_for(url), [run_id], light=True)
    roc = analysis.roc_frame(engine_for(url), run_id, preds=preds)
    df = preds[preds["score"].notna() & preds["label"].isin(["misbehavior", "benign"])]
    return roc, df[["label", "score"]].reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=128)
def load_cell(
    url: str, ver: tuple, run_id: str, cell: str, category: str | None, task: str | None, invalid: str = "exclude"
):
    """The samples of one confusion cell (``automonitor.analysis.cell_samples``)."""
    from automonitor import analysis

    return analysis.cell_samples(engine_for(url), run_id, cell, category, task, invalid=invalid)


@st.cache_data(show_spinner=False, max_entries=16)
def load_score_disagreeing(url: str, ver: tuple, run_id: str) -> list[str]:
    """The run's sample ids, sorted, whose log-probability score disagrees with their verdict
    (``automonitor.views.score_disagreeing_samples``)."""
    return sorted(views.score_disagreeing_samples(engine_for(url), run_id))


@st.cache_data(show_spinner=False, max_entries=16)
def load_composition(url: str, ver: tuple, split: str | None = "test", edition: str | None = None):
    """Composition long frame (category, task, label, split, n) of the gold samples (``edition``: only
    that edition's test samples)."""
    return views.composition_frame(engine_for(url), split=split, edition=edition)


@st.cache_data(show_spinner=False, max_entries=16)
def load_counts(url: str, ver: tuple, column: str):
    """Sample counts grouped by ``column`` and status."""
    return views.counts_by(engine_for(url), column)


@st.cache_data(show_spinner=False, max_entries=16)
def load_sample_sets(url: str, ver: tuple):
    """Which sample set (edition, fingerprint) each run judged (``automonitor.views.run_sample_sets``). Inside a
    ``predictions_read_once`` block in which the report read its runs' predictions (the Trade-off page's first run
    on a store version: the report first, then this), those runs' samples come from that read (the same rows:
    ``tests/views/test_workbench_views.py``) instead of a second read of every prediction."""
    from automonitor.analysis.from_store import kept_predictions

    engine = engine_for(url)
    kept = kept_predictions(engine)
    if kept is None:
        return views.run_sample_sets(engine)
    return views.run_sample_sets(engine, preds=kept[1], preds_runs=kept[0])


@st.cache_data(show_spinner=False, max_entries=16)
def load_score_runs(url: str, ver: tuple, invalid: str = "exclude") -> list[dict]:
    """The runs of the report that give scores: ``[{"run_id", "monitor", "template", "auroc"}]`` (small,
    so a warm page does not unpickle the whole report)."""
    report = load_report(url, ver, invalid)
    return [
        {"run_id": e.run_id, "monitor": e.monitor, "template": e.template, "auroc": e.auroc}
        for e in report.runs
        if e.auroc is not None
    ]


@st.cache_data(show_spinner=False, max_entries=8)
def load_audit(url: str, ver: tuple, edition: str) -> dict | None:
    """The audit of ``edition`` (``automonitor.data.audit.cached_audit``; memoised on disk per store
    fingerprint), or ``None`` when the edition cannot be audited."""
    from automonitor.data import audit
    from automonitor.errors import InputError

    try:
        return audit.cached_audit(engine_for(url), edition)
    except InputError:
        return None


@st.cache_data(show_spinner=False, max_entries=16)
def load_identical_derived(url: str, ver: tuple) -> dict[str, str]:
    """Derived runs that repeat an input's verdicts (``automonitor.views.identical_derived``)."""
    return views.identical_derived(engine_for(url))


@st.cache_data(show_spinner=False, max_entries=32)
def load_tradeoff(url: str, ver: tuple, options: views.TradeoffOptions) -> views.TradeoffSelection:
    """The Trade-off page's points for ``options`` (:func:`automonitor.views.tradeoff_selection` over the
    report, the runs' statuses, sample sets and identical derived runs), cached per store version and
    options. (The figure itself is built per run: a cached plotly figure lost its click selection events.)"""
    runs = load_runs(url, ver, options.show_ladder)
    statuses = dict(zip(runs["run_id"], runs["status"])) if len(runs) and "status" in runs else {}
    return views.tradeoff_selection(
        load_report(url, ver, options.invalid, ladder=options.show_ladder),
        options,
        sample_sets=load_sample_sets(url, ver),
        statuses=statuses,
        duplicates=load_identical_derived(url, ver),
        reported=load_reported() if options.show_paper else None,
    )
