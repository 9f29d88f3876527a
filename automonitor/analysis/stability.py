"""Stability of a judge across repeats (``automonitor run --repeat K``).

A run judged with ``--repeat K`` holds K predictions per sample (repeat 0..K-1, distinct seeds). The
run's verdict of a sample, used for miss rate / false alarm rate everywhere, is **repeat 0** (the first
judgement, what a single run would have given); the repeats only measure how stable that verdict is:

- ``flip_rate``: share of samples whose K outcomes are not all the same (a sample "flips");
- ``mean_disagreement``: mean over samples of the share of repeats whose outcome differs from the
  sample's repeat 0;
- ``majority_differs``: share of samples whose majority outcome (most frequent of the K; a tie is
  broken in favour of repeat 0's outcome) differs from repeat 0;
- ``fleiss_kappa``: Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many
  raters", Psychological Bulletin 76(5)) across the K repeats as raters, over three categories
  ``misbehavior`` / ``benign`` / ``unscored`` (invalid, refusal, error), computed by
  ``statsmodels.stats.inter_rater.fleiss_kappa``; ``None`` when undefined (fewer than 2 repeats or
  all answers in one category).

Samples with a repeat still pending are left out (``samples`` counts those used).
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from sqlalchemy.engine import Engine

from automonitor.analysis.report_schema import Stability
from automonitor.jsontypes import JSONObject
from store.queries.repeats import repeat_outcomes, run_params

CATS = ("misbehavior", "benign", "unscored")


def _cat(outcome: str | None) -> str:
    return outcome if outcome in ("misbehavior", "benign") else "unscored"


def repeat_verdicts(engine: Engine, run_id: str) -> dict[str, list[str | None]]:
    """``{sample_id: [outcome of repeat 0, 1, ..., K-1]}`` (``None`` for a pending repeat) of a run."""
    out: dict[str, list[str | None]] = {}
    with engine.connect() as c:
        for sid, rep, outcome in repeat_outcomes(c, run_id):
            lst = out.setdefault(sid, [])
            while len(lst) <= int(rep):
                lst.append(None)
            lst[int(rep)] = outcome
    return out


def stability(engine: Engine, run_id: str, params: JSONObject | None = None) -> Stability | None:
    """Stability measures of a repeated run (see the module docstring).

    ``params``: the run's ``params`` when the caller has read them already (the report's runs frame: one query
    for every run instead of one per run); read from the store when ``None``.
    Returns the :class:`~automonitor.analysis.report_schema.Stability` (``repeats`` K, ``samples``,
    ``flip_rate``, ``mean_disagreement``, ``majority_differs`` in [0, 1], ``fleiss_kappa``), or ``None``
    for a run judged once.
    """
    if params is None:
        with engine.connect() as c:
            params = run_params(c, run_id)
    judge = params.get("judge")
    repeat = judge.get("repeat") if isinstance(judge, dict) else None
    k = int(repeat) if isinstance(repeat, (int, float, str)) and repeat else 1
    if k < 2:
        return None
    by_sample = repeat_verdicts(engine, run_id)
    complete = [v for v in by_sample.values() if len(v) == k and all(o is not None for o in v)]
    n = len(complete)
    if n == 0:
        return Stability(
            repeats=k, samples=0, flip_rate=None, mean_disagreement=None, majority_differs=None, fleiss_kappa=None
        )
    flips = dis = maj = 0.0
    table = []
    for v in complete:
        cats = [_cat(o) for o in v]
        cnt = Counter(cats)
        table.append([cnt.get(c, 0) for c in CATS])
        flips += len(cnt) > 1
        dis += sum(c != cats[0] for c in cats[1:]) / (k - 1)
        top = max(cnt.values())
        tied = [c for c, m in cnt.items() if m == top]
        maj += cats[0] not in tied
    kappa = None
    with contextlib.suppress(ZeroDivisionError, ValueError, FloatingPointError):  # undefined: None
        from statsmodels.stats.inter_rater import fleiss_kappa

        val = float(fleiss_kappa(table, method="fleiss"))
        kappa = round(val, 6) if math.isfinite(val) else None
    return Stability(
        repeats=k,
        samples=n,
        flip_rate=round(flips / n, 6),
        mean_disagreement=round(dis / n, 6),
        majority_differs=round(maj / n, 6),
        fleiss_kappa=kappa,
    )
