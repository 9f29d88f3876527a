"""Finalising: resolved candidate pairs move into the gold set (or are rejected)."""

from __future__ import annotations

from collections import Counter
import uuid
from dataclasses import dataclass, field
from typing import TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, require_admin
from automonitor.annotation._common import GUIDELINE_VERSION, VERIFIED_EDITION, transaction
from automonitor.annotation.adjudication import proposed_spans, resolution, span_disagreement
from automonitor.annotation.span_agreement import lowest_pair_f1, unmarked_count
from automonitor.data.spans import GoldSpan, SpanError, validate_spans
from automonitor.annotation.queries import assignment_rows, label_rows, latest_adjudications
from automonitor.errors import InputError
from automonitor.hashing import content_hash
from automonitor.timestamps import iso_utc
from automonitor.vocab import SPLITS, copied_from
from store.models import Sample, utcnow
from store.queries import annotation as store
from store.queries import spans as span_queries
from store.queries.rowtypes import AdjudicationRow, LabelRow


@dataclass(frozen=True)
class FinalizeResult:
    """Outcome of :func:`finalize_pairs`: pair ids accepted into the gold ``split``, pair ids rejected
    (with reasons), and the number of candidate pairs still unresolved."""

    split: str
    accepted: list[str]
    rejected: dict[str, str]
    pending: int
    edition: str | None = None
    #: why the pending pairs wait, by what their first unresolved side lacks (:data:`PENDING_REASONS`)
    pending_by_reason: dict[str, int] = field(default_factory=dict)
    #: pending pairs one of whose sides is already resolved (they wait for the other side only)
    pending_one_side_resolved: int = 0

    def explain(self) -> list[str]:
        """The outcome in words, one sentence a line, each pending reason with the step that resolves
        it (the same lines in the CLI's ``adjudications finalize`` and on the Adjudicate page): what was
        accepted and rejected, then why the pending pairs wait (:data:`PENDING_REASONS`, with
        :data:`PENDING_NEXT_STEPS`), then how many wait only for their other side."""
        where = f"edition {self.edition}" if self.edition else self.split
        lines = [
            f"Accepted {len(self.accepted)} pair(s) into {where}, rejected {len(self.rejected)}; "
            f"{self.pending} pair(s) still pending."
        ]
        for key, n in self.pending_by_reason.items():
            lines.append(f"{n} pending pair(s): {PENDING_REASONS[key]}. Next: {PENDING_NEXT_STEPS[key]}.")
        if self.pending_one_side_resolved:
            lines.append(
                f"{self.pending_one_side_resolved} pending pair(s) have one side resolved and wait for the other: "
                "a pair joins the gold set only whole, so assign its other side too "
                "(`automonitor assign --limit N`, or a round of N items in the Adjudicate page's "
                '"Assign candidate items in rounds": the next round takes the other sides).'
            )
        return lines

    def to_json(self) -> dict[str, object]:
        return {
            "split": self.split,
            "edition": self.edition,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "pending": self.pending,
            "pending_by_reason": self.pending_by_reason,
            "pending_one_side_resolved": self.pending_one_side_resolved,
            "accepted_pairs": self.accepted,
            "rejected_pairs": self.rejected,
        }


#: Why a candidate pair is still pending, in the order checked (a pair counts under the first reason one
#: of its unresolved sides has): an assigned annotator has not submitted; every label is in but they
#: disagree (label, unsure or spans) and no adjudication decided it; no annotator is assigned to a side.
#: A pair in a round counts under what its round still lacks before the side nobody was assigned (pair
#: spread leaves the other side out): a pilot of 10 pairs reads "10 ... labels are not all submitted",
#: apart from the untouched pool.
PENDING_REASONS: dict[str, str] = {
    "labels_missing": "a side's labels are not all submitted",
    "needs_adjudication": "a side awaits adjudication",
    "not_assigned": "a side is assigned to no annotator",
}

