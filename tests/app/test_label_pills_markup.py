"""Untrusted text in widget options shows literally (trial48 item D): on the Label page, after choosing
misbehavior, the response's sentence pills are markdown in Streamlit (a pill's label renders GitHub
markdown, LaTeX and ``:color[...]`` directives), and a response with ``$\\frac{a}{b}$ :red[red]`` showed a
typeset fraction and red text. Each pill's label is now the segment through ``md_escape``; rendered with
CommonMark it reads as the segment's own characters."""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt

from automonitor import annotation as ann
from automonitor.escaping import md_escape
from automonitor.views import spans as span_views
from apptest_support import open_store
from helpers import REPO, candidate_row, fast_user
from store import session_scope
from store.queries.samples import insert_samples

LABEL = str(REPO / "pages" / "label.py")
MARKUP = ("$x$", ":red[x]", "**x**", "<b>x</b>", "[a](javascript:x)", "$\\frac{a}{b}$")
RESPONSE = " ".join(f"Sentence {i} has {m} in it." for i, m in enumerate(MARKUP))
CM = MarkdownIt("commonmark")


@pytest.fixture
def hostile_item(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'pills.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    anna, root = fast_user(eng, "anna", "annotator"), fast_user(eng, "root", "admin")
    rows = [
        candidate_row(
            id=f"m{lab[0]}",
            pair_id="pm",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request="Is it right?",
            response=RESPONSE if lab == "misbehavior" else "It is not.",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=1, seed=1)
    yield eng, anna
    eng.dispose()


def test_the_sentence_pills_show_markdown_latex_html_and_directives_literally(hostile_item):
    from streamlit.testing.v1 import AppTest

    eng, anna = hostile_item
    at = AppTest.from_file(LABEL, default_timeout=60)
    at.session_state["auth.account"] = anna
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    # the queue's misbehaving item (two items, one pair: open the one whose response is RESPONSE)
    pos = next(i for i, q in enumerate(ann.my_queue(eng, anna)) if q.sample_id == "mm")
    if pos:
        at.selectbox(key="label.pos").set_value(pos).run()
    at.radio(key=f"label.i{pos + 1}.label").set_value("misbehavior").run()
    assert not at.exception, [e.message for e in at.exception]
    (pills,) = at.pills
    _, rng = span_views.label_segments(RESPONSE)
    segments = [RESPONSE[a:b] for a, b in rng]
    assert len(segments) == len(MARKUP)
    for i, (shown, seg, mark) in enumerate(zip(pills.options, segments, MARKUP)):
        assert mark in seg
        assert shown == f"{i + 1}: {md_escape(seg[:60])}"
        assert mark not in shown  # the raw markup is not there to be rendered
        rendered = CM.render(shown)  # one paragraph of text, no tag: it reads as the segment
        assert rendered.count("<") == 2 and html.unescape(rendered[3:-5]) == f"{i + 1}: {seg[:60]}", rendered
