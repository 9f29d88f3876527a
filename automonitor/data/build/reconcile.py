"""The store side of the build: reconcile the store's build-derived rows with a plan in one transaction
(package doc, "Rebuild policy")."""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Concatenate, ParamSpec, TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.data.build.config import ORIGIN, resolve_raw
from automonitor.data.build.gold_spans import PlannedSpans, sync_spans
from automonitor.data.build import fresh_audits, ladder_runs
from automonitor.data.build.plan_cache import cached_plan
from automonitor.data.build.sample_rows import Plan
from automonitor.data.build.selection import Blocked
from automonitor.data.build.steps import stage
from automonitor.data.errata import errata_in_force
from automonitor.errors import InputError
from automonitor.jsontypes import JSONValue
from automonitor.leases import lease_held_by_other
from automonitor.vocab import LADDER_META_KEYS
from automonitor.data.sources import REGISTRY, SourceResult
from store import session_scope
from store.queries import build as build_queries
from store.queries.locks import release_named_lock, try_named_lock
from store.queries.samples import insert_samples


@dataclass
class _StoreState:
    """What the store holds before a build: the build-derived samples (id -> ``(split, status,
    label_source)``), those the annotation workflow finalized, and the request / response hashes of
    gold test samples the build does not own (user imports)."""

    current: dict[str, tuple[str | None, str, str, str]] = field(default_factory=dict)
    settled: set[str] = field(default_factory=set)
    external: Blocked = field(default_factory=Blocked)
    samples: int = 0  # every sample row, build-derived or not (0: a new store)


def _erratum_key(meta: JSONValue) -> str:
    """The build's marks on a row, the erratum (``meta.erratum``) and the detector ladder's keys
    (``meta.tier``, ``caught_by``, ``false_alarm_by``), as a comparable string (``""``: none)."""
    if not isinstance(meta, dict):
        return ""
    marks = {k: meta[k] for k in ("erratum", *LADDER_META_KEYS) if meta.get(k)}
    return json.dumps(marks, sort_keys=True) if marks else ""


def _placement(row: dict[str, Any]) -> tuple[str | None, str, str, str]:
    """``(split, status, label_source, erratum)`` of a planned row (compared with the store's)."""
    return (row["split"], row["status"], row["label_source"], _erratum_key(row.get("meta")))


def _store_state(session: Session) -> _StoreState:
    """Read :class:`_StoreState` (a build-derived row: a registered source and ``meta.origin ==
    "build"``)."""
    sources = set(REGISTRY)
    state = _StoreState()
    for row in build_queries.sample_states(session):
        state.samples += 1
        meta = row.meta
        if row.source in sources and isinstance(meta, dict) and meta.get("origin") == ORIGIN:
            state.current[row.id] = (row.split, row.status, row.label_source, _erratum_key(meta))
            if "annotation" in meta:  # finalized by the annotation workflow
                state.settled.add(row.id)
        elif row.status == "gold" and row.split == "test":
            state.external.req.add(row.request_hash)
            state.external.resp.add(row.response_hash)
    return state


@dataclass
class _Changes:
    """The sample changes that reconcile the store with a plan: planned rows by id, build rows kept
    as they are (adjudicated or finalized), ids to delete and ids whose split/status/provenance move."""

    planned: dict[str, dict[str, Any]]
    kept: set[str]
    to_delete: list[str]
    to_update: list[str]
    to_mark: list[str] = field(default_factory=list)  # only the erratum (meta.erratum) changes

    @property
    def n_updated(self) -> int:
        """Rows updated: those whose placement moves plus those whose erratum alone changes (each once)."""
        return len(self.to_update) + len(set(self.to_mark) - set(self.to_update))


def _sample_changes(session: Session, state: _StoreState, plan: Plan) -> _Changes:
    """Diff the store's build rows against ``plan``: rows not planned are deleted, rows whose
    ``(split, status, label_source)`` or erratum (``meta.erratum``) differ are updated unless adjudicated
    or finalized."""
    planned = {r["id"]: r for r in plan.rows}
    kept = state.settled | build_queries.adjudicated_ids(session, list(state.current))
    to_delete: list[str] = []
    to_update: list[str] = []
    to_mark: list[str] = []
    for i, have in state.current.items():  # each planned row's placement computed once (a JSON dump of its marks)
        if i not in planned:
            to_delete.append(i)
        elif i not in kept:
            want = _placement(planned[i])
            if have[:3] != want[:3]:
                to_update.append(i)
            if have[3] != want[3]:
                to_mark.append(i)
    return _Changes(planned, kept, to_delete, to_update, to_mark)


