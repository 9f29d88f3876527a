"""AppTest of the "Benchmark health" page (pages/health.py) on a real SQLite store: edition switch in the
URL, flagged slices highlighted, leakage and controls figures, hostile source names escaped."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from apptest_support import StoreEnv, app_test, open_store, page_path
from audit_seed import made_up_pairs, seed_frame

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def health_store(tmp_path_factory):
    from store import session_scope
    from store.models import EditionSample

    rng = np.random.default_rng(11)
    rows = []
    for split, n in (("train", 30), ("test", 12)):
        rows += made_up_pairs(
            rng,
            n=n,
            split=split,
            source=HOSTILE,
            category="specification_gaming",
            task="code",
            shortcut=True,
            prefix=f"h-{split}",
        )
        rows += made_up_pairs(
            rng,
            n=n,
            split=split,
            source="fair",
            category="safety_permission",
            task="qa",
            shortcut=False,
            prefix=f"f-{split}",
        )
    frame = pd.DataFrame(rows)
    d = tmp_path_factory.mktemp("health")
    url = f"sqlite:///{d / 'store.db'}"
    eng = open_store(url)
    seed_frame(eng, frame)
    with session_scope(eng) as s:  # the verified edition: only the fair test pairs
        s.add_all(
            [
                EditionSample(edition="verified", sample_id=i)
                for i in frame[(frame["split"] == "test") & (frame["source"] == "fair")]["id"]
            ]
        )
    old = os.environ.get("AUTOMONITOR_CACHE_DIR")
    os.environ["AUTOMONITOR_CACHE_DIR"] = str(d / "cache")
    with StoreEnv(url):
        yield url
    if old is None:
        os.environ.pop("AUTOMONITOR_CACHE_DIR", None)
    else:
        os.environ["AUTOMONITOR_CACHE_DIR"] = old
    eng.dispose()


def _health(**params):

    at = app_test(120)
    at.run()
    at.switch_page(page_path("pages/health.py"))
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_health_page_flags_escapes_and_switches_edition(health_store):
    at = _health()
    assert at.title[0].value == "Benchmark health"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Flagged slices"] == "2 of 4"  # the length shortcut: its source slice and its cell
    table = at.dataframe[0].value
    table = table.data if hasattr(table, "data") else table  # a Styler carries the frame in .data
    flagged = table.loc[table["flagged"], "source"].tolist()
    assert HOSTILE in flagged and "fair" not in flagged
    # what decides a flag comes first (fresh-user trial: at 1280 px the AUROCs and the flag were off screen)
    shown = list(at.dataframe[0].proto.column_order)
    assert shown[:7] == ["source", "category", "task", "length", "tfidf", "answer = suggestion", "flagged by"]
    assert shown[-2:] == ["label source", "notes"] and "flagged" not in shown
    # the hostile name is plain text in the table and escaped inside the plotly figures
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    blob = json.dumps(figs)
    assert "&lt;img src=x onerror=alert(1)&gt;" in blob and HOSTILE not in blob
    assert any("No controls samples" in c.value for c in at.caption)

    at.segmented_control(key="health.edition").set_value("verified")
    at.run()
    assert not at.exception
    assert at.query_params.get("edition") == "verified"
    assert {m.label: m.value for m in at.metric}["Flagged slices"] == "0 of 2"
    # a shared link opens the same edition
    at2 = _health(edition="verified")
    assert at2.segmented_control(key="health.edition").value == "verified"


def test_health_page_on_an_empty_store(tmp_path):
    with StoreEnv(f"sqlite:///{tmp_path / 'empty.db'}"):
        at = _health()
        assert any("No samples in the store yet" in i.value for i in at.info)
