"""The Adjudicate page resolves a span disagreement with the Label page's segment marker: the reason
and the lowest span F1 are shown, each annotator's marks (names hidden), the segments pre-marked with
their merge; the keys N / P / X / U (the buttons they press) change the marks and S stores them as
``annotated`` gold spans. The exact-offsets field overrides the marks."""

from __future__ import annotations

import pytest

from automonitor import annotation as ann
from apptest_support import open_store
from helpers import REPO, candidate_row, fast_user
from store import session_scope
from store.queries.samples import insert_samples
from store.queries.spans import spans_by_sample

ADJUDICATE = str(REPO / "pages" / "adjudicate.py")
CODE = "def solve(n):\n    if n == 3:\n        return 42\n    x = n * 2\n    return x\n"
LINES = ["def solve(n):", "if n == 3:", "return 42", "x = n * 2", "return x"]
SPAN = {i: (CODE.index(t), CODE.index(t) + len(t)) for i, t in enumerate(LINES)}  # 0-based line -> offsets


@pytest.fixture
def disputed(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'adj.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    users = {n: fast_user(eng, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(eng, "root", "admin")
    rows = [
        candidate_row(
            id=f"{pid}-{lab[0]}",
            pair_id=pid,
            category="specification_gaming",
            task="code",
            label=lab,
            request=f"Solve {pid}.",
            response=CODE + f"# {pid}\n" if lab == "misbehavior" else f"def solve(n):\n    return n * 2  # {pid}\n",
        )
        for pid in ("pa", "pb")
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=2, seed=1)
    for pid in ("pa", "pb"):
        ann.save_label(eng, users["anna"], f"{pid}-m", "misbehavior", evidence=[SPAN[1]])
        ann.save_label(eng, users["bert"], f"{pid}-m", "misbehavior", evidence=[SPAN[3]])
        for u in users.values():
            ann.save_label(eng, u, f"{pid}-b", "benign")
    for u in users.values():
        ann.submit_batch(eng, u)
    yield eng, root
    eng.dispose()


def _gold(eng, sid):
    with session_scope(eng) as s:
        return [(g["start"], g["end"], g["provenance"], g["note"]) for g in spans_by_sample(s, [sid]).get(sid, [])]


def test_adjudicator_resolves_a_span_disagreement_with_the_segment_marker(disputed):
    from streamlit.testing.v1 import AppTest

    eng, root = disputed
    at = AppTest.from_file(ADJUDICATE, default_timeout=60)
    at.session_state["auth.account"] = root
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["adjudicate.item"] == "pa-m"
    shown = "\n".join(str(m.value).replace("\\", "") for m in (*at.markdown, *at.caption))
    assert "span_disagreement" in shown
    assert "lowest pairwise span F1 0.00" in shown
    k = "adjudicate.pa-m.spans"
    at.button(key="adjudicate.key_misbehavior").click().run()  # 1
    captions = [c.value.replace("\\", "") for c in at.caption]  # markdown escapes removed
    # each annotator's marks for the adjudicator, names hidden
    assert any(f"{SPAN[1][0]}:{SPAN[1][1]} (lines 2)" in c for c in captions)
    assert any(f"{SPAN[3][0]}:{SPAN[3][1]} (lines 4)" in c for c in captions)
    assert not any("anna" in c or "bert" in c for c in captions)
    assert at.session_state[f"{k}.segs"] == [1, 3]  # pre-marked with the proposal
    assert at.text_input(key=f"{k}.offsets").value == ""  # whole lines: no override needed
    shortcuts = {b.proto.shortcut.lower() for b in at.button if b.key and b.key.startswith(k)}
    assert shortcuts == {"n", "p", "x", "u"}
    press = lambda name: at.button(key=f"{k}.{name}").click().run()  # noqa: E731
    press("seg_next")  # N: cursor on line 2
    press("seg_toggle")  # X: unmark line 2
    assert at.session_state[f"{k}.segs"] == [3]
    press("seg_undo")  # U
    assert at.session_state[f"{k}.segs"] == [1, 3]
    press("seg_next")  # N: line 3
    press("seg_toggle")  # X: mark it
    press("seg_next")  # N: line 4
    press("seg_toggle")  # X: unmark it
    assert at.session_state[f"{k}.segs"] == [1, 2]
    at.button(key="adjudicate.record").click().run()  # S
    assert not at.exception, [e.message for e in at.exception]
    assert any("Decision recorded: Misbehavior (gold)" in s.value for s in at.success)
    assert _gold(eng, "pa-m") == [(SPAN[1][0], SPAN[2][1], "annotated", "adjudicated by root")]
    # next item: exact offsets override the marks
    assert at.session_state["adjudicate.item"] == "pb-m"
    at.button(key="adjudicate.key_misbehavior").click().run()
    at.text_input(key="adjudicate.pb-m.spans.offsets").set_value(f"{SPAN[4][0]}:{SPAN[4][1]}")
    at.button(key="adjudicate.record").click().run()
    assert _gold(eng, "pb-m") == [(*SPAN[4], "annotated", "adjudicated by root")]
    assert ann.adjudication_queue(eng, root) == []
    res = ann.finalize_pairs(eng, root)
    assert sorted(res.accepted) == ["pa", "pb"]
    assert _gold(eng, "pa-m") == [(SPAN[1][0], SPAN[2][1], "annotated", "adjudicated by root")]


@pytest.fixture
def one_unmarked(tmp_path, monkeypatch):
    """One pair: both annotators chose misbehavior, anna marked a span, bert none; both agree on benign."""
    url = f"sqlite:///{tmp_path / 'unmarked.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    monkeypatch.delenv("AUTOMONITOR_QUEUE_MISSING_SPANS", raising=False)
    eng = open_store(url)
    users = {n: fast_user(eng, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(eng, "root", "admin")
    rows = [
        candidate_row(
            id=f"pu-{lab[0]}",
            pair_id="pu",
            category="specification_gaming",
            task="code",
            label=lab,
            request="Solve pu.",
            response=CODE if lab == "misbehavior" else "def solve(n):\n    return n * 2\n",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=2, seed=1)
    ann.save_label(eng, users["anna"], "pu-m", "misbehavior", evidence=[SPAN[2]])
    ann.save_label(eng, users["bert"], "pu-m", "misbehavior")
    for u in users.values():
        ann.save_label(eng, u, "pu-b", "benign")
        ann.submit_batch(eng, u)
    yield eng, root
    eng.dispose()


def test_a_missing_span_on_an_agreed_misbehavior_is_no_adjudication_work_on_the_page(one_unmarked, monkeypatch):
    """Issue 41 item 3: both chose misbehavior and one marked no span. The Adjudicate page queues nothing
    (a span is optional) and its "Move resolved pairs" takes the pair into gold with anna's span; only
    with AUTOMONITOR_QUEUE_MISSING_SPANS=1 is the item queued, its reason saying "one annotator marked no
    span" and no span F1 of 0.00 (the fresh-user trial met "marked different spans ... span F1 0.00")."""
    from streamlit.testing.v1 import AppTest

    eng, root = one_unmarked
    monkeypatch.setenv("AUTOMONITOR_QUEUE_MISSING_SPANS", "1")
    at = AppTest.from_file(ADJUDICATE, default_timeout=60)
    at.session_state["auth.account"] = root
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["adjudicate.item"] == "pu-m"
    why = next(str(m.value).replace("\\", "") for m in at.markdown if "Why in the queue" in str(m.value))
    assert "missing_span" in why and why.count("one annotator marked no span") == 1 and "F1" not in why, why

    monkeypatch.delenv("AUTOMONITOR_QUEUE_MISSING_SPANS")
    at = AppTest.from_file(ADJUDICATE, default_timeout=60)
    at.session_state["auth.account"] = root
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("Nothing to adjudicate" in i.value for i in at.info)
    at.button(key="adjudicate.finalize").click().run()
    assert any("Accepted 1 pair(s) into edition verified" in s.value for s in at.success), [s.value for s in at.success]
    gold = _gold(eng, "pu-m")
    assert [(a, b, p) for a, b, p, _ in gold] == [(*SPAN[2], "annotated")]
    assert "one annotator marked no span" in gold[0][3]