def _clear_references(session: Session, affected: list[str], seed: int, force: bool) -> dict[str, int]:
    """Refuse to replace or move referenced samples, or (``force``) delete what references them.

    Returns:
        Rows deleted per table (empty when nothing references ``affected``).
    Raises:
        InputError: some of ``affected`` are referenced and ``force`` is false (field ``--seed``).
    """
    refs = build_queries.referenced(session, affected) if affected else {}
    if not refs:
        return {}
    if not force:
        desc = ", ".join(f"{len(v)} by {k}" for k, v in refs.items())
        last = build_queries.latest_seed(session)
        raise InputError(
            f"building with seed {seed} would replace or move {len(affected)} build samples of the "
            f"current build{f' (seed {last})' if last is not None else ''}, and some are referenced "
            f"({desc}); rerun with --force to delete those runs, assignments, annotations and "
            f"adjudications, or keep the current seed",
            field="--seed",
        )
    doomed = sorted(set().union(*refs.values()))
    live = [
        r for r in build_queries.runs_judging(session, doomed) if lease_held_by_other((r.params or {}).get("lease"))
    ]
    if live:  # never delete a run under its executing runner
        who = ", ".join(f"{r.id} (pid {r.params['lease'].get('pid')} on {r.params['lease'].get('host')})" for r in live)
        raise InputError(
            f"build --force would delete run(s) that are executing now: {who}; cancel them "
            f"(`automonitor runs --cancel RUN`, or Cancel on the Runs page) or wait for them to finish, "
            f"then build again",
            field="--force",
        )
    return build_queries.delete_dependents(session, doomed)