#: The step that resolves each pending reason (:meth:`FinalizeResult.explain`).
PENDING_NEXT_STEPS: dict[str, str] = {
    "labels_missing": "its annotators submit their batch (Label page: Submit batch)",
    "needs_adjudication": "decide it on the Adjudicate page (an admin; the CLI has no adjudication command)",
    "not_assigned": "assign it (`automonitor assign --limit N`; under pair-spread a round holds one side "
    "of a pair, so a pair is whole after two rounds or with a larger --limit)",
}


class Provenance(TypedDict):
    """Who finalized, when (ISO 8601 UTC) and under which guideline version: each finalized item's
    ``meta["annotation"]`` starts with it."""

    finalized_by: str
    finalized_at: str | None
    guideline_version: str


Resolution = tuple[str, str, str | None]  # (outcome, how: adjudicated|consensus, adjudicator's note)


@dataclass(frozen=True)
class _FinalizeInputs:
    """What :func:`finalize_pairs` reads once: the candidate ``pairs`` (pair id -> its sample objects, by
    pair then id), assignments per item (``n_assigned``), label rows per item (``labels``), the latest
    adjudication row per item (``decided``) and the gold samples by (request_hash, response_hash)."""

    pairs: dict[str, list[Sample]]
    n_assigned: dict[str, int]
    labels: dict[str, list[LabelRow]]
    decided: dict[str, AdjudicationRow]
    gold_hashes: dict[tuple[str, str], list[tuple[str, str]]]


def finalize_pairs(engine: Engine, actor: Account, split: str = "test") -> FinalizeResult:
    """Move every resolved candidate pair out of the candidate pool (admin only).

    An item is resolved by its latest adjudication, or else by consensus (all assigned annotators
    submitted the same ``misbehavior``/``benign`` label; for ``misbehavior``, their evidence spans must
    also agree: an item whose span F1 is below
    :data:`~automonitor.annotation.adjudication.SPAN_F1_THRESHOLD` waits for the adjudicator). A pair
    whose items are all resolved is:

    * rejected (``status = 'rejected'``) when an item was rejected (reason = the adjudicator's note),
      when the resolved labels are not one ``misbehavior`` and one ``benign``, or when a side
      duplicates a gold sample already in the store;
    * otherwise accepted: ``status = 'gold'``, ``split`` as chosen, ``label`` = the resolved label
      (``content_hash`` recomputed; the intended label kept in ``meta["intended_label"]``),
      ``label_source = 'adjudicated'``. With ``split = 'test'`` (the default) the pair becomes a member
      of edition ``verified`` ONLY (an ``edition_sample`` row): it never joins the ``paper`` mirror
      (the paper mirror stays the public sources' draw: ``store.queries.samples`` leaves adjudicated
      samples out of it). A side resolved by consensus as ``misbehavior`` whose annotators marked
      spans gets their merge (:func:`~automonitor.annotation.adjudication.proposed_spans`) as
      ``annotated`` gold spans (they replace any ``annotated`` spans of the item; the note names the
      annotators, the lowest pairwise span F1 and the finalizer; also in ``meta["annotation"]["gold_spans"]``).
      An adjudicated side keeps the spans :func:`~automonitor.annotation.adjudication.adjudicate` stored.

    Provenance (who, when, how resolved, guideline version, reason) goes to ``meta["annotation"]``;
    the latest adjudication rows get the split. Raises :class:`InputError` for an unknown split.
    """
    require_admin(actor)
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}", field="split")

    return transaction(engine, lambda s: _finalize(s, actor, split), write_lock=True, actor=actor)


