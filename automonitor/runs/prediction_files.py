"""Import verdicts from an outside system (a vendor guardrail, another eval framework) as a run.

File format (the CLI contract's ``predictions import``): JSONL (one JSON object a line) or CSV with a header, columns

- ``sample_id`` (str, required): a gold sample of the test set or of the controls (the samples a run
  judges); a train-split sample or a candidate is refused like an unknown id;
- ``outcome`` (required): ``misbehavior`` | ``benign`` | ``invalid`` | ``refusal`` | ``error``;
- ``score`` (optional): P(misbehavior), a number in [0, 1] (CSV: empty cell = none);
- ``evidence`` (optional): list of quoted strings (CSV: a JSON array in the cell, empty = none);
- ``raw`` (optional): the system's raw output, a string;
- also accepted: ``reason`` (str), ``pred_category`` (str), ``severity`` (str); ``raw`` and ``reason``
  hold at most 256,000 characters each (a judge answer's cap). Other columns are kept in the
  prediction's ``meta["extra"]``.

The file is read by :mod:`automonitor.data.records` (format by extension, ``.jsonl``/``.ndjson``/``.json`` ->
JSONL, ``.csv`` -> CSV, else sniffed: first non-blank character ``{`` or ``[`` -> JSONL; strict JSON, no
NaN or duplicate keys; an empty CSV cell is an absent value; CSV rows of blank cells are skipped) and each
row is validated by :class:`automonitor.data.row_models.PredictionRow` (JSON values strict: a ``score`` must be a JSON
number; CSV cells converted: ``score`` to a number, ``evidence`` from JSON). Validation is all or nothing:
a problem raises :class:`automonitor.errors.InputError` naming file, line (JSONL line; CSV record with the
header as line 1) and field of the first problem, listing up to 10, and nothing is written. Non-finite
numbers and nesting beyond the limits of :mod:`automonitor.data.records` are refused anywhere in a record;
extra columns obey the ``meta`` limits. The run gets ``kind = status = "imported"`` and a ``Monitor`` row
with backend ``external``; ``--monitor`` may not be a built-in backend spec (``rules``, ``rules:rules-v1``,
``openai:...``) nor the name of another backend's monitor in the store. Importing the same file again for
the same monitor and template returns the existing run instead of duplicating it, also when the imports run
at the same time (one ``monitor`` row per name: the database's unique index, migration r12).
"""

from __future__ import annotations

import codecs
import hashlib
import unicodedata
import uuid
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from automonitor.errors import InputError
from automonitor.runs.monitors import REGISTRY
from automonitor.data.records import (
    Problems,
    RawRecord,
    check_import_file,
    detect_format,
    iter_csv,
    iter_jsonl,
)
from automonitor.data.row_models import PREDICTION_REQUIRED, PredictionRow, PredictionValues, validate_one
from automonitor.vocab import CONTROLS_SPLIT, OUTCOMES, TEMPLATES, scored_edition

#: the edition an imported run is compared on (it records none: :func:`automonitor.vocab.scored_edition`)
IMPORTED_EDITION = scored_edition(None)
CHUNK = 2000  # records validated (and looked up in the store) at a time by :func:`validate_stream`


def not_judged_reason(status: str | None, split: str | None) -> str | None:
    """Why a stored sample of this ``status`` and ``split`` is no sample a run judges (and so cannot
    carry an imported verdict), as a phrase ("a train-split sample", "a candidate sample (not gold)"), or
    ``None`` for a gold sample of the test set or the controls."""
    if status == "gold":
        return None if split in ("test", CONTROLS_SPLIT) else f"a {split or 'no'}-split sample"
    if status == "candidate":
        return "a candidate sample (not gold; waiting for annotation)"
    return f"a {status or 'non-gold'} sample (not gold)"


