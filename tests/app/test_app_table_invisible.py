"""Invisible characters in sample text are shown as ``⟨U+XXXX⟩`` markers in the tables of the Samples page
and of a Drill-down cell too, not only in the sample's text blocks (fresh-user trial 44: a request holding a
right-to-left override, ``zero\\u200bwidth request \\u202e RTL override``, read ``zerowidth request edirrevo
LTR`` in both tables, the zero-width space hidden and the override in effect)."""

from __future__ import annotations

import pytest

from app_seed import add_run, insert_samples, make_samples
from apptest_support import StoreEnv, app, ok, open_store

SPOOF = "zero\u200bwidth request \u202e RTL override"


@pytest.fixture(scope="module")
def spoof_store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('bidi') / 'store.db'}"
    eng = open_store(url)
    rows = make_samples(1, hostile=False)
    for r in rows:
        r["request"] = f"{SPOOF} {r['request']}"
        r["response"] = f"{SPOOF} {r['response']}"
    insert_samples(eng, rows)
    add_run(eng, rows, monitor="rules", template="direct", run_id="r000", skill=0.9, unscored=0.0)
    with StoreEnv(url):
        yield eng
    eng.dispose()


def _clean(values) -> bool:
    texts = [str(v) for v in values]
    return bool(texts) and all(
        "\u202e" not in t and "\u200b" not in t and "\u27e8U+202E\u27e9" in t and "\u27e8U+200B\u27e9" in t
        for t in texts
    )


def test_samples_table_shows_markers(spoof_store):
    table = ok(app("pages/samples.py").run()).dataframe[0].value
    assert _clean(table["request"]) and _clean(table["response"])


@pytest.mark.parametrize("cell", ["tp", "tn"])
def test_drilldown_cell_table_shows_markers(spoof_store, cell):
    at = ok(app("pages/drilldown.py", run="r000", cell=cell).run())
    table = at.dataframe[0].value
    assert _clean(table["request_preview"]) and _clean(table["response_preview"])
