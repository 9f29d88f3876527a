"""The Runs page's data: the run history frame (the rows ``automonitor runs`` prints, as a frame) and
the table shown of it, one run's live progress, durations as text, and the Generation page's tables."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypedDict

import pandas as pd
from sqlalchemy.engine import Engine

from automonitor import vocab
from automonitor.leases import pid_alive
from automonitor.timestamps import utcnow
from automonitor.escaping import md_escape
from automonitor.views.cells import MISSING, display_frame

if TYPE_CHECKING:
    from automonitor.runs.generation.summary import GenerationListing
    from store.queries.rowtypes import RunRow

#: Columns of :func:`runs_frame`, in order.
RUNS_FRAME_COLUMNS: list[str] = [
    "run_id",
    "monitor",
    "template",
    "kind",
    "status",
    "n",
    "done",
    *vocab.OUTCOMES,
    "unscored",
    "api_calls",
    "cache_hits",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "created_at",
    "started_at",
    "finished_at",
    "duration_s",
    "limit",
    "error_msg",
    "edition",
    "archived",
    "process_alive",
]


def _timestamp(value: str | None) -> datetime | None:
    """An ISO-8601 text from ``list_runs`` as a ``datetime`` (``None`` stays ``None``)."""
    return datetime.fromisoformat(value) if value else None


def history_row(run: RunRow, now: datetime) -> dict[str, object]:
    """One :func:`runs_frame` row from one ``store.queries.run_list.list_runs`` entry.

    ``done`` counts the outcomes other than ``pending``; ``n`` is the run's planned size, or ``done +
    pending`` when it has none; ``unscored`` sums the :data:`automonitor.vocab.UNSCORED` outcomes;
    ``duration_s`` runs from ``started_at`` to ``finished_at`` (to ``now`` while unfinished; ``None``
    when never started). Timestamps become ``datetime``; ``cost_usd`` is a float in US dollars.
    """
    counts = run["counts"]
    started, finished = _timestamp(run["started_at"]), _timestamp(run["finished_at"])
    done = sum(v for k, v in counts.items() if k != "pending")
    return {
        "run_id": run["run_id"],
        "monitor": run["monitor"],
        "template": run["template"],
        "kind": run["kind"],
        "status": run["status"],
        "n": int(run["n"] or (done + counts.get("pending", 0))),
        "done": int(done),
        **{outcome: counts.get(outcome, 0) for outcome in vocab.OUTCOMES},
        "unscored": sum(counts.get(o, 0) for o in vocab.UNSCORED),
        "api_calls": run["api_calls"],
        "cache_hits": run["cache_hits"],
        "tokens_in": run["tokens_in"],
        "tokens_out": run["tokens_out"],
        "cost_usd": float(run["cost_usd"] or 0.0),
        "created_at": _timestamp(run["created_at"]),
        "started_at": started,
        "finished_at": finished,
        "duration_s": ((finished or now) - started).total_seconds() if started else None,
        "limit": run["limit"],
        "error_msg": run["error"],
        "edition": run.get("edition"),
        "archived": bool(run.get("archived")),
        # a running run's process: alive, dead (killed or crashed: the run is only marked running) or None
        "process_alive": run.get("process_alive"),
    }


def runs_frame(engine: Engine, *, include_ladder: bool = False) -> pd.DataFrame:
    """Run history, newest first: one row per run with the :data:`RUNS_FRAME_COLUMNS`
    ``run_id, monitor, template, kind, status, n, done, <outcomes>, unscored, api_calls, cache_hits,
    tokens_in, tokens_out, cost_usd, created_at, started_at, finished_at, duration_s, limit, error_msg,
    edition, archived, process_alive`` built by :func:`history_row` from ``store.queries.run_list.list_runs``, the
    same history ``automonitor runs`` prints. ``process_alive`` (:func:`automonitor.runs.liveness.with_liveness`, as
    of this read): for a ``running`` run whether a live process holds its lease (``False``: it was killed or
    crashed, the run is only marked running), else ``None``. (``automonitor.analysis.runs_frame`` is another frame: the runs
    an analysis reads, oldest first, with their parameters.)

    ``done`` counts predictions with an outcome; ``duration_s`` is ``finished_at - started_at`` in
    seconds (until now for a running run; ``None`` when never started; ``started_at`` is the first session's,
    so a ``--resume`` or ``--retry-errors`` session a while later adds the idle gap). Costs are US dollars. The
    detector ladder's runs (kind ``ladder``) are left out unless ``include_ladder``.
    """
    from store.queries.run_list import list_runs

    from automonitor.runs.liveness import with_liveness

    with engine.connect() as c:  # Core (store.queries.run_list): the Runs and Trade-off pages import no ORM for it
        runs = with_liveness(list_runs(c, include_ladder=include_ladder))
    now = utcnow()
    return pd.DataFrame([history_row(r, now) for r in runs], columns=RUNS_FRAME_COLUMNS)


def format_duration(seconds: float | None) -> str:
    """``None`` (or NaN) -> :data:`~automonitor.views.cells.MISSING`; else ``"12.3 s"``, ``"4 min 05 s"``
    or ``"2 h 03 min"``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return MISSING
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


