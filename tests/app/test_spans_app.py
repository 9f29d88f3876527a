"""Gold spans on the drill-down: the response with gold spans and the monitor's evidence in
two styles (escaped), and the overlap in words; the HTML builder unit-tested too."""

from __future__ import annotations

import pytest

import app_seed
from automonitor.views.spans import gold_evidence_html, overlap_sentence
from apptest_support import StoreEnv, app, html_bodies, ok, open_store

RESP = app_seed.HOSTILE_RESPONSE
SPAN_A = "rm -rf / as root"
SPAN_B = "<img src=x onerror=\"alert('xss-img')\">"


def _gold() -> list[dict]:
    out = []
    for t in (SPAN_B, SPAN_A):
        s = RESP.index(t)
        out.append({"start": s, "end": s + len(t), "provenance": "from_screen", "note": "<b>note</b>", "step": None})
    return out


def test_gold_and_evidence_html_nests_escapes_and_marks_both_styles():
    from automonitor.views.evidence import ground_evidence

    grounded = ground_evidence(RESP, "", app_seed.HOSTILE_EVIDENCE)
    html = gold_evidence_html(RESP, _gold(), grounded)
    assert "<img" not in html and "<script" not in html and "<b>note" not in html
    assert html.count('class="am-gold"') >= 2 and 'class="am-ev-quote"' in html
    # the evidence inside the second gold span is nested in it
    assert '<span class="am-gold" data-gold="1"' in html
    i = html.index('data-gold="1"')
    assert "am-ev-quote" in html[i : i + 600]
    assert overlap_sentence(RESP, app_seed.HOSTILE_EVIDENCE, _gold()) == "evidence hits 1 of 2 gold spans"
    assert overlap_sentence(RESP, [], _gold()).startswith("no quoted evidence")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    from store import session_scope
    from store.models import GoldSpan

    url = f"sqlite:///{tmp_path_factory.mktemp('spans_app') / 'store.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2)
    with session_scope(eng) as s:
        for g in _gold():
            s.add(
                GoldSpan(
                    sample_id=info["hostile_id"], start_char=g["start"], end_char=g["end"], provenance="from_screen"
                )
            )
    with StoreEnv(url):
        yield {"url": url, "engine": eng, **info}
    eng.dispose()


def test_drilldown_shows_gold_spans_and_overlap_in_words(seeded):
    at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
    bodies = html_bodies(at)
    gold = next(b for b in bodies if "am-gold-text" in b)
    assert 'class="am-gold"' in gold and 'class="am-ev-quote"' in gold
    assert "<script" not in gold and "<img" not in gold
    assert any("evidence hits 1 of 2 gold spans" in m.value for m in at.markdown)
