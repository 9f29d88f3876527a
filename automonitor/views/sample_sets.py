"""Which sample set each run judged (edition, size, fingerprint), the sample-state part of the app's
cache key, and run archiving. The SQL is in ``store.queries.workbench``."""

from __future__ import annotations

import hashlib
from typing import Iterable, Mapping, Sequence, TypedDict

import pandas as pd
from sqlalchemy.engine import Connection, Engine

from automonitor import vocab
from automonitor.vocab import scored_edition
from automonitor.analysis import predictions_frame, runs_frame


def sample_set_digest(sample_ids: Iterable[str]) -> str:
    """Fingerprint of a set of sample ids: first 10 hex digits of sha256 over the sorted, newline-joined
    ids (order and duplicates do not matter)."""
    ids = sorted(set(map(str, sample_ids)))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:10]


#: what a run's sample set is called when its samples belong to no edition (a store of imported pairs): the
#: edition the report scores such a run on (``report --json`` ``edition``, ``runs --json`` ``scored_edition``),
#: in the words ``stats`` and ``report`` use for a store that was never built
NO_EDITION = "paper (no build: every gold test sample)"


class SampleSetRow(TypedDict):
    """One run's sample set (:func:`sample_set_row`; a row of :func:`run_sample_sets`)."""

    run_id: str
    edition: str
    edition_recorded: bool
    edition_inferred: bool
    n_samples: int
    fingerprint: str
    sample_set: str


def sample_set_row(
    run_id: str,
    recorded_edition: str | None,
    ids: Iterable[str],
    in_edition: bool = True,
    fingerprint: str | None = None,
) -> SampleSetRow:
    """One :func:`run_sample_sets` row from a run's recorded edition, the ids of the samples it judged and
    whether the run's samples belong to a built edition (``in_edition``): the edition it is scored on
    (:func:`automonitor.vocab.scored_edition`: the recorded one, else ``paper``, as the report scores it),
    whether it was recorded or not (``edition_inferred``: the rule gave it), the distinct sample count, the
    :func:`sample_set_digest` of the ids and the ``sample_set`` text, which names :data:`NO_EDITION` (``paper``
    as a store never built reads it) instead of ``paper`` when an unrecorded run's samples are in no edition
    (imported pairs that no build made members of one). ``fingerprint``: the ids' digest when the caller has it
    (one per distinct set)."""
    edition = scored_edition(recorded_edition)
    named = recorded_edition is not None or in_edition
    distinct = set(ids)
    fp = fingerprint or sample_set_digest(distinct)
    n = len(distinct)
    return {
        "run_id": run_id,
        "edition": edition,
        "edition_recorded": recorded_edition is not None,
        "edition_inferred": recorded_edition is None and named,
        "n_samples": n,
        "fingerprint": fp,
        "sample_set": f"{edition if named else NO_EDITION} · {n:,} samples · {fp}",
    }


def sample_set_caption(row: Mapping[str, object]) -> str:
    """The line that names a run's sample set (a :func:`run_sample_sets` row): ``"Measured on sample set
    <sample_set>"``, plus ``" (edition inferred)"`` when the edition was not recorded but inferred. Plain
    text (the caller escapes it for Markdown)."""
    return f"Measured on sample set {row['sample_set']}" + (" (edition inferred)" if row["edition_inferred"] else "")