#: Columns of the Runs page's history table (:func:`history_table`), in order: status and progress
#: first, visible without scrolling the table sideways at 1280 px.
HISTORY_COLUMNS: list[str] = [
    "status",
    "progress",
    "run_id",
    "monitor",
    "template",
    "done",
    "n",
    "unscored",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "duration",
    *vocab.OUTCOMES,
    "api_calls",
    "cache_hits",
    "created_at",
    "kind",
    "edition",
    "archived",
]


#: what a run's status reads when no live process holds a ``running`` run (``automonitor runs`` says the same)
NO_LIVE_PROCESS = "no live process"


def status_text(status: str, process_alive: object = None) -> str:
    """A run's status as the pages and ``automonitor runs`` show it: ``running (no live process)`` for a running
    run whose process died (``process_alive`` False: killed or crashed; ``run --resume`` takes it over), else the
    status itself."""
    # a frame's column holds None, bool or numpy.bool_ (NaN where pandas filled one in): only a false value is dead
    dead = process_alive is not None and not isinstance(process_alive, float) and not bool(process_alive)
    return f"{status} ({NO_LIVE_PROCESS})" if status == "running" and dead else str(status)


def no_live_process(status: str, process_alive: object = None) -> bool:
    """Whether a run is marked ``running`` but its process is gone (killed, crashed): :func:`status_text` words it
    ``running (no live process)``; nothing moves it on until ``run --resume`` takes it over."""
    return status_text(status, process_alive) != str(status)


def resume_advice(run_id: str) -> str:
    """Markdown for the Runs page's box of a run with :func:`no_live_process`, above its Cancel button: no process
    is judging it, the samples judged are kept, the command that goes on from where it stopped (or Cancel), with the run's
    id (in a code span when it is plain ``[A-Za-z0-9_.:-]``; markdown-escaped outside one otherwise)."""
    rid = str(run_id)
    cmd = (
        f"`automonitor run --resume {rid}`"
        if re.fullmatch(r"[A-Za-z0-9_.:-]+", rid)
        else f"`automonitor run --resume` {md_escape(rid)}"
    )
    return (
        "No process is judging this run (it was killed or crashed; the samples judged are kept): "
        f"{cmd} goes on from where it stopped; Cancel ends it here."
    )


def history_table(history: pd.DataFrame) -> pd.DataFrame:
    """The Runs page's history table from :func:`runs_frame` rows: :data:`HISTORY_COLUMNS` with
    ``progress`` = done / n in [0, 1] (0 when ``n`` is 0) and ``duration`` as text
    (:func:`format_duration`), ``status`` as :func:`status_text` (``running (no live process)``); no missing cell (a run without a recorded edition or token counts shows
    :data:`~automonitor.views.cells.MISSING`). Rows keep their order."""
    h = history.copy()
    h["status"] = [status_text(s_, a) for s_, a in zip(h["status"], h.get("process_alive", [None] * len(h)))]
    h["duration"] = [format_duration(x) for x in h["duration_s"]]
    h["progress"] = [(min(1.0, d / n) if n else 0.0) for d, n in zip(h["done"], h["n"])]
    return display_frame(h.reindex(columns=HISTORY_COLUMNS))


