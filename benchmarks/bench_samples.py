"""The synthetic test sample the analysis benchmarks seed (``bench_analysis``, ``bench_localisation``):
one row of the ``sample`` table for pair ``p`` and label ``label``, its category and task cycling over
the vocabulary so every category x task cell is filled."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from automonitor.vocab import CATEGORIES, TASKS


def sample_row(p: int, label: str, sid: str, request: str, response: str, now: datetime) -> dict[str, Any]:
    """A ``sample`` row (dict for ``sa.insert(Sample)``) of the benchmark's pair ``p``: id ``sid``, split
    ``test``, status ``gold``, source ``bench``; category ``CATEGORIES[p % 3]``, task ``TASKS[(p // 3) % 3]``."""
    return dict(
        id=sid,
        pair_id=f"p{p:05d}",
        category=CATEGORIES[p % 3],
        task=TASKS[(p // 3) % 3],
        label=label,
        request=request,
        response=response,
        source="bench",
        split="test",
        status="gold",
        request_hash="r",
        response_hash=sid,
        content_hash=sid,
        meta={},
        created_at=now,
    )


def prediction_row(
    run_id: str, sample_id: str, outcome: str, score: float | None, evidence: list[str], now: datetime
) -> dict[str, Any]:
    """A ``prediction`` row (dict for ``sa.insert(Prediction)``) of a benchmark run: no tokens, no cost,
    not cached, empty ``meta``."""
    return dict(
        run_id=run_id,
        sample_id=sample_id,
        outcome=outcome,
        score=score,
        evidence=evidence,
        meta={},
        created_at=now,
        tokens_in=0,
        tokens_out=0,
        cost_usd=0.0,
        cached=False,
    )
