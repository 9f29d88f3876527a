"""``automonitor assignments export``: an annotator's queue as a file, to prepare labels offline.

Each row holds exactly what that annotator may see on the labelling page (the CLI contract's row):
``{"annotator": str, "sample_id": str, "request": str, "response": str, "batch": int}``, one JSON object a
line, in queue order (annotator name, then queue position). Never the source, the intended label, the pair
or its partner, nor anybody's labels: the double-blind design of the annotation workflow.
"""

from __future__ import annotations

from collections import Counter
import json
import os
import tempfile
from pathlib import Path
from typing import TypedDict

from sqlalchemy.engine import Engine

from automonitor.annotation.accounts import Account
from automonitor.annotation.queries import assignment_rows as store_rows
from automonitor.errors import InputError, require_folder
from store import session_scope
from store.queries import annotation as store


class ExportRow(TypedDict):
    """One row of an assignments file (the CLI contract's row; module doc)."""

    annotator: str
    sample_id: str
    request: str
    response: str
    batch: int


class ExportResult(TypedDict):
    """What :func:`export_assignments` wrote: the ``file``, its ``rows`` and the rows per annotator."""

    file: str
    rows: int
    annotators: dict[str, int]


def assignment_rows(engine: Engine, actor: Account, annotator: str | None = None) -> list[ExportRow]:
    """The assigned items as export rows (:class:`ExportRow` keys only), queue order.

    ``annotator``: one account's queue (by name), or every annotator's when None. An annotator may only
    export their own queue (``PermissionDenied`` from the store's scope otherwise).
    Raises ``InputError`` (field ``--annotator``) for an unknown account name.
    """
    with session_scope(engine) as s:
        annotator_id = None
        if annotator is not None:
            annotator_id = store.annotator_id(s, annotator)
            if annotator_id is None:
                raise InputError(f"no account named {annotator!r}", field="--annotator")
        rows = store_rows(s, actor, annotator_id)
        texts = store.request_response(s, list(dict.fromkeys(r["sample_id"] for r in rows)))
    rows.sort(key=lambda r: (r["annotator"], r["position"]))
    return [
        ExportRow(
            annotator=r["annotator"],
            sample_id=r["sample_id"],
            request=texts[r["sample_id"]][0],
            response=texts[r["sample_id"]][1],
            batch=int(r["batch"]),
        )
        for r in rows
    ]


def export_assignments(
    engine: Engine, actor: Account, path: str | os.PathLike[str], annotator: str | None = None
) -> ExportResult:
    """Write :func:`assignment_rows` to ``path`` as JSONL (UTF-8, atomically: temp file then rename).

    Returns ``{"file": str, "rows": int, "annotators": {name: int}}``. Raises ``InputError`` for an
    unknown annotator or a missing directory (nothing written).
    """
    path = Path(path)
    require_folder(path)
    rows = assignment_rows(engine, actor, annotator)
    fd, tmp = tempfile.mkstemp(prefix=".assignments-", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    counts = dict(Counter(r["annotator"] for r in rows))
    return ExportResult(file=str(path), rows=len(rows), annotators=counts)