def _finalize(s: Session, actor: Account, split: str) -> FinalizeResult:
    """:func:`finalize_pairs` inside one transaction: resolve, accept or reject every candidate pair.

    Concurrency: the transaction holds the write lock (SQLite) and locks the candidate rows before it
    reads anything else (PostgreSQL ``FOR UPDATE``), so a concurrent finalize or adjudication waits and
    then sees this one's outcome: a pair is decided once, never against its own new gold samples."""
    inputs = _finalize_inputs(s, actor)
    now = utcnow()
    provenance = Provenance(finalized_by=actor.name, finalized_at=iso_utc(now), guideline_version=GUIDELINE_VERSION)
    accepted: list[str] = []
    rejected: dict[str, str] = {}
    pending = one_side = 0
    by_reason: dict[str, int] = {}
    verified: list[str] = []
    for pid, items in inputs.pairs.items():
        res = _resolve_pair(items, inputs)
        if res is None:
            pending += 1
            reason_key, one_done = _pending_reason(items, inputs)
            by_reason[reason_key] = by_reason.get(reason_key, 0) + 1
            one_side += int(one_done)
            continue
        reason = _rejection_reason(items, res, inputs.gold_hashes)
        verified += _apply_outcome(s, items, res, reason, split, inputs, provenance)
        if reason is None:
            accepted.append(pid)
            for c in items:  # later pairs of this run are checked against this one too
                inputs.gold_hashes.setdefault((c.request_hash, c.response_hash), []).append((c.id, c.pair_id))
        else:
            rejected[pid] = reason
    if verified:
        s.flush()
        store.add_to_edition(s, VERIFIED_EDITION, verified, now)
    return FinalizeResult(
        split=split,
        accepted=accepted,
        rejected=rejected,
        pending=pending,
        edition=VERIFIED_EDITION if split == "test" else None,
        pending_by_reason={k: by_reason[k] for k in PENDING_REASONS if k in by_reason},
        pending_one_side_resolved=one_side,
    )


def _finalize_inputs(s: Session, actor: Account) -> _FinalizeInputs:
    """Read the candidate pairs (rows locked first) with their assignments, labels and latest
    adjudications (admin only)."""
    candidates = store.samples_with_status(s, "candidate", for_update=True)
    n_assigned = Counter(r["sample_id"] for r in assignment_rows(s, actor))
    labels: dict[str, list[LabelRow]] = {}
    for r in label_rows(s, actor):
        labels.setdefault(r["sample_id"], []).append(r)
    pairs: dict[str, list[Sample]] = {}
    for c in candidates:
        pairs.setdefault(c.pair_id, []).append(c)
    return _FinalizeInputs(
        pairs=pairs,
        n_assigned=n_assigned,
        labels=labels,
        decided=latest_adjudications(s, actor, [c.id for c in candidates]),
        gold_hashes=store.gold_hashes(s),
    )


def _resolve_pair(items: list[Sample], inputs: _FinalizeInputs) -> dict[str, Resolution] | None:
    """``{sample_id: (outcome, how, note)}`` for the items of one pair, or ``None`` while any item is
    unresolved. An item is resolved by its latest adjudication (outcome: the gold label or ``reject``;
    note: the adjudicator's) or else by consensus of all its assigned annotators (:func:`resolution`),
    a ``misbehavior`` consensus only when their spans agree too (no
    :func:`~automonitor.annotation.adjudication.span_disagreement`)."""
    res: dict[str, Resolution] = {}
    for c in items:
        adj = inputs.decided.get(c.id)
        if adj is not None:
            gold = adj["gold_label"]  # set on every accept (adjudicate writes it); an accept without one rejects
            outcome = "reject" if adj["decision"] == "reject" or gold is None else gold
            res[c.id] = (outcome, "adjudicated", adj["note"])
            continue
        rows = inputs.labels.get(c.id, [])
        got = resolution(
            [r["label"] for r in rows],
            inputs.n_assigned.get(c.id, 0),
            sum(r["submitted_at"] is not None for r in rows),
        )
        if got == "misbehavior" and span_disagreement(rows):
            continue  # agreed on the label, not on where: the adjudicator resolves the spans
        if got is not None:
            res[c.id] = (got, "consensus", None)
    return res if len(res) == len(items) else None


