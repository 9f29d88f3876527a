"""Finalising: resolved candidate pairs move into the gold set (or are rejected)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from automonitor.accounts import Account, check_actor, require_admin
from automonitor.errors import InputError
from automonitor.vocab import SPLITS
from automonitor.annotation._common import GUIDELINE_VERSION, VERIFIED_EDITION, _transaction
from automonitor.annotation.adjudication import _resolution


@dataclass(frozen=True)
class FinalizeResult:
    """Outcome of :func:`finalize_pairs`: pair ids accepted into the gold ``split``, pair ids rejected
    (with reasons), and the number of candidate pairs still unresolved."""

    split: str
    accepted: list[str]
    rejected: dict[str, str]
    pending: int
    edition: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "edition": self.edition,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "pending": self.pending,
            "accepted_pairs": self.accepted,
            "rejected_pairs": self.rejected,
        }


def finalize_pairs(engine: Engine, actor: Account, split: str = "test") -> FinalizeResult:
    """Move every resolved candidate pair out of the candidate pool (admin only).

    An item is resolved by its latest adjudication, or else by consensus (all assigned annotators
    submitted the same ``misbehavior``/``benign`` label). A pair whose items are all resolved is:

    * rejected (``status = 'rejected'``) when an item was rejected (reason = the adjudicator's note),
      when the resolved labels are not one ``misbehavior`` and one ``benign``, or when a side
      duplicates a gold sample already in the store;
    * otherwise accepted: ``status = 'gold'``, ``split`` as chosen, ``label`` = the resolved label
      (``content_hash`` recomputed; the intended label kept in ``meta["intended_label"]``),
      ``label_source = 'adjudicated'``. With ``split = 'test'`` (the default) the pair becomes a member
      of edition ``verified`` ONLY (an ``edition_sample`` row): it never joins the ``paper`` mirror
      (INTERFACES.md; ``store.queries.samples`` leaves adjudicated samples out of the paper mirror).

    Provenance (who, when, how resolved, guideline version, reason) goes to ``meta["annotation"]``;
    the latest adjudication rows get the split. Raises :class:`InputError` for an unknown split.
    """
    from automonitor.hashing import content_hash
    from store.models import Adjudication, Sample, utcnow
    from automonitor.annotation.queries import as_utc_iso, assignment_rows, label_rows, latest_adjudications

    require_admin(actor)
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}", field="split")

    def work(s):
        check_actor(s, actor)
        cands = list(
            s.execute(
                sa.select(Sample).where(Sample.status == "candidate").order_by(Sample.pair_id, Sample.id)
            ).scalars()
        )
        ids = [c.id for c in cands]
        n_assigned: dict[str, int] = {}
        for r in assignment_rows(s, actor):
            n_assigned[r["sample_id"]] = n_assigned.get(r["sample_id"], 0) + 1
        labels: dict[str, list[dict[str, Any]]] = {}
        for r in label_rows(s, actor):
            labels.setdefault(r["sample_id"], []).append(r)
        decided = latest_adjudications(s, actor, ids)
        pairs: dict[str, list[Any]] = {}
        for c in cands:
            pairs.setdefault(c.pair_id, []).append(c)
        gold_hashes = {
            (rq, rs): sid
            for sid, rq, rs in s.execute(
                sa.select(Sample.id, Sample.request_hash, Sample.response_hash).where(Sample.status == "gold")
            )
        }
        now = utcnow()
        accepted, rejected, pending = [], {}, 0
        verified: list[str] = []
        for pid, items in pairs.items():
            res: dict[str, tuple[str, str, str | None]] = {}  # sid -> (outcome, how, note)
            for c in items:
                adj = decided.get(c.id)
                if adj is not None:
                    out = "reject" if adj["decision"] == "reject" else adj["gold_label"]
                    res[c.id] = (out, "adjudicated", adj["note"])
                    continue
                rows = labels.get(c.id, [])
                got = _resolution(
                    [r["label"] for r in rows],
                    n_assigned.get(c.id, 0),
                    sum(r["submitted_at"] is not None for r in rows),
                )
                if got is not None:
                    res[c.id] = (got, "consensus", None)
            if len(res) < len(items):
                pending += 1
                continue
            outcomes = [res[c.id][0] for c in items]
            reason = None
            if "reject" in outcomes:
                reason = (
                    "; ".join(n for c in items for o, _, n in [res[c.id]] if o == "reject" and n)
                    or "rejected by the adjudicator"
                )
            elif sorted(outcomes) != ["benign", "misbehavior"]:
                reason = f"resolved labels {sorted(outcomes)} are not one misbehavior and one benign side"
            else:
                dup = [
                    gold_hashes[(c.request_hash, c.response_hash)]
                    for c in items
                    if (c.request_hash, c.response_hash) in gold_hashes
                ]
                if dup:
                    reason = f"duplicates gold sample(s) {', '.join(dup)}"
            prov_base = {
                "finalized_by": actor.name,
                "finalized_at": as_utc_iso(now),
                "guideline_version": GUIDELINE_VERSION,
            }
            if reason is None and any(c.label != res[c.id][0] for c in items):
                # the resolved labels swap the intended ones: park them first, as the database holds
                # at most one sample per (pair_id, label) at every statement
                for i, c in enumerate(items):
                    c.label = f"~swap{i}"
                    s.add(c)
                s.flush()
            for c in items:
                outcome, how, note = res[c.id]
                meta = dict(c.meta or {})
                meta["intended_label"] = meta.get("intended_label", c.label)
                meta["annotation"] = {
                    **prov_base,
                    "resolution": how,
                    "outcome": outcome,
                    "note": note,
                    "labels": {r["annotator"]: r["label"] for r in labels.get(c.id, [])},
                }
                if reason is None:
                    c.status, c.split, c.label = "gold", split, outcome
                    c.label_source = "adjudicated"
                    c.content_hash = content_hash(c.request, c.response, outcome)
                    if split == "test":
                        verified.append(c.id)
                else:
                    c.status, c.split = "rejected", None
                    meta["rejection_reason"] = reason
                c.meta = meta
                s.add(c)
                if c.id in decided:
                    s.execute(
                        sa.update(Adjudication)
                        .where(Adjudication.id == decided[c.id]["id"])
                        .values(split=split if reason is None else None)
                    )
            if reason is None:
                accepted.append(pid)
            else:
                rejected[pid] = reason
        if verified:
            from store.models import EditionSample

            s.flush()
            have = set(
                s.execute(
                    sa.select(EditionSample.sample_id).where(
                        EditionSample.edition == VERIFIED_EDITION, EditionSample.sample_id.in_(verified)
                    )
                ).scalars()
            )
            new_rows = [
                {"edition": VERIFIED_EDITION, "sample_id": sid, "created_at": now}
                for sid in verified
                if sid not in have
            ]
            if new_rows:
                s.execute(sa.insert(EditionSample), new_rows)
        return FinalizeResult(
            split=split,
            accepted=accepted,
            rejected=rejected,
            pending=pending,
            edition=VERIFIED_EDITION if split == "test" else None,
        )

    return _transaction(engine, work)


def rejected_pairs(engine: Engine, actor: Account) -> list[dict[str, Any]]:
    """Rejected items with their reason (admin only): ``{"sample_id", "pair_id", "category", "task",
    "reason", "finalized_by", "finalized_at"}``."""
    from store.models import Sample

    require_admin(actor)

    def work(s):
        check_actor(s, actor)
        out = []
        for c in s.execute(
            sa.select(Sample).where(Sample.status == "rejected").order_by(Sample.pair_id, Sample.id)
        ).scalars():
            ann = (c.meta or {}).get("annotation", {})
            out.append(
                {
                    "sample_id": c.id,
                    "pair_id": c.pair_id,
                    "category": c.category,
                    "task": c.task,
                    "reason": (c.meta or {}).get("rejection_reason"),
                    "finalized_by": ann.get("finalized_by"),
                    "finalized_at": ann.get("finalized_at"),
                }
            )
        return out

    return _transaction(engine, work)
