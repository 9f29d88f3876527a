"""AppTest of the Trade-off page's audit flags (pages/tradeoff.py): on a real SQLite store whose ``paper``
and ``verified`` editions each hold a different source with a length shortcut, the page shows the badge
and the note under the plot ("a trivial baseline (...) reaches AUROC ... here") of the edition shown, and
those of the other edition when that one is picked; never the other edition's."""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, html_bodies, ok, open_store
from audit_seed import made_up_pairs, seed_frame, store_rows

#: (source, category, task, shortcut, edition whose test set holds its test pairs)
SOURCES = [
    ("p-short", "specification_gaming", "code", True, "paper"),
    ("v-short", "safety_permission", "code", True, "verified"),
    ("fair", "safety_permission", "qa", False, "both"),
]


@pytest.fixture(scope="module")
def audit_store(tmp_path_factory):
    from store import session_scope
    from store.models import EditionSample, Run

    rng = np.random.default_rng(5)
    rows = []
    for source, cat, task, shortcut, _ in SOURCES:
        for split, n in (("train", 30), ("test", 12)):
            rows += made_up_pairs(
                rng,
                n=n,
                split=split,
                source=source,
                category=cat,
                task=task,
                shortcut=shortcut,
                prefix=f"{source}-{split}",
            )
    frame = pd.DataFrame(rows)
    d = tmp_path_factory.mktemp("tradeoff_audit")
    url = f"sqlite:///{d / 'store.db'}"
    eng = open_store(url)
    seed_frame(eng, frame)
    samples = store_rows(frame)
    members = {"paper": [], "verified": []}
    for source, *_, edition in SOURCES:
        ids = frame[(frame["split"] == "test") & (frame["source"] == source)]["id"]
        for ed in ("paper", "verified") if edition == "both" else (edition,):
            members[ed] += list(ids)
    with session_scope(eng) as s:
        s.add_all([EditionSample(edition=ed, sample_id=i) for ed, ids in members.items() for i in ids])
    for ed in ("paper", "verified"):  # one run per edition, judging that edition's test set
        ids = set(members[ed])
        rid = app_seed.add_run(
            eng, [r for r in samples if r["id"] in ids], monitor="rules", template="direct", run_id=f"run-{ed}"
        )
        with session_scope(eng) as s:
            s.execute(sa.update(Run).where(Run.id == rid).values(edition=ed))
    old = os.environ.get("AUTOMONITOR_CACHE_DIR")
    os.environ["AUTOMONITOR_CACHE_DIR"] = str(d / "cache")
    with StoreEnv(url):
        yield url
    if old is None:
        os.environ.pop("AUTOMONITOR_CACHE_DIR", None)
    else:
        os.environ["AUTOMONITOR_CACHE_DIR"] = old
    eng.dispose()


def _badges(at) -> str:
    return "".join(h for h in html_bodies(at) if 'data-testid="audit-flags"' in h)


def _note(at) -> str:
    """The audit note under the plot, markdown escapes removed (it is ``md_escape``d for ``st.caption``)."""
    plain = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]
    return next((c for c in plain if c.startswith("Benchmark health (edition")), "")


@pytest.mark.parametrize("edition, other", [("paper", "verified"), ("verified", "paper")])
def test_trade_off_shows_the_audit_flags_of_the_edition_shown(audit_store, edition, other):
    at = ok(app("pages/tradeoff.py", edition=edition, min_n="1").run())
    mine = "p-short" if edition == "paper" else "v-short"
    theirs = "v-short" if edition == "paper" else "p-short"
    badges = _badges(at)
    assert f'data-edition="{edition}"' in badges and f"audit flag ({edition}): {mine}" in badges, badges
    assert f'data-edition="{other}"' not in badges and theirs not in badges and "fair" not in badges
    note = _note(at)
    assert note.startswith(f"Benchmark health (edition {edition}): in "), note
    assert "a trivial baseline (" in note and ") reaches AUROC " in note and f"here (edition {edition}" in note
    assert other not in note.split("(edition")[1]
    # the other edition picked under Options: its badge and note replace these
    at.selectbox(key="tradeoff.edition").set_value(other).run()
    ok(at)
    badges = _badges(at)
    assert f"audit flag ({other}): {theirs}" in badges and f'data-edition="{edition}"' not in badges
    assert f"here (edition {other}" in _note(at)


def test_all_editions_show_the_flags_of_each_edition_drawn(audit_store):
    at = ok(app("pages/tradeoff.py", min_n="1").run())
    badges = _badges(at)
    assert "audit flag (paper): p-short" in badges and "audit flag (verified): v-short" in badges
    assert _note(at).startswith("Benchmark health (editions paper, verified): in ")