def _pending_reason(items: list[Sample], inputs: _FinalizeInputs) -> tuple[str, bool]:
    """Why an unresolved pair waits (a key of :data:`PENDING_REASONS`: the first that one of its
    unresolved sides has) and whether another of its sides is resolved already (adjudicated, or a
    consensus of all its assigned annotators)."""
    found: set[str] = set()
    resolved = 0
    for c in items:
        single = _resolve_pair([c], inputs)
        if single is not None:
            resolved += 1
            continue
        rows = inputs.labels.get(c.id, [])
        n = inputs.n_assigned.get(c.id, 0)
        if n == 0:
            found.add("not_assigned")
        elif len(rows) < n or sum(r["submitted_at"] is not None for r in rows) < n:
            found.add("labels_missing")
        else:
            found.add("needs_adjudication")
    key = next((k for k in PENDING_REASONS if k in found), "needs_adjudication")
    return key, resolved > 0


def _rejection_reason(
    items: list[Sample], res: dict[str, Resolution], gold_hashes: dict[tuple[str, str], list[tuple[str, str]]]
) -> str | None:
    """Why a resolved pair is rejected, or ``None`` to accept it: an item was rejected (the
    adjudicators' notes), the outcomes are not one ``misbehavior`` and one ``benign`` side, or a side
    duplicates a gold sample (by request and response hash) of another pair. Never a duplicate: the
    pair itself, and the paper pair a candidate copy ``cand:<pair_id>`` was made from (the copy exists
    to put that pair's texts through annotation; :func:`automonitor.vocab.copied_from`)."""
    outcomes = [res[c.id][0] for c in items]
    if "reject" in outcomes:
        notes = [res[c.id][2] for c in items if res[c.id][0] == "reject"]
        return "; ".join(n for n in notes if n) or "rejected by the adjudicator"
    if sorted(outcomes) != ["benign", "misbehavior"]:
        return f"resolved labels {sorted(outcomes)} are not one misbehavior and one benign side"
    dup = [
        sid
        for c in items
        for sid, pid in gold_hashes.get((c.request_hash, c.response_hash), [])
        if pid not in _own_pairs(c)
    ]
    if dup:
        return f"duplicates gold sample(s) {', '.join(dup)}"
    return None


def _own_pairs(c: Sample) -> set[str]:
    """The pair ids a candidate item cannot duplicate: its own pair and the pair it was copied from."""
    origin = copied_from(c.pair_id)
    return {c.pair_id} if origin is None else {c.pair_id, origin}


def _apply_outcome(
    s: Session,
    items: list[Sample],
    res: dict[str, Resolution],
    reason: str | None,
    split: str,
    inputs: _FinalizeInputs,
    provenance: Provenance,
) -> list[str]:
    """Write one resolved pair: accepted (``reason is None``) into the gold ``split`` with the resolved
    labels, else ``rejected`` with ``meta["rejection_reason"]``; provenance to ``meta["annotation"]``;
    the latest adjudications get the split (``None`` when rejected). Returns the sample ids that join
    the verified edition (the accepted items when ``split == "test"``)."""
    built_as = {c.id: c.label for c in items}  # before any placeholder below
    pair_of = {c.id: c.pair_id for c in items}
    if reason is None and any(c.label != res[c.id][0] for c in items):
        # the resolved labels swap the intended ones: park each side under a pair id of its own first, as
        # the database holds at most one sample per (pair_id, label) at every statement (and labels to the
        # vocabulary, so no placeholder label); each side gets its pair id back with its new label below.
        # The parking id is random: no imported pair can hold it already (a guessable one could block
        # every finalize)
        for c in items:
            c.pair_id = f"~swap:{uuid.uuid4().hex}"
            s.add(c)
        s.flush()
    verified: list[str] = []
    for c in items:
        c.pair_id = pair_of[c.id]
        outcome, how, note = res[c.id]
        meta = dict(c.meta or {})
        meta["intended_label"] = meta.get("intended_label", built_as[c.id])
        meta["annotation"] = {
            **provenance,
            "resolution": how,
            "outcome": outcome,
            "note": note,
            "labels": {r["annotator"]: r["label"] for r in inputs.labels.get(c.id, [])},
        }
        if reason is None:
            c.status, c.split, c.label = "gold", split, outcome
            c.label_source = "adjudicated"
            c.content_hash = content_hash(c.request, c.response, outcome)
            if split == "test":
                verified.append(c.id)
            if how == "consensus" and outcome == "misbehavior":
                meta["annotation"].update(_store_agreed_spans(s, c, inputs.labels.get(c.id, []), provenance))
        else:
            c.status, c.split = "rejected", None
            meta["rejection_reason"] = reason
        c.meta = meta
        s.add(c)
        if c.id in inputs.decided:
            store.set_adjudication_split(s, inputs.decided[c.id]["id"], split if reason is None else None)
    return verified


