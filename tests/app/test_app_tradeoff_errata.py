"""AppTest: the Trade-off page says how many scored samples of the edition drawn the project's errata mark wrong
or doubtful, and which edition leaves them out (fresh-user trial: the paper edition's MR/FAR said nothing of it)."""

from __future__ import annotations

import json
import re

import sqlalchemy as sa

import app_seed
from automonitor.escaping import md_escape
from apptest_support import StoreEnv, app, ok, open_store


def _plain(at) -> list[str]:
    """The captions of the page, markdown escapes removed (they are ``md_escape``d for ``st.caption``)."""
    return [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]


def test_the_page_says_how_many_scored_samples_errata_mark(tmp_path):
    url = f"sqlite:///{tmp_path / 'errata.db'}"
    eng = open_store(url)
    app_seed.seed_store(eng, pairs_per_cell=2, runs=2, hostile=False)
    with eng.begin() as c:
        pairs = [
            r[0] for r in c.execute(sa.text("select distinct pair_id from sample where split = 'test' order by 1"))
        ]
        for pair, verdict in zip(pairs[:3], ("wrong", "doubtful", "doubtful")):
            meta = {"erratum": {"verdict": verdict, "reason": "[x](javascript:1)", "reader": "r", "date": "2026-01-01"}}
            c.execute(sa.text("update sample set meta = :m where pair_id = :p"), {"m": json.dumps(meta), "p": pair})
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())
            line = (
                "paper edition: 2 scored samples are marked wrong and 4 doubtful by errata; "
                "the verified edition leaves them out."
            )
            assert line in _plain(at), _plain(at)
            # escaped for st.caption like every other text of the page
            assert md_escape(line) in [c.value for c in at.caption]
    finally:
        eng.dispose()


def test_no_line_when_no_scored_sample_is_marked(tmp_path):
    url = f"sqlite:///{tmp_path / 'clean.db'}"
    eng = open_store(url)
    app_seed.seed_store(eng, pairs_per_cell=2, runs=2, hostile=False)
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())
            assert not [c for c in _plain(at) if "errata" in c]
    finally:
        eng.dispose()
