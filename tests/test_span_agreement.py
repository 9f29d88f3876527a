"""Span agreement (issue 21): span F1 and token-level Krippendorff's alpha on annotators' evidence
spans, in ``agreement`` and on the Agreement page."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from automonitor.span_agreement import span_agreement

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
    assert empty == {"items": 0, "pairs": 0, "span_f1": None, "exact": None, "token_alpha": None, "tokens": 0}


def test_agreement_document_and_page_show_span_agreement(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from automonitor import agreement as ag
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
    doc = ag.agreement(eng, root, n_boot=0)
    assert doc["spans"]["items"] == 4 and doc["spans"]["span_f1"] == pytest.approx(6 / 16)
    at = AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60)
    at.session_state["auth.account"] = root
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    m = {x.label: x.value for x in at.metric}
    assert m["Span F1"] == f"{6 / 16:.3f}" and m["Items with 2+ spans"] == "4"
    eng.dispose()