def _store_agreed_spans(s: Session, c: Sample, rows: list[LabelRow], provenance: Provenance) -> dict[str, object]:
    """Store the merged evidence spans of annotators who agreed on ``misbehavior`` (and on where, see
    :func:`_resolve_pair`) as the item's ``annotated`` gold spans, replacing any it had (so a rerun
    writes the same rows). Returns what goes into ``meta["annotation"]``: ``{"gold_spans": [[start,
    end], ...]}`` (empty when nobody marked a span), plus ``"gold_spans_error"`` when the marks do not fit
    the response (then nothing is stored; cannot happen for labels saved through
    :func:`~automonitor.annotation.labeling.save_label`, which checks them against the same text)."""
    spans = proposed_spans(rows)
    if not spans:
        return {"gold_spans": []}
    f1 = lowest_pair_f1(rows, missing_disagrees=False)
    who = ", ".join(sorted(str(r["annotator"]) for r in rows))
    unmarked = unmarked_count(rows)
    parts = [f"lowest pairwise span F1 {f1:.2f}"] if f1 is not None else [] if unmarked else ["one annotator"]
    if unmarked:  # a span is optional: who marked none is no disagreement on where
        parts.append("one annotator marked no span" if unmarked == 1 else f"{unmarked} annotators marked no span")
    agreed = "; ".join(parts)
    note = f"agreed by {who} ({agreed}); finalized by {provenance['finalized_by']}"
    gold = [GoldSpan(start=a, end=b, provenance="annotated", note=note) for a, b in spans]
    try:
        validate_spans(c.response, gold)
    except SpanError as exc:
        return {"gold_spans": [], "gold_spans_error": str(exc)}
    span_queries.delete_spans(s, [c.id], ["annotated"])
    span_queries.insert_spans(s, [(c.id, g.model_dump()) for g in gold])
    return {"gold_spans": [list(p) for p in spans]}


class RejectedPair(TypedDict):
    """A rejected item with its reason (:func:`rejected_pairs`)."""

    sample_id: str
    pair_id: str
    category: str
    task: str
    reason: str | None
    finalized_by: str | None
    finalized_at: str | None


def rejected_pairs(engine: Engine, actor: Account) -> list[RejectedPair]:
    """Rejected items with their reason (admin only): ``{"sample_id", "pair_id", "category", "task",
    "reason", "finalized_by", "finalized_at"}``."""
    require_admin(actor)

    def work(s: Session) -> list[RejectedPair]:
        out: list[RejectedPair] = []
        for c in store.samples_with_status(s, "rejected"):
            ann = (c.meta or {}).get("annotation", {})
            out.append(
                RejectedPair(
                    sample_id=c.id,
                    pair_id=c.pair_id,
                    category=c.category,
                    task=c.task,
                    reason=(c.meta or {}).get("rejection_reason"),
                    finalized_by=ann.get("finalized_by"),
                    finalized_at=ann.get("finalized_at"),
                )
            )
        return out

    return transaction(engine, work, actor=actor)