def validate_stream(
    records: Iterable[RawRecord],
    known: Callable[[list[str]], Mapping[str, str | None]],
    file: str,
    *,
    max_errors: int = 10,
    problems: Problems | None = None,
) -> list[PredictionValues]:
    """Check every record and return Prediction-ready dicts (sample_id, outcome, score, evidence, raw,
    reason, pred_category, severity, meta), in file order.

    Each record is validated by :class:`automonitor.data.row_models.PredictionRow` (sample_id present and a string,
    outcome in the vocabulary, score a finite number in [0, 1], evidence a list of strings, text fields
    strings, extra fields within the meta limits; CSV cells converted), then its sample id must be new in
    the file and known: ``known(ids)`` returns ``{sample_id: reason}`` for those of a chunk's sample ids that
    are in the store (records are looked up :data:`CHUNK` at a time), where a reason that is not ``None`` (:func:`not_judged_reason`) makes the row a problem too (a train-split or
    candidate sample: a run never judges it, so the report must never score it). Only the valid rows and the sample ids seen (for the duplicate
    check) are kept, plus a bounded problem list (``problems``, which may already hold the reader's
    problems), so a file whose every row is bad costs flat memory. Raises ``InputError`` (file, line,
    field) listing up to ``max_errors`` problems, or when there is no record at all."""
    problems = problems if problems is not None else Problems(file, max_errors)
    seen: dict[str, int] = {}
    rows: list[PredictionValues] = []
    n = 0
    it = iter(records)
    while True:
        chunk = list(islice(it, CHUNK))
        if not chunk:
            break
        n += len(chunk)
        ids = [given.strip() for r in chunk if isinstance(given := r.data.get("sample_id"), str)]
        have = known(ids) if ids else {}
        for record in chunk:  # row by row, so that the first problem is the first in the file
            row = validate_one(PredictionRow, record, problems)
            if row is None:
                continue
            line, sid = record.line, row.sample_id
            if sid in seen:
                problems.add(f"duplicate sample_id '{sid}' (first on line {seen[sid]})", line=line, field="sample_id")
                continue
            seen[sid] = line
            if sid not in have:
                problems.add(f"unknown sample_id '{sid}' (not in the store)", line=line, field="sample_id")
                continue
            if (why := have[sid]) is not None:
                problems.add(
                    f"sample_id '{sid}' is {why}: only gold samples of the test set and the controls (the samples"
                    " a run judges) take a verdict",
                    line=line,
                    field="sample_id",
                )
                continue
            if not problems:  # once the file is bad, its valid rows are not needed any more
                rows.append(row.prediction_values())
    problems.raise_if_any()
    if not n:
        raise InputError("empty file: no predictions", file=file)
    return rows


def _check_options(monitor: str, template: str | None) -> tuple[str, str]:
    """``(monitor, template)`` stripped and defaulted (template ``direct``); ``InputError`` (field
    ``monitor`` or ``template``) for a blank or over-long monitor name, one with control or format
    characters, one that is a built-in backend spec (``rules``, ``rules:...``, ``openai:...``: any
    backend of :data:`automonitor.runs.monitors.REGISTRY`, case-insensitive), or a template outside the
    vocabulary."""
    template = template or "direct"
    if not monitor or not monitor.strip():
        raise InputError("--monitor must name the outside system", field="monitor")
    monitor = monitor.strip()
    if len(monitor) > 256:
        raise InputError("--monitor is longer than 256 characters", field="monitor")
    if any(unicodedata.category(ch).startswith("C") for ch in monitor):
        # a name is printed by `runs`, `report` and the app: an escape sequence in it must not reach a terminal
        raise InputError("--monitor contains control characters", field="monitor")
    backend = monitor.partition(":")[0].strip().lower()
    if backend in REGISTRY:
        # `rules:rules-v1` imported would stand next to the built-in rules baseline under its name
        raise InputError(
            f"--monitor {monitor!r} names a built-in judge backend ({backend}); name the outside system"
            f" differently (built-in: {', '.join(REGISTRY)}, alone or as BACKEND:MODEL)",
            field="monitor",
        )
    if template not in TEMPLATES:
        raise InputError(f"--template must be one of {', '.join(TEMPLATES)}, got {template!r}", field="template")
    return monitor, template


def _sha256_and_head(p: Path, file: str, head_bytes: int = 65_536) -> tuple[str, bytes]:
    """The SHA-256 (hex) of the file, read in 1 MiB blocks, and its first ``head_bytes`` bytes (for
    format sniffing). ``InputError`` when it cannot be read."""
    h = hashlib.sha256()
    head = b""
    try:
        with p.open("rb") as fh:
            while block := fh.read(2**20):
                if len(head) < head_bytes:
                    head += block[: head_bytes - len(head)]
                h.update(block)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=file) from exc
    return h.hexdigest(), head


