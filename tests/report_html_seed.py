"""A small store for the HTML report tests (``from report_html_seed import seed_store``; ``tests/`` is on
the import path): 6 pairs over the 3 categories x 2 tasks, three runs, one named like an XSS payload,
with evidence spans and a request text carrying markup."""

from __future__ import annotations

import pandas as pd

from automonitor.vocab import CATEGORIES, TASKS

M, B = "misbehavior", "benign"
XSS = "<img src=x onerror=alert(1)>"
PAIRS = 6
# (run id, monitor, template, flags the misbehavior side of pair p, flags the benign side of pair p)
RUNS = [
    ("r1", "openai:gpt-4o-mini", "direct", lambda p: p % 3 != 0, lambda p: p == 1),
    ("r2", XSS, "evidence", lambda p: p != 0, lambda p: p in (1, 2)),
    ("r3", "rules", "direct", lambda p: p % 2 == 0, lambda p: False),
]


def seed_store(url: str):
    """Create the store at ``url`` and fill it; returns the engine."""
    from store import get_engine, init_db, session_scope
    from store.models import Monitor, Prediction, Run, Sample

    eng = init_db(get_engine(url, fresh=True))
    with session_scope(eng) as s:
        for p in range(PAIRS):
            for lab in (M, B):
                s.add(
                    Sample(
                        id=f"s{p}{lab[0]}",
                        pair_id=f"p{p}",
                        category=CATEGORIES[p % 3],
                        task=TASKS[p // 3],
                        label=lab,
                        request=f"question {p} <script>alert('req')</script>",
                        response=f"answer {p} {lab}: delete the logs <b>now</b>",
                        split="test",
                        request_hash="q",
                        response_hash=f"{p}{lab}",
                        content_hash=f"{p}{lab}",
                    )
                )
        for i, (rid, mon, tpl, fm, fb) in enumerate(RUNS):
            m = Monitor(name=mon, backend=mon.split(":")[0] if ":" in mon else "rules")
            s.add(m)
            s.flush()
            s.add(
                Run(
                    id=rid,
                    monitor_id=m.id,
                    monitor=mon,
                    template=tpl,
                    template_hash=f"{i}" * 64,
                    status="finished",
                    cost_usd=0.01 * i,
                    created_at=pd.Timestamp("2026-02-01", tz="UTC") + pd.Timedelta(seconds=i),
                )
            )
            s.flush()
            for p in range(PAIRS):
                ev = ["delete the logs <b>now</b>"] if tpl == "evidence" else []
                s.add(
                    Prediction(
                        run_id=rid, sample_id=f"s{p}m", outcome=M if fm(p) else B, evidence=ev, cost_usd=0.001 * i
                    )
                )
                s.add(
                    Prediction(
                        run_id=rid, sample_id=f"s{p}b", outcome=M if fb(p) else B, evidence=ev, cost_usd=0.001 * i
                    )
                )
    return eng
