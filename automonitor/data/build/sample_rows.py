"""Seeded ordering and the ``Sample`` rows of a pair: the deterministic RNG of each selection step,
proportional stratum sizes, text hashes and the row dicts a :class:`Plan` holds."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from automonitor.data.build.config import ORIGIN
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from automonitor.data.sources import SourcePair

if TYPE_CHECKING:
    from automonitor.data.build.ladder_runs import LadderRun


@dataclass
class Plan:
    """The outcome of :func:`plan_build`: sample rows (dicts with ``Sample`` columns), a report and the
    detector ladder's runs to store (:class:`automonitor.data.build.ladder_runs.LadderRun`; empty without
    the ladder)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    ladder_runs: list[LadderRun] = field(default_factory=list)


def rng_for(seed: int, source: str, purpose: str) -> random.Random:
    """The deterministic RNG of one selection step (string seeds are hashed with SHA-512 by Python,
    so the order is stable across runs and machines)."""
    return random.Random(f"automonitor:{seed}:{source}:{purpose}")


def shuffled(pairs: Iterable[SourcePair], rng: random.Random) -> list[SourcePair]:
    """``pairs`` sorted by ``pair_id``, then shuffled by ``rng`` (deterministic for a seeded rng)."""
    out = sorted(pairs, key=lambda p: p.pair_id)
    rng.shuffle(out)
    return out


def proportional(counts: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over strata in proportion to ``counts`` (largest remainder, ties by name),
    never more than a stratum holds."""
    avail = sum(counts.values())
    total = min(total, avail)
    if avail == 0:
        return {k: 0 for k in counts}
    raw = {k: total * n / avail for k, n in counts.items()}
    out = {k: int(v) for k, v in raw.items()}
    rest = total - sum(out.values())
    for k in sorted(counts, key=lambda k: (-(raw[k] - out[k]), k)):
        if rest <= 0:
            break
        if out[k] < counts[k]:
            out[k] += 1
            rest -= 1
    return out


def pair_hashes(p: SourcePair) -> tuple[str, str, str]:
    """sha256 of the request, the misbehavior and the benign text of ``p``."""
    return sha256_text(p.request), sha256_text(p.misbehavior), sha256_text(p.benign)


def rows_for(
    p: SourcePair,
    split: str | None,
    status: str,
    h: tuple[str, str, str],
    editions: tuple[str, ...] = (),
    sides: tuple[str, ...] = ("misbehavior", "benign"),
    extra_meta: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``Sample`` rows (dicts of columns) of ``sides`` of pair ``p``: ids, hashes (``h`` =
    :func:`pair_hashes`), provenance, ``meta`` (pair, side and ``extra_meta``, ``None`` values left out,
    ``origin`` = build) and ``editions`` (not a column: the edition memberships to create)."""
    rows = []
    for label, text, fname, rec, side_meta, rh in (
        ("misbehavior", p.misbehavior, p.mis_file, p.mis_record, p.mis_meta, h[1]),
        ("benign", p.benign, p.ben_file, p.ben_record, p.ben_meta, h[2]),
    ):
        if label not in sides:
            continue
        other = {"answered_other_prompt": p.answered_other_prompt.get(label)}
        meta = {k: v for k, v in {**p.meta, **side_meta, **other, **(extra_meta or {})}.items() if v is not None}
        meta["origin"] = ORIGIN
        rows.append(
            {
                "id": make_sample_id(p.pair_id, label, p.request, text),
                "pair_id": p.pair_id,
                "category": p.category,
                "task": p.task,
                "label": label,
                "request": p.request,
                "response": text,
                "source": p.source,
                "source_file": fname,
                "source_record": rec,
                "split": split,
                "status": status,
                "request_hash": h[0],
                "response_hash": rh,
                "content_hash": content_hash(p.request, text, label),
                "meta": meta,
                "label_source": p.label_source,
                "editions": editions,
            }
        )
    return rows
