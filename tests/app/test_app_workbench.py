"""The workbench pages in Streamlit ``AppTest`` (real SQLite stores, nothing mocked): hide/unhide runs on the
trade-off page, prev/next inside a confusion cell, the pair diff, filters with escaped search hits,
the Samples page size, keyboard-labeling buttons, unsure needing a note, flags reaching the admin, and
the Overview count following a finalisation without a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from automonitor import annotation as ann
from helpers import candidate_row, fast_user, my_labels
from store import session_scope
from store.queries.samples import insert_samples
from apptest_support import app, html_bodies, ok, open_store, app_test, page_path


def _run_traces(at):
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return [t for t in spec["data"] if str(t.get("name", "")).startswith("runs:")]


def test_hide_and_unhide_a_run_on_the_tradeoff_page(seeded):
    at = ok(app("pages/tradeoff.py", min_n="1").run())
    ids = {c[0] for t in _run_traces(at) for c in t["customdata"]}
    assert ids == set(seeded["run_ids"])
    key = next(m.key for m in at.multiselect if m.key.startswith("tradeoff.archive"))
    at.multiselect(key=key).set_value(["r000"])
    ok(at.run())
    ok(at.run())
    assert {c[0] for t in _run_traces(at) for c in t["customdata"]} == set(seeded["run_ids"]) - {"r000"}
    assert "r000" not in set(at.dataframe[0].value["run_id"])
    # still archived for a new session, and visible again on request
    at2 = ok(app("pages/tradeoff.py", min_n="1", archived="1").run())
    assert bool(at2.dataframe[0].value.set_index("run_id").loc["r000", "archived"])
    key = next(m.key for m in at2.multiselect if m.key.startswith("tradeoff.archive"))
    at2.multiselect(key=key).set_value([])
    ok(at2.run())
    at3 = ok(app("pages/tradeoff.py", min_n="1").run())
    assert {c[0] for t in _run_traces(at3) for c in t["customdata"]} == set(seeded["run_ids"])


def test_prev_next_in_a_cell_with_previews_filters_search_and_diff(seeded):
    from automonitor import analysis

    cell = analysis.cell_samples(seeded["engine"], "r001", "tp")
    assert len(cell) >= 3
    ids = list(cell["sample_id"])
    at = ok(app("pages/drilldown.py", run="r001", cell="tp").run())
    table = at.dataframe[0].value
    assert list(table["sample_id"]) == ids and "request_preview" in table and "response_preview" in table
    assert at.button(key="drilldown.prev").disabled
    at.button(key="drilldown.next").click()
    ok(at.run())
    assert at.query_params.get("sample") == ids[0]
    at.button(key="drilldown.next").click()
    ok(at.run())
    assert at.query_params.get("sample") == ids[1]
    at.button(key="drilldown.prev").click()
    ok(at.run())
    assert at.query_params.get("sample") == ids[0]
    bodies = html_bodies(at)
    assert any('class="am-diff"' in b for b in bodies)  # the pair as a diff
    # filters: search narrows the list and is highlighted (escaped) in the texts
    at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
    if seeded["hostile_id"] in ids:
        at.text_input(key="drilldown.q").set_value("<script>")
        ok(at.run())
        assert list(at.dataframe[0].value["sample_id"]) == [seeded["hostile_id"]]
        joined = "".join(html_bodies(at))
        assert '<mark class="am-hit"' in joined and "&lt;script&gt;" in joined and "<script" not in joined
    at.selectbox(key="drilldown.disagree").select("r000")
    ok(at.run())
    from automonitor import views

    dis = views.disagreeing_samples(seeded["engine"], "r001", "r000")
    assert set(at.dataframe[0].value["sample_id"]) <= dis


def test_unknown_run_link_warns_and_samples_page_size(seeded):
    at = ok(app("pages/drilldown.py", run="r999").run())
    assert any("r999" in w.value and "not in the store" in w.value for w in at.warning)
    at = ok(app("pages/samples.py", run="r999").run())
    assert any("r999" in w.value for w in at.warning)
    at = ok(app("pages/samples.py", size="50").run())
    assert not at.warning
    assert at.selectbox(key="samples.size").value == 50 and len(at.dataframe[0].value) == 38  # all 38 fit
    assert at.selectbox(key="samples.size").options == ["50", "100", "200", "500"]


def test_samples_link_with_an_unknown_filter_value_warns_and_keeps_the_other_filters(seeded):
    """Fresh-user trial 53: ``?category=bogus`` was dropped silently. The page now says which parameter and
    value it ignored and what that parameter accepts (escaped), and applies the rest of the link."""
    at = ok(app("pages/samples.py", category=["bogus<b>", "sycophancy_bias"], label="benign", status="gold").run())
    warns = [w.value for w in at.warning]
    assert len(warns) == 1, warns
    assert "category" in warns[0] and "bogus" in warns[0] and "sycophancy\\_bias" in warns[0]
    assert "safety\\_permission" in warns[0] and "specification\\_gaming" in warns[0]  # what it accepts
    assert "<b>" not in warns[0]  # escaped
    assert at.multiselect(key="samples.category").value == ["sycophancy_bias"]
    assert at.multiselect(key="samples.label").value == ["benign"]
    assert "**6** matching samples" in at.markdown[0].value  # as the link without the bogus value
    at = ok(app("pages/samples.py", task="bogus", size="7").run())
    warns = " ".join(w.value for w in at.warning)
    assert "task" in warns and "code" in warns and "size" in warns and "500" in warns
    assert "**38** matching samples" in at.markdown[0].value  # nothing else filtered


def test_samples_link_values_match_the_vocabulary_ignoring_case(seeded):
    """``?task=Code`` was refused with a warning (only ``task=code`` worked): a value that differs from an
    option only in case selects that option, without a warning, and the URL takes the option's spelling."""
    lower = ok(app("pages/samples.py", category="sycophancy_bias", label="benign", status="gold").run())
    at = ok(app("pages/samples.py", category="Sycophancy_Bias", label=["BENIGN"], status="Gold").run())
    assert not at.warning, [w.value for w in at.warning]
    assert at.multiselect(key="samples.category").value == ["sycophancy_bias"]
    assert at.multiselect(key="samples.label").value == ["benign"]
    assert at.selectbox(key="samples.status").value == "gold"
    assert "**6** matching samples" in at.markdown[0].value == lower.markdown[0].value
    assert at.query_params.get("category") in (["sycophancy_bias"], "sycophancy_bias"), at.query_params
    at = ok(app("pages/samples.py", task=["Code", "bogus"]).run())
    warns = [w.value for w in at.warning]
    assert len(warns) == 1 and "bogus" in warns[0] and "Code" not in warns[0]
    assert at.multiselect(key="samples.task").value == ["code"]