def import_predictions(engine, path: str | Path, monitor: str, template: str | None = None) -> dict[str, Any]:
    """Validate ``path`` completely, then write one imported run with its predictions in one transaction.

    Args:
        engine: store engine (schema at head).
        path: JSONL or CSV file (module docstring).
        monitor: name of the outside system (a ``Monitor`` with backend ``external``).
        template: a prompt template name of the vocabulary; default ``direct`` (a plain verdict).
    Returns:
        ``{"run_id", "monitor", "template", "kind": "imported", "status": "imported", "n", "counts":
        {outcome: int}, "scores": int, "evidence": int, "created": bool, "coverage": Coverage}`` (``created``
        is False when the same file was already imported for this monitor and template; ``coverage``: how many
        of the ``paper`` edition's test samples, which an imported run is compared on, and of the controls the
        file has a verdict for, with ``partial`` when it covers fewer test samples than the edition has:
        :class:`automonitor.runs.coverage.Coverage`, as ``report --json`` gives it per run).
    Raises:
        InputError (exit 2) for any bad input; the store is unchanged.
    """
    from automonitor.runs.coverage import ids_coverage, member_ids
    from store import session_scope
    from store.queries import analysis as q
    from store.queries.locks import begin_serialised_write

    file = str(path)
    monitor, template = _check_options(monitor, template)
    p = check_import_file(path)
    sha, head = _sha256_and_head(p, file)
    fmt = detect_format(file, head, None, ("jsonl", "csv"))
    if not head.removeprefix(codecs.BOM_UTF8).strip() and p.stat().st_size <= len(head):
        raise InputError("empty file: no predictions", file=file)
    with session_scope(engine) as s:
        known = lambda ids: {  # noqa: E731
            sid: not_judged_reason(status, split) for sid, (status, split) in q.sample_standing(s, ids).items()
        }
        problems = Problems(file)  # both formats streamed: one record at a time, memory flat in file size
        if fmt == "jsonl":
            with p.open("rb") as fh:
                rows = validate_stream(iter_jsonl(fh, problems), known, file, problems=problems)
        else:
            with p.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as text:
                records = iter_csv(text, problems, required=PREDICTION_REQUIRED, skip_blank_rows=True)
                rows = validate_stream(records, known, file, problems=problems)
    counts = {o: 0 for o in OUTCOMES}
    for r in rows:
        counts[r["outcome"]] += 1
    with session_scope(engine) as s:
        # importers of one monitor name, one at a time (SQLite: the database's write lock; PostgreSQL: an
        # advisory lock on the name), so that a second one sees the first one's run and returns it
        begin_serialised_write(s, f"predictions-import:{monitor}")
        taken = q.monitor_named(s, monitor)
        if taken is not None and taken.backend != "external":
            raise InputError(
                f"--monitor {monitor!r} is the name of a {taken.backend} monitor in the store; name the outside"
                " system differently",
                field="monitor",
            )
        existing = q.find_imported_run(s, monitor, template, sha)
        if existing is not None:
            run_id, created = existing.id, False
        else:
            m = q.external_monitor(s, monitor)  # a concurrent creator's row, should it have committed first
            run_id = "imp-" + uuid.uuid4().hex[:16]
            params = {"source_file": p.name, "sha256": sha, "format": fmt, "rows": len(rows)}
            q.insert_finished_run(
                s,
                run_id=run_id,
                monitor=m,
                template=template,
                kind="imported",
                status="imported",
                params=params,
                rows=rows,
            )
            created = True
        members, controls = member_ids(s, [IMPORTED_EDITION])
    cov = ids_coverage(
        IMPORTED_EDITION, members[IMPORTED_EDITION], (r["sample_id"] for r in rows), controls, imported=True
    )
    return {
        "run_id": run_id,
        "monitor": monitor,
        "template": template,
        "kind": "imported",
        "status": "imported",
        "n": len(rows),
        "counts": counts,
        "scores": sum(1 for r in rows if r["score"] is not None),
        "evidence": sum(1 for r in rows if r["evidence"]),
        "created": created,
        "coverage": cov,
    }
