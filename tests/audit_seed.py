"""Made-up audit frames shared by ``data/test_audit.py`` and ``app/test_app_health.py``: pairs with or
without a length shortcut, and a store seeded from such a frame (``from audit_seed import ...``;
``tests/`` is on the import path)."""

from __future__ import annotations

import pandas as pd

from helpers import candidate_row

M, B = "misbehavior", "benign"
VOCAB = [f"w{i}" for i in range(300)]


def words(rng, n: int) -> str:
    """``n`` words drawn by ``rng`` (a numpy ``Generator``) from :data:`VOCAB`, space-separated."""
    return " ".join(rng.choice(VOCAB, size=n))


def made_up_pairs(
    rng, *, n: int, split: str, source: str, category: str, task: str, shortcut: bool, prefix: str
) -> list[dict]:
    """``n`` made-up pairs; with ``shortcut`` the misbehavior side is ~5x longer, else both sides are
    drawn from the same length distribution and vocabulary."""
    rows = []
    for p in range(n):
        req = f"{prefix} request {p} " + words(rng, 8)
        for lab in (M, B):
            k = int(rng.integers(60, 90)) if (shortcut and lab == M) else int(rng.integers(10, 18))
            rows.append(
                {
                    "id": f"{prefix}-{p}-{lab[0]}",
                    "pair_id": f"{prefix}-{p}",
                    "category": category,
                    "task": task,
                    "label": lab,
                    "request": req,
                    "response": words(rng, k),
                    "source": source,
                    "label_source": "by_construction",
                    "split": split,
                    "meta": {},
                }
            )
    return rows


def store_rows(frame: pd.DataFrame) -> list[dict]:
    """``insert_samples`` column dicts, status ``gold``, for the rows of ``frame``."""
    rows = []
    for r in frame.to_dict("records"):
        rows.append(
            candidate_row(
                request=r["request"],
                response=r["response"],
                label=r["label"],
                status="gold",
                id=r["id"],
                pair_id=r["pair_id"],
                category=r["category"],
                task=r["task"],
                source=r["source"],
                split=r["split"],
                label_source=r["label_source"],
            )
        )
    return rows


def seed_frame(engine, frame) -> None:
    """Insert every row of ``frame`` (as :func:`made_up_pairs` writes them) as a gold sample."""
    from store import session_scope
    from store.queries.samples import insert_samples

    with session_scope(engine) as s:
        insert_samples(s, store_rows(frame))