@pytest.fixture
def ann_store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'ann.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    users = {n: fast_user(eng, n, r) for n, r in (("anna", "annotator"), ("bert", "annotator"), ("root", "admin"))}
    rows = [
        candidate_row(
            id=f"k{p}{lab[0]}",
            pair_id=f"cand:{p}",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request=f"Question {p}?",
            response=f"{lab} reply {p}",
            source="src",
        )
        for p in range(5)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, users["root"], k=2, seed=3, batch_size=10)
    yield eng, users
    eng.dispose()


def _label_page(account):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "pages" / "label.py"), default_timeout=60)
    at.session_state["auth.account"] = account
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_keyboard_label_buttons_unsure_note_guidelines_and_flags(ann_store):
    eng, users = ann_store
    at = _label_page(users["anna"])
    assert at.expander[0].label == "Guidelines" and at.expander[0].proto.expanded  # first item: open
    assert any("Keys:" in c.value and "**1**" in c.value for c in at.caption)
    assert at.button(key="label.key_misbehavior").proto.shortcut == "1"
    assert at.button(key="label.save").proto.shortcut.lower() == "s"
    at.button(key="label.key_misbehavior").click()  # key 1
    ok(at.run())
    at.button(key="label.save").click()  # key S
    ok(at.run())
    (lab,) = my_labels(eng, users["anna"])
    assert lab.label == "misbehavior"
    assert not at.expander[0].proto.expanded  # folded after the first item
    # unsure without a note is refused, with a note it is saved
    at.button(key="label.key_unsure").click()
    ok(at.run())
    at.button(key="label.save").click()
    ok(at.run())
    assert any("note" in e.value for e in at.error) and len(my_labels(eng, users["anna"])) == 1
    k = f"label.i{at.session_state['label.pos'] + 1}"
    at.text_area(key=f"{k}.note").set_value("both answers look wrong")
    at.button(key="label.save").click()
    ok(at.run())
    assert sorted(x.label for x in my_labels(eng, users["anna"])) == ["misbehavior", "unsure"]
    # a flag with a comment reaches the admin
    k = f"label.i{at.session_state['label.pos'] + 1}"
    at.text_area(key=f"{k}.flag").set_value("The reply is cut off")
    at.button(key="label.flag_send").click()
    ok(at.run())
    assert [f["comment"] for f in ann.item_flags(eng, users["root"])] == ["The reply is cut off"]


def test_overview_count_follows_finalisation_without_restart(ann_store):

    eng, users = ann_store
    at = app_test(60)
    at.session_state["auth.account"] = users["root"]
    ok(at.run())
    at.switch_page(page_path("pages/overview.py"))
    ok(at.run())
    m = {x.label: x.value for x in at.metric}
    assert m["Adjudicated (verified)"] == "0" and m["Gold samples (test, edition paper)"] == "0"
    for name in ("anna", "bert"):
        for q in ann.my_queue(eng, users[name]):
            ann.save_label(eng, users[name], q.sample_id, "misbehavior" if q.sample_id.endswith("m") else "benign")
        ann.submit_batch(eng, users[name])
    res = ann.finalize_pairs(eng, users["root"])
    assert len(res.accepted) == 5
    at.run()  # the same session: the cache key changed with the samples' status
    m = {x.label: x.value for x in at.metric}
    assert m["Adjudicated (verified)"] == "10" and m["Gold samples (test, edition paper)"] == "0"