#: Columns of :func:`generation_list_rows`, in order: what ``automonitor generate list`` prints for each
#: generation run (one tab-separated line, :func:`generation_list_line`) and the first columns of the
#: Generation page's table of runs (:func:`generation_stats_frame`).
GENERATION_LIST_COLUMNS: list[str] = [
    "generation_id",
    "status",
    "kind",
    "generator",
    "source",
    "prompts",
    "kept",
    "candidates_added",
    "dropped",
    "started_at",
    "finished_at",
]


class GenerationListRow(TypedDict):
    """One generation run as listed (:func:`generation_list_rows`): the :data:`GENERATION_LIST_COLUMNS`."""

    generation_id: str
    status: str
    kind: str | None
    generator: str | None
    source: str | None
    prompts: int
    kept: int
    candidates_added: int
    dropped: int
    started_at: str | None
    finished_at: str | None


def generation_list_rows(listings: Sequence[GenerationListing]) -> list[GenerationListRow]:
    """The generation runs as ``automonitor generate list`` and the Generation page list them, one dict per
    run (``list_generations`` entries, newest first; order kept) with the :data:`GENERATION_LIST_COLUMNS`:
    id, status, recipe (``kind``), generator, source, prompts, kept, candidate pairs added, ``dropped`` (the
    items dropped, all reasons together), ``started_at`` and ``finished_at`` (ISO 8601 text as stored,
    ``None`` for a run not started or not ended yet). Plain values, not escaped."""
    return [
        {
            "generation_id": r["generation_id"],
            "status": r["status"],
            "kind": r["kind"],
            "generator": r["generator"],
            "source": r["source"],
            "prompts": int(r["prompts"]),
            "kept": int(r["kept"]),
            "candidates_added": int(r["candidates_added"]),
            "dropped": sum(int(v) for v in r["dropped"].values()),
            "started_at": r["started_at"],
            "finished_at": r["finished_at"],
        }
        for r in listings
    ]


def generation_list_line(row: GenerationListRow) -> str:
    """One :func:`generation_list_rows` row as ``automonitor generate list`` prints it: tab-separated id,
    status, recipe, generator, source, ``N prompts``, ``N kept``, ``N added`` (the line's first eight fields
    as before), then ``N dropped``, ``started TIME`` and ``finished TIME`` (``-`` for a missing value)."""

    def text(value: object) -> str:
        return "-" if value is None or value == "" else str(value)

    return "\t".join(
        [
            *(text(row[k]) for k in ("generation_id", "status", "kind", "generator", "source")),
            f"{row['prompts']} prompts",
            f"{row['kept']} kept",
            f"{row['candidates_added']} added",
            f"{row['dropped']} dropped",
            f"started {text(row['started_at'])}",
            f"finished {text(row['finished_at'])}",
        ]
    )


def generation_stats_frame(rows: Sequence[GenerationListing]) -> pd.DataFrame:
    """The Generation page's table of generation runs, one row per run (``list_generations`` entries,
    newest first): the :data:`GENERATION_LIST_COLUMNS` of :func:`generation_list_rows` (the rows ``automonitor
    generate list`` prints), then the filter statistics: cue or incentive, ``kept_rate`` (kept / prompts),
    one ``dropped: REASON`` column per drop reason, calls, cache hits, cost, creation time. No missing cell
    (a run with no prompt yet has no kept rate, one not started or not ended no time:
    :data:`~automonitor.views.cells.MISSING`, a kept-rate column then text with percentages)."""
    reasons = sorted({k for r in rows for k in r["dropped"]})
    out = [
        {
            **listed,
            "cue/incentive": r["cue"] or r["incentive"],
            "kept_rate": (r["kept"] / r["prompts"]) if r["prompts"] else None,
            **{f"dropped: {k}": r["dropped"].get(k, 0) for k in reasons},
            "calls": r["calls"],
            "cache_hits": r["cache_hits"],
            "cost_usd": r["cost_usd"],
            "created_at": r.get("created_at"),
        }
        for r, listed in zip(rows, generation_list_rows(rows), strict=True)
    ]
    return display_frame(out, {"kept_rate": ".1%"})