def _edition_changes(
    session: Session, state: _StoreState, plan: Plan, changes: _Changes
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(drop, add)``: the ``(edition, sample_id)`` memberships of build samples to delete and to
    insert (sorted) so that each planned row is in its planned editions; adjudicated / finalized
    samples keep theirs."""
    have = build_queries.edition_memberships(session, list(state.current))
    kept = changes.kept
    want = {(ed, r["id"]) for r in plan.rows for ed in r.get("editions", ()) if r["id"] not in kept}
    deleted = set(changes.to_delete)
    drop = [(ed, sid) for ed, sid in have if sid not in kept and ((ed, sid) not in want or sid in deleted)]
    return drop, sorted(want - have)


#: The phases of the store write (:func:`_apply_changes`), one step each of stage ``store``.
STORE_PHASES = ("editions dropped", "deleted", "updated", "meta", "inserted", "editions added", "gold spans")


def _apply_changes(
    session: Session,
    state: _StoreState,
    plan: Plan,
    changes: _Changes,
    progress: Callable[[str], None] | None = None,
    spans: PlannedSpans | None = None,
) -> dict[str, int]:
    """Write the reconciliation: edition memberships dropped, samples deleted and updated, new rows
    inserted, memberships added, gold spans synced (``spans``: the plan's, when the caller has them; one step
    of stage ``store`` per phase of :data:`STORE_PHASES` on ``progress``). Returns ``inserted``, ``updated``,
    ``deleted``, ``editions`` (memberships dropped + added)."""
    with stage(progress, "store", len(STORE_PHASES)) as step:
        drop_ed, add_ed = _edition_changes(session, state, plan, changes)
        build_queries.drop_edition_memberships(session, drop_ed)
        step(STORE_PHASES[0])
        build_queries.delete_samples(session, changes.to_delete)
        step(STORE_PHASES[1])
        build_queries.update_sample_placement(session, [changes.planned[i] for i in changes.to_update])
        step(STORE_PHASES[2])
        build_queries.update_sample_meta(session, [(i, changes.planned[i]["meta"]) for i in changes.to_mark])
        step(STORE_PHASES[3])
        inserted = insert_samples(session, [r for r in plan.rows if r["id"] not in state.current])
        step(STORE_PHASES[4])
        build_queries.add_edition_memberships(session, add_ed)
        step(STORE_PHASES[5])
        synced = sync_spans(session, plan.rows, changes.kept, spans)
        step(STORE_PHASES[6])
    return {
        "gold_spans": synced["inserted"] + synced["deleted"],
        "inserted": inserted,
        "updated": changes.n_updated,
        "deleted": len(changes.to_delete),
        "editions": len(drop_ed) + len(add_ed),
    }


BUILD_LOCK = "build"  # the store-wide lock name: one build at a time per store
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _serialised(fn: Callable[Concatenate[Engine, _P], _R]) -> Callable[Concatenate[Engine, _P], _R]:
    """Run ``fn(engine, ...)`` under the store-wide build lock (:func:`store.queries.locks.try_named_lock`:
    a PostgreSQL advisory lock, a lock file beside a SQLite database), so two builds never interleave.

    Raises:
        InputError: another build is running on this store (field ``build``; the CLI exits 2).
    """

    @functools.wraps(fn)
    def locked(engine: Engine, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        lock = try_named_lock(engine, BUILD_LOCK)
        if lock is None:
            raise InputError(
                "another build is running on this store; wait for it to finish, then build again", field="build"
            )
        try:
            return fn(engine, *args, **kwargs)
        finally:
            release_named_lock(lock)

    return locked


@_serialised
def build(
    engine: Engine,
    raw: str | Path | None = None,
    seed: int = 0,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    loaded: dict[str, SourceResult] | None = None,
    errata_file: str | Path | None = None,
    hard: bool = True,
    refresh_ladder: bool = False,
    audits: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Build (or reconcile) the benchmark in the store at ``engine`` from the raw dir, in one
    transaction (see the module doc for composition and rebuild policy), under the store-wide build lock
    (:func:`_serialised`).

    ``loaded``, ``errata_file``, ``hard``, ``refresh_ladder``: see :func:`plan_build` (every build applies the errata in force:
    the shipped ones, ``errata_file`` or the package's, and those entered into this store;
    ``hard=False`` leaves edition ``hard`` empty in the store). Without ``loaded`` the plan goes through its
    disk cache (:mod:`automonitor.data.build.plan_cache`: unchanged raw data, seed, errata and code read the
    plan back instead of making it).

    ``audits``: editions whose audit the store keeps once the build is written
    (:func:`automonitor.data.audit.cache.keep_audits`; the CLI passes ``paper`` and its ``--edition``). In a
    store that held no sample, an audit left by an earlier such build of the same plan is kept in the build's
    transaction instead of computed (:mod:`automonitor.data.build.fresh_audits`).

    The detector ladder's runs (:mod:`automonitor.data.build.ladder_runs`) are reconciled in the same
    transaction: stale ones deleted before the samples change, new ones written after (all of them with
    ``refresh_ladder``).

    Returns:
        The plan report plus ``inserted``, ``updated``, ``deleted`` (sample rows), ``unchanged``
        (bool), ``dependents_deleted`` (with ``force``), ``ladder_runs`` (``{"runs": {detector: run_id},
        "written", "deleted"}``) and ``seconds`` (wall time).
    Raises:
        InputError: raw dir missing or malformed, a reseed would change samples that predictions or
            annotations reference and ``force`` is false, or another build is running on this store
            (field ``build``). Nothing is changed then.
    """
    t0 = time.perf_counter()
    raw_path = resolve_raw(raw)
    with session_scope(engine) as session:
        state = _store_state(session)
        external = (state.external.req, state.external.resp)
        errata = errata_in_force(session, errata_file)
        spans: PlannedSpans | None = None
        key: str | None = None
        if loaded is None:
            got = cached_plan(
                raw_path,
                seed,
                external_test=external,
                progress=progress,
                errata=errata,
                hard=hard,
                refresh_ladder=refresh_ladder,
            )
            plan, spans, key = got.plan, got.spans, got.key
        else:
            from automonitor.data.build.plan import plan_build  # its modules (ladder, edition hard) load here

            plan = plan_build(
                raw_path,
                seed,
                external_test=external,
                progress=progress,
                loaded=loaded,
                errata=errata,
                hard=hard,
                refresh_ladder=refresh_ladder,
            )
        changes = _sample_changes(session, state, plan)
        affected = changes.to_delete + changes.to_update
        # the build's own runs (the ladder's) go first: they never block a reseed, they are replaced with it
        to_write, retired = ladder_runs.retire_stale(session, plan.ladder_runs, affected, refresh=refresh_ladder)
        dependents = _clear_references(session, affected, seed, force)
        if progress:
            new = sum(1 for r in plan.rows if r["id"] not in state.current)
            progress(
                f"store: writing {new:,} new sample rows, {changes.n_updated:,} updated, "
                f"{len(changes.to_delete):,} deleted"
            )
        t1 = time.perf_counter()
        counts = _apply_changes(session, state, plan, changes, progress, spans)
        if progress:
            progress(
                f"store: {counts['inserted']:,} inserted, {counts['updated']:,} updated, {counts['deleted']:,} deleted "
                f"({time.perf_counter() - t1:.1f} s)"
            )
        written = ladder_runs.write_runs(session, to_write)
        changed = any(counts.values()) or bool(written or retired)
        last = build_queries.latest_seed(session)
        report = dict(plan.report)
        report.update(
            {
                "inserted": counts["inserted"],
                "updated": counts["updated"],
                "deleted": counts["deleted"],
                "unchanged": not changed,
                "dependents_deleted": dependents,
                "kept_adjudicated": len([i for i in state.current if i in changes.kept]),
                "gold_spans_changed": counts["gold_spans"],
                "ladder_runs": {
                    "runs": {r.detector: r.run_id for r in plan.ladder_runs},
                    "written": written,
                    "deleted": retired,  # rewritten runs count here and in written
                },
            }
        )
        if changed or last != seed:
            build_queries.log_build(session, seed, {k: v for k, v in report.items() if k != "seconds"})
        fresh = fresh_audits.keep_from_cache(session, audits, key) if audits and key and not state.samples else {}
    if audits:
        from automonitor.data.audit.cache import keep_audits

        keep_audits(engine, audits, progress=progress)
        if key and fresh:
            fresh_audits.remember(engine, fresh, key)
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report
