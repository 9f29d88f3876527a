"""The build plan through a disk cache: a rebuild (or a build into a new store) from unchanged inputs reads the
plan it made before instead of reading and gating every source, finding the problem families, selecting,
running the ladder and the hard edition and deriving the gold spans again (~20 s of CPU on the full raw data
with every other cache warm).

One JSON file per key under ``<cache home>/plan/`` (:func:`automonitor.data.cache_home.cache_home`). The key
(:func:`plan_key`) hashes everything a plan is a function of: the bytes and relative path of every file under
the raw dir and the raw dir as given (the report names it), the seed, ``hard``, the external test hashes, the
errata in force (their lines), the readings file, every file of the ``automonitor`` package (the sources,
gates, families, ladder, filter, certificate and spans code, the shipped errata and readings), the Python
version and the installed distributions (``name-version.dist-info``), and the ``AUTOMONITOR_*`` settings the
loaders read. A change of any of them is another key, so the plan is recomputed; ``build --refresh-ladder``
always recomputes (and rewrites the entry). Only the :data:`KEEP` most recently used entries are kept (an
entry holds every planned text: ~100 MB on the full raw data).

A plan read back is the plan a warm build computes: the ladder and the hard edition say ``cached`` (their
results come from a cache), the ladder runs' provenance says ``computed: cache``, and the hard edition's
``seconds`` is 0. The stage lines that carry counts (per source, gates, selection, ladder, hard) are replayed
on ``progress`` with ``(cached)`` in place of their timings.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from automonitor.data.build.ladder_runs import LadderRun
from automonitor.data.build.sample_rows import Plan
from automonitor.data.cache_home import cache_home, write_text_entry
from automonitor.data.errata import Erratum

if TYPE_CHECKING:
    from automonitor.data.build.gold_spans import PlannedSpans

__all__ = ["KEEP", "PLAN_CACHE_VERSION", "CachedPlan", "cached_plan", "plan_cache_dir", "plan_key"]

PLAN_CACHE_VERSION = 1
KEEP = 3  # plan entries kept (most recently used first)
#: the settings (beside the raw dir, the errata and the readings, hashed by content) that a plan reads
_SETTINGS = ("AUTOMONITOR_MAX_IMPORT_MB",)
_PACKAGE = Path(__file__).resolve().parents[2]  # the automonitor package
_TIMING = re.compile(r" \(\d+(?:\.\d+)? s\)$")


def plan_cache_dir() -> Path:
    """``<cache home>/plan`` (not created here)."""
    return cache_home() / "plan"


def files_digest(root: Path, skip: tuple[str, ...] = ()) -> str:
    """SHA-256 (hex) of every file under ``root``: relative path and bytes, in path order (directories named
    in ``skip`` left out)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not p.is_file():
                continue
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _environment_digest() -> str:
    """SHA-256 (hex) of the ``automonitor`` package's files, the Python version and the installed
    distributions (their ``.dist-info`` directory names carry the versions)."""
    dists = sorted(d for sp in sys.path if sp and os.path.isdir(sp) for d in os.listdir(sp) if d.endswith(".dist-info"))
    doc = [files_digest(_PACKAGE, skip=("__pycache__",)), sys.version, dists]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


def plan_key(
    raw: Path,
    seed: int,
    *,
    external_test: tuple[set[str], set[str]] | None,
    errata: list[Erratum],
    hard: bool,
) -> str:
    """The cache key (hex SHA-256) of :func:`~automonitor.data.build.plan.plan_build` on these arguments (module
    doc: what it hashes). Reads every file under ``raw`` (~0.3 s of CPU for the full raw data)."""
    from automonitor.data.readings import readings_path

    ext_req, ext_resp = external_test or (set(), set())
    readings = readings_path()
    doc = [
        PLAN_CACHE_VERSION,
        str(raw),
        files_digest(Path(raw)),
        int(seed),
        bool(hard),
        sorted(ext_req),
        sorted(ext_resp),
        [e.line() for e in errata],
        str(readings),
        hashlib.sha256(readings.read_bytes()).hexdigest() if hard and readings.is_file() else None,
        {k: os.environ.get(k) for k in _SETTINGS},
        _environment_digest(),
    ]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


class CachedPlan:
    """A plan with its gold spans (:func:`~automonitor.data.build.gold_spans.planned_spans`), its cache key and
    whether it was read from the cache (``hit``)."""

    def __init__(self, plan: Plan, spans: PlannedSpans, key: str, hit: bool) -> None:
        self.plan, self.spans, self.key, self.hit = plan, spans, key, hit