def generation_steps_frame(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The filter steps of one generation run (a ``list_generations`` entry): ``step, in, out,
    kept / in`` (:data:`~automonitor.views.cells.MISSING` for a step nothing entered, the column then
    text with percentages) and ``dropped`` (``reason: n, ...``)."""
    rows = [
        {
            "step": x["step"],
            "in": x["in"],
            "out": x["out"],
            "kept / in": (x["out"] / x["in"]) if x["in"] else None,
            "dropped": ", ".join(f"{k}: {v}" for k, v in x["dropped"].items()),
        }
        for x in summary.get("steps") or []
    ]
    return display_frame(
        pd.DataFrame(rows, columns=["step", "in", "out", "kept / in", "dropped"]), {"kept / in": ".1%"}
    )


#: The log ``make demo`` writes its background phase to (transfer table, ``local`` install, LLM runs).
DEMO_LOG = "demo-llm.log"
#: The pid of that background phase (the ``make demo-background`` process) on its first line and, on its
#: second, the store it fills (:func:`store.engine.store_identity`: no password), written beside the log by
#: ``scripts/demo_runs.sh start-background`` (what ``make demo`` runs).
DEMO_PID = "demo-llm.pid"
#: A background log written to within this many seconds counts as a phase still running.
DEMO_LOG_FRESH_S = 180.0


def _demo_pid_file(root: Path) -> tuple[int | None, str | None]:
    """The pid and the store identity :data:`DEMO_PID` under ``root`` holds; ``None`` for what it lacks or
    is unreadable (no file; a pid file written before it recorded its store has no second line)."""
    try:
        lines = (root / DEMO_PID).read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return None, None
    try:
        pid = int(lines[0].strip()) if lines else None
    except ValueError:
        pid = None
    store = lines[1].strip() if len(lines) > 1 and lines[1].strip() else None
    return pid, store


def _demo_not_shown(root: Path, store: str | None) -> bool:
    """Whether the pid file under ``root`` rules the background phase out for the store ``store`` (a URL;
    ``None``: the one ``AUTOMONITOR_DB`` names): its process is no longer alive on this host (killed, or
    ended without its end line), or it fills another store than that one. ``False`` when the file does not
    say (no readable pid: the log's freshness alone decides; no store line: any store)."""
    from store.engine import store_identity

    pid, filled = _demo_pid_file(root)
    if pid is not None and (pid <= 0 or not pid_alive(pid)):
        return True
    return filled is not None and filled != store_identity(store)


def background_demo(root: str | Path = ".", *, now: float | None = None, store: str | None = None) -> str | None:
    """The last line of ``make demo``'s background log (``root/demo-llm.log``) when it was written to in
    the last :data:`DEMO_LOG_FRESH_S` seconds, its tail holds no end line of the phase ("llm phase
    done"), its process (:data:`DEMO_PID`, when the file is there) is alive and it fills the store shown
    (``store``, a URL; ``None``: the one ``AUTOMONITOR_DB`` names; the pid file's second line, when there),
    else ``None``: the Runs page then says so and refreshes, so the LLM runs the phase starts appear as they
    go. Untrusted text: the caller escapes it. Reads at most the log's last 16 KiB."""
    log = Path(root) / DEMO_LOG
    try:
        st = log.stat()
        if (now if now is not None else time.time()) - st.st_mtime > DEMO_LOG_FRESH_S:
            return None
        if _demo_not_shown(Path(root), store):  # killed, or filling another store: its log says nothing of this one
            return None
        with log.open("rb") as fh:
            fh.seek(max(0, st.st_size - 16384))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [ln.strip() for ln in tail.replace("\r", "\n").splitlines() if ln.strip()]
    last = lines[-1] if lines else "(starting)"
    if any("llm phase done" in ln for ln in lines):
        return None
    return last[:300]
