"""Admin overviews of the labels: per-annotator progress and every label with provenance."""

from __future__ import annotations

from dataclasses import asdict
from typing import TypedDict, cast

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, require_admin
from automonitor.annotation._common import label_from_row, transaction
from automonitor.annotation.queries import assignment_rows, label_rows
from store.queries.rowtypes import AssignmentRow, LabelEvidence, LabelRow


class Progress(TypedDict):
    """One annotator's progress (:func:`annotation_progress`): items assigned, labeled, submitted, unsure."""

    annotator: str
    assigned: int
    labeled: int
    submitted: int
    unsure: int


class _FileColumns(TypedDict):
    """The columns of an annotation file that the CLI contract names, an export's first four."""

    annotator: str
    sample_id: str
    label: str
    note: str | None


class AnnotationRecord(_FileColumns, LabelEvidence):
    """One label with its provenance (:func:`annotation_records`; datetimes ISO 8601 UTC): the contract's
    columns, the label's evidence (:class:`~store.queries.rowtypes.LabelEvidence`) and the keys below, in that
    order (an export's columns)."""

    seconds_spent: float | None
    guideline_version: str
    created_at: str | None
    updated_at: str | None
    submitted_at: str | None
    batch: int | None
    position: int | None
    assignment_seed: int | None
    pair_id: str
    item_category: str
    task: str
    item_status: str


def annotation_progress(engine: Engine, actor: Account) -> list[Progress]:
    """Per annotator (admin only): ``{"annotator", "assigned", "labeled", "submitted", "unsure"}``."""
    require_admin(actor)

    def work(s: Session) -> list[Progress]:
        out: dict[str, Progress] = {}

        def of(name: str) -> Progress:
            return out.setdefault(name, Progress(annotator=name, assigned=0, labeled=0, submitted=0, unsure=0))

        for r in assignment_rows(s, actor):
            of(r["annotator"])["assigned"] += 1
        for r in label_rows(s, actor):
            d = of(r["annotator"])
            d["labeled"] += 1
            d["submitted"] += r["submitted_at"] is not None
            d["unsure"] += r["label"] == "unsure"
        return [out[k] for k in sorted(out)]

    return transaction(engine, work, actor=actor)


def annotation_records(engine: Engine, actor: Account) -> list[AnnotationRecord]:
    """Every label with full provenance (admin only), one dict per label, ordered by annotator then
    sample: the contract columns ``annotator``, ``sample_id``, ``label``, ``note`` plus ``category``,
    ``severity``, ``evidence_start``, ``evidence_end`` (the hull), ``evidence_text``, ``evidence_spans``
    (every marked span, ``[[start, end], ...]``, or None), ``seconds_spent``,
    ``guideline_version``, ``created_at``, ``updated_at``, ``submitted_at`` (ISO 8601 UTC),
    ``batch``, ``position``, ``assignment_seed``, ``pair_id``, ``item_category``, ``task``,
    ``item_status``."""
    require_admin(actor)

    def work(s: Session) -> list[AnnotationRecord]:
        asg = {(a["annotator"], a["sample_id"]): a for a in assignment_rows(s, actor)}
        return [_record(r, asg.get((r["annotator"], r["sample_id"]))) for r in label_rows(s, actor, with_sample=True)]

    return transaction(engine, work, actor=actor)


def _record(r: LabelRow, a: AssignmentRow | None) -> AnnotationRecord:
    """The record of label row ``r`` (with its item's provenance) and its assignment ``a`` (``None``: none): the
    :class:`~automonitor.annotation._common.Label` of ``r`` (spans as lists, ``None`` for none) with both
    provenances, in :class:`AnnotationRecord`'s key order."""
    label = asdict(label_from_row(r))
    more = {
        "evidence_spans": [list(sp) for sp in label["evidence_spans"]] or None,
        "batch": a["batch"] if a else None,
        "position": a["position"] if a else None,
        "assignment_seed": a["seed"] if a else None,
        "pair_id": r["pair_id"],
        "item_category": r["item_category"],
        "task": r["task"],
        "item_status": r["status"],
    }
    return cast(AnnotationRecord, {k: more[k] if k in more else label[k] for k in AnnotationRecord.__annotations__})