def _to_doc(plan: Plan, spans: PlannedSpans, lines: list[str]) -> dict[str, object]:
    return {
        "version": PLAN_CACHE_VERSION,
        "rows": plan.rows,
        "report": plan.report,
        "ladder_runs": [
            {k: getattr(r, k) for k in ("run_id", "detector", "monitor", "fingerprint", "params", "scores")}
            for r in plan.ladder_runs
        ],
        "spans": spans,
        "lines": lines,
    }


def _from_doc(doc: dict[str, Any]) -> tuple[Plan, PlannedSpans, list[str]]:
    rows = doc["rows"]
    for r in rows:
        if "editions" in r:
            r["editions"] = tuple(r["editions"])
    runs = [LadderRun(**{**r, "scores": [(str(i), float(s)) for i, s in r["scores"]]}) for r in doc["ladder_runs"]]
    return Plan(rows=rows, report=doc["report"], ladder_runs=runs), doc["spans"], doc["lines"]


def _as_warm(plan: Plan) -> None:
    """Make a plan read back say what a warm build says (module doc)."""
    if "ladder" in plan.report:
        plan.report["ladder"]["cached"] = True
    if "hard" in plan.report:
        plan.report["hard"]["cached"] = True
        plan.report["hard"]["seconds"] = 0.0
    for r in plan.ladder_runs:
        prov = r.params.get("ladder")
        if isinstance(prov, dict):
            prov["computed"] = "cache"


def evict(keep: Path) -> None:
    """Delete all but the :data:`KEEP` most recently used plan entries (``keep`` is one of them)."""
    try:
        entries = sorted(plan_cache_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in [e for e in entries if e != keep][KEEP - 1 :]:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def _read(path: Path) -> tuple[Plan, PlannedSpans, list[str]] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("version") != PLAN_CACHE_VERSION:
            return None
        out = _from_doc(doc)
        os.utime(path)  # most recently used (eviction)
        return out
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def cached_plan(
    raw: Path,
    seed: int = 0,
    *,
    external_test: tuple[set[str], set[str]] | None = None,
    progress: Callable[[str], None] | None = None,
    errata: list[Erratum],
    hard: bool = True,
    refresh_ladder: bool = False,
) -> CachedPlan:
    """:func:`~automonitor.data.build.plan.plan_build` (same arguments; ``errata`` the errata in force) and the
    plan's gold spans, through the disk cache (module doc). ``refresh_ladder`` recomputes and rewrites the
    entry. A corrupt entry is recomputed; an unwritable directory only disables the cache; a plan that would
    not read back equal (a value JSON does not keep) is not written.

    Raises:
        the errors of :func:`~automonitor.data.build.plan.plan_build`.
    """
    from automonitor.data.build.gold_spans import planned_spans

    say = progress or (lambda _msg: None)
    key = plan_key(raw, seed, external_test=external_test, errata=errata, hard=hard)
    path = plan_cache_dir() / f"{key}.json"
    if not refresh_ladder and path.is_file():
        t0 = time.perf_counter()
        got = _read(path)
        if got is not None:
            plan, spans, recorded = got
            say(
                f"plan: read from the cache, raw data, seed, errata and code unchanged ({time.perf_counter() - t0:.1f} s)"
            )
            for line in recorded:  # the stage lines that carry counts, timings replaced by "(cached)"
                if _TIMING.search(line):
                    say(_TIMING.sub(" (cached)", line))
                elif line.startswith("selection: "):
                    say(line)
            _as_warm(plan)
            return CachedPlan(plan, spans, key, True)
    lines: list[str] = []

    class _Recorder:
        """``progress`` that also records its lines; it has a :class:`StageProgress`'s stage methods exactly
        when ``progress`` has them."""

        def __call__(self, msg: str) -> None:
            lines.append(msg)
            if progress is not None:
                progress(msg)

        def __getattr__(self, name: str) -> object:
            return getattr(progress, name)

    rec = _Recorder()
    from automonitor.data.build.plan import plan_build  # the plan's modules (ladder, edition hard) on a miss only

    plan = plan_build(
        raw, seed, external_test=external_test, progress=rec, errata=errata, hard=hard, refresh_ladder=refresh_ladder
    )
    spans = planned_spans(plan.rows)
    doc = _to_doc(plan, spans, lines)
    text = json.dumps(doc)
    back = _from_doc(json.loads(text))
    if back[0].rows == plan.rows and back[0].ladder_runs == plan.ladder_runs and back[1] == spans:
        if json.loads(json.dumps(plan.report)) == plan.report:
            write_text_entry(path, text)
            evict(path)
    return CachedPlan(plan, spans, key, False)