def run_sample_sets(
    engine: Engine,
    run_ids: Sequence[str] | None = None,
    *,
    preds: pd.DataFrame | None = None,
    preds_runs: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Which sample set every run judged (its test samples; the controls slice is left out): one row per
    run with ``run_id, edition, edition_recorded (bool), edition_inferred (bool), n_samples, fingerprint,
    sample_set`` (``"<edition> · <n> samples · <fingerprint>"``; :func:`sample_set_row`).

    ``edition`` is the edition the report scores the run on (:func:`automonitor.vocab.scored_edition`:
    ``run.edition`` when recorded, else ``paper``; never read from the samples it judged: an imported file that
    holds an adjudicated ``verified``-only sample is scored on ``paper``, that sample left out). The
    ``sample_set`` text of an unrecorded run none of whose judged samples is a member of an edition (a store of
    imported pairs) names :data:`NO_EDITION` instead (``edition_inferred`` False); a run that judged nothing in
    a built store stays ``paper``.
    Runs without predictions get ``n_samples`` 0 and the fingerprint of the empty set.

    ``preds``: the light prediction frame of exactly the runs ``preds_runs`` (default ``run_ids``; repeat 0:
    :func:`automonitor.analysis.from_store.light_predictions`), when the caller has read it: their samples are
    taken from it and only the other repeats' rows read (the HTML report: every prediction was read once already;
    the Trade-off page: the report's runs read once for the report); the samples of the other runs of the result
    (e.g. the detector ladder's, left out of the report) are read from the store.
    """
    from store.queries import audit as qa
    from store.queries import workbench as q

    with engine.connect() as c:
        runs = q.run_editions(c, run_ids)
        members = set().union(*(qa.edition_member_ids(c, e) for e in vocab.EDITIONS))
        covered = preds_runs if preds_runs is not None else run_ids
        if preds is not None and covered is not None:
            sets = _judged_from_frame(c, covered, preds)
            done = set(covered)
            rest = [rid for rid, _ in runs if rid not in done]
            if rest:
                sets.update(_judged(q.judged_test_samples(c, rest)))
        else:
            sets = _judged(q.judged_test_samples(c, run_ids))
    digests = {s: sample_set_digest(s) for s in set(sets.values())}  # one per distinct set: most runs share one
    rows = [
        sample_set_row(
            rid,
            edition,
            sets.get(rid, ()),
            in_edition=bool(members) and (rid not in sets or not members.isdisjoint(sets[rid])),
            fingerprint=digests[sets[rid]] if rid in sets else None,
        )
        for rid, edition in runs
    ]
    return pd.DataFrame(rows, columns=list(SampleSetRow.__annotations__))  # the columns in the row's order


def _judged(rows: Iterable[tuple[str, str, str | None]]) -> dict[str, frozenset[str]]:
    """``{run_id: the test samples it judged}`` from :func:`store.queries.workbench.judged_test_samples` rows
    (grouped in plain Python: ~90,000 rows for 30 runs of a paper-sized set)."""
    ids: dict[str, set[str]] = {}
    for rid, sid, _source in rows:
        ids.setdefault(rid, set()).add(sid)
    return {rid: frozenset(v) for rid, v in ids.items()}


def _judged_from_frame(conn: Connection, run_ids: Sequence[str], preds: pd.DataFrame) -> dict[str, frozenset[str]]:
    """:func:`_judged` of the runs ``run_ids`` from their repeat-0 predictions ``preds`` (a light prediction
    frame) and the rows of their other repeats: which distinct samples are test samples looked up once, the frame
    grouped by run in pandas."""
    from store.queries import workbench as q

    extra = q.other_repeat_samples(conn, run_ids)
    source = q.test_sample_sources(conn, [*pd.unique(preds["sample_id"]).tolist(), *(s for _, s in extra)])
    test = preds.loc[preds["sample_id"].isin(list(source)), ["run_id", "sample_id"]]
    samples = test["sample_id"].to_numpy()
    sets = {str(rid): frozenset(samples[i].tolist()) for rid, i in test.groupby("run_id", sort=False).indices.items()}
    for rid, sid in extra:
        if sid in source:
            sets[rid] = sets.get(rid, frozenset()) | {sid}
    return sets


def set_archived(engine: Engine, run_id: str, archived: bool = True) -> bool:
    """Archive (hide from the trade-off plot and the run list by default) or unarchive a run; reversible,
    nothing else changes. Returns the previous state. Raises :class:`NotFound` for an unknown run id."""
    from store import session_scope
    from store.queries.workbench import set_run_archived

    with session_scope(engine) as s:
        return set_run_archived(s, run_id, archived)


def identical_derived(engine: Engine) -> dict[str, str]:
    """Derived runs whose verdicts repeat one of their inputs' exactly: ``{derived run id:
    input run id}``. Two runs are identical when they judged the same samples with the same outcome on
    every one (repeat 0), e.g. a cascade that escalates every sample. Input ids come from the derived
    run's ``params['recipe']['inputs']``; an input that no longer exists is skipped."""
    runs = runs_frame(engine)
    if runs.empty:
        return {}
    known = set(runs["run_id"])
    wanted: dict[str, list[str]] = {}
    for r in runs.itertuples():
        params = r.params if isinstance(r.params, dict) else {}
        recipe = params.get("recipe") or {}
        inputs = [str(x) for x in (recipe.get("inputs") or []) if str(x) in known]
        if inputs:
            wanted[str(r.run_id)] = inputs
    if not wanted:
        return {}
    ids = sorted(set(wanted) | {i for v in wanted.values() for i in v})
    preds = predictions_frame(engine, ids)
    verdicts = {
        rid: frozenset(zip(g["sample_id"], g["outcome"].fillna("pending"))) for rid, g in preds.groupby("run_id")
    }
    out: dict[str, str] = {}
    for rid, inputs in wanted.items():
        mine = verdicts.get(rid)
        same = next((i for i in inputs if mine and verdicts.get(i) == mine), None)
        if same is not None:
            out[rid] = same
    return out
