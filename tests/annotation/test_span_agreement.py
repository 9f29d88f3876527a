"""Span agreement: span F1 and token-level Krippendorff's alpha on annotators' evidence
spans, in ``agreement`` and on the Agreement page."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from automonitor.annotation.span_agreement import span_agreement

TEXT = "one two three four five six"  # tokens at 0-3, 4-7, 8-13, 14-18, 19-23, 24-27


def _row(sid, who, s, e, label="misbehavior"):
    return {"sample_id": sid, "annotator": who, "label": label, "evidence_start": s, "evidence_end": e}


def test_span_f1_and_token_alpha_by_hand():
    rows = [_row("x", "a", 0, 7), _row("x", "b", 4, 13), _row("y", "a", 14, 18), _row("y", "b", 14, 18)]
    rows += [_row("z", "a", 0, 3), _row("z", "b", 0, 3, label="benign")]  # b said benign: not compared
    got = span_agreement(rows, {"x": TEXT, "y": TEXT, "z": TEXT})
    assert got["items"] == 2 and got["pairs"] == 2 and got["exact"] == 0.5
    # x: |A|=7, |B|=9, overlap [4,7) = 3 -> 6/16; y identical -> 1
    assert got["span_f1"] == pytest.approx((6 / 16 + 1.0) / 2)
    a = [1, 1, 0, 0, 0, 0] + [0, 0, 0, 1, 0, 0]
    b = [0, 1, 1, 0, 0, 0] + [0, 0, 0, 1, 0, 0]
    want = krippendorff.alpha(reliability_data=np.array([a, b], dtype=float), level_of_measurement="nominal")
    assert got["token_alpha"] == pytest.approx(want) and got["tokens"] == 12
    empty = span_agreement([], {})
    assert empty == {
        "items": 0,
        "pairs": 0,
        "span_f1": None,
        "span_f1_ci": None,
        "too_few": True,
        "min_items": 10,
        "exact": None,
        "token_alpha": None,
        "tokens": 0,
    }


def test_span_agreement_on_too_few_items_has_no_interval_and_enough_items_get_one():
    """The label agreement's rule holds for spans too: under ``min_items`` compared items the result is
    ``too_few`` with no interval (the fresh-user trial saw span F1 0.000 on 1 item shown as if precise);
    with enough items a percentile bootstrap over items brackets the mean pairwise F1."""
    rows = [_row("x", "a", 0, 7), _row("x", "b", 4, 13)]
    few = span_agreement(rows, {"x": TEXT})
    assert few["too_few"] is True and few["span_f1_ci"] is None and few["items"] == 1
    many_rows, texts = [], {}
    for i in range(12):
        texts[f"s{i}"] = TEXT
        many_rows += [_row(f"s{i}", "a", 0, 7), _row(f"s{i}", "b", 4 if i % 2 else 0, 13 if i % 2 else 7)]
    many = span_agreement(many_rows, texts, min_items=10, n_boot=500, seed=3)
    lo, hi = many["span_f1_ci"]
    assert many["too_few"] is False and lo < many["span_f1"] < hi and 0 <= lo and hi <= 1
    assert span_agreement(many_rows, texts, min_items=13)["span_f1_ci"] is None  # 12 items < 13


def test_agreement_document_and_page_show_span_agreement(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from automonitor.annotation import agreement as ag
    from automonitor import annotation as ann
    from helpers import REPO, candidate_row, fast_user
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    url = f"sqlite:///{tmp_path / 'a.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = init_db(get_engine(url, fresh=True))
    users = {n: fast_user(eng, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(eng, "root", "admin")
    rows = []
    for p in range(2):
        for lab in ("misbehavior", "benign"):
            rows.append(
                candidate_row(
                    id=f"i{p}{lab[0]}",
                    pair_id=f"pp{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=f"req {p}",
                    response=TEXT + f" {p} {lab}",
                )
            )
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=2, seed=1)
    for name, span in (("anna", (0, 7)), ("bert", (4, 13))):
        for item in ann.my_queue(eng, users[name]):
            ann.save_label(eng, users[name], item.sample_id, "misbehavior", evidence=span)
    assert ag.agreement(eng, root, n_boot=0)["spans"]["items"] == 0  # drafts do not count by default
    for name in ("anna", "bert"):
        ann.submit_batch(eng, users[name])
    doc = ag.agreement(eng, root, n_boot=0)
    assert doc["spans"]["items"] == 4 and doc["spans"]["span_f1"] == pytest.approx(6 / 16)
    at = AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60)
    at.session_state["auth.account"] = root
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    m = {x.label: x.value for x in at.metric}
    assert m["Span F1"] == f"{6 / 16:.3f}" and m["Items with 2+ spans"] == "4"
    assert any("too few items" in c.value for c in at.caption)  # 4 items < the default 10: greyed, no interval
    eng.dispose()


def test_adjudication_stores_resolved_spans_as_annotated_gold_spans(tmp_path):
    from automonitor import annotation as ann
    from automonitor.errors import InputError
    from helpers import candidate_row, fast_user
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples
    from store.queries.spans import spans_by_sample

    eng = init_db(get_engine(f"sqlite:///{tmp_path / 'adj.db'}", fresh=True))
    users = {n: fast_user(eng, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(eng, "root", "admin")
    rows = [
        candidate_row(
            id=f"j{lab[0]}",
            pair_id="pj",
            category="specification_gaming",
            task="code",
            label=lab,
            request="req",
            response=TEXT + f" {lab}",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=2, seed=1)
    ann.save_label(eng, users["anna"], "jm", "misbehavior", evidence=(0, 7))
    ann.save_label(eng, users["bert"], "jm", "misbehavior", evidence=(4, 13))
    marks = [_row("jm", "a", 0, 7), _row("jm", "b", 4, 13), _row("jm", "c", 20, 23), _row("jm", "d", 1, 2, "benign")]
    assert ann.proposed_spans(marks) == [(0, 13), (20, 23)]  # overlapping marks merged, benign ignored
    with pytest.raises(InputError) as bad:
        ann.adjudicate(eng, root, "jm", "misbehavior", spans=[(0, 999)])
    assert bad.value.field == "spans[0].end"
    with pytest.raises(InputError):
        ann.adjudicate(eng, root, "jm", "benign", spans=[(0, 3)])
    ann.adjudicate(eng, root, "jm", "misbehavior", spans=[(4, 7), (14, 18)])
    with session_scope(eng) as s:
        got = spans_by_sample(s, ["jm"])["jm"]
    assert [(g["start"], g["end"], g["provenance"]) for g in got] == [(4, 7, "annotated"), (14, 18, "annotated")]
    ann.adjudicate(eng, root, "jm", "benign")  # a superseding benign decision drops them
    with session_scope(eng) as s:
        assert spans_by_sample(s, ["jm"]) == {}
    eng.dispose()
