"""Streamlit ``AppTest`` of the workbench pages: widgets, URL state, errors, empty store, roles.

The app runs in-process against real stores (a seeded SQLite file per module, plus one pass over
every page on PostgreSQL); nothing in the app is mocked.
"""

from __future__ import annotations


import pytest

import app_seed

from apptest_support import WORKBENCH, StoreEnv, app, html_bodies, ok, open_store, page_path

from automonitor.views import DEFAULT_MIN_N


# --------------------------------------------------------------------------------------------------


def test_every_page_on_an_empty_store(tmp_path):
    with StoreEnv(f"sqlite:///{tmp_path / 'empty.db'}"):
        at = ok(app())
        assert at.title[0].value == "AutoMonitor-Bench"
        assert any("No samples in the store yet" in i.value for i in at.info)
        # the local-workbench notice on how to enable accounts
        assert any("users add" in c.value for c in at.sidebar.caption)
        for page in WORKBENCH:
            at.switch_page(page_path(page))
            ok(at.run())
            text = " ".join([i.value for i in at.info] + [c.value for c in at.caption])
            assert "No " in text, (page, text)


def test_overview_counts_and_split_in_url(seeded):
    at = ok(app().run())
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gold samples (test, edition paper)"] == "38"
    assert metrics["Pairs"] == "19"
    assert metrics["Candidates awaiting annotation"] == "2"
    assert metrics["Runs"] == "3"
    comp = at.dataframe[0].value
    assert comp.loc["Safety & Permission Violations", "qa / misbehavior"] == 3
    assert comp.loc["total", "total"] == 38
    at.segmented_control(key="overview.split").set_value("train")
    ok(at.run())
    assert at.query_params.get("split") == "train"
    assert {m.label: m.value for m in at.metric}["Gold samples (train)"] == "0"
    # a shared link opens the same view
    at2 = ok(app("pages/overview.py", split="train").run())
    assert at2.segmented_control(key="overview.split").value == "train"


def test_counts_say_which_split_they_count_on_overview_and_samples(seeded):
    """Trial: the Overview's "Gold samples (test) 2,966" beside the Samples page's "17,818 matching" (every split,
    every edition's members) puzzled a newcomer. The numbers stay; the Overview's tile names the split and the
    edition it counts, the Samples page's count line the split and status filters' values (and its tooltip why
    its test split is larger than the tile)."""
    at = ok(app().run())
    assert {m.label: m.value for m in at.metric}["Gold samples (test, edition paper)"] == "38"
    at.segmented_control(key="overview.split").set_value("all")
    ok(at.run())
    every = {m.label: m.value for m in at.metric}["Gold samples (all splits)"]
    samples = ok(app("pages/samples.py").run())
    line = samples.markdown[0]
    assert line.value == f"**{every}** matching samples · split: all · status: gold"  # the same number, named alike
    assert "every edition" in line.proto.help and "Overview" in line.proto.help
    samples = ok(app("pages/samples.py", split="test", status="any").run())
    assert samples.markdown[0].value == "**38** matching samples · split: test · status: any"  # candidates: no split
    samples = ok(app("pages/samples.py", split=["test", "train"]).run())
    assert samples.markdown[0].value.endswith(" · split: test, train · status: gold")


def test_samples_browser_filters_url_and_escaping(seeded):
    at = ok(app("pages/samples.py").run())
    assert "**38** matching samples" in at.markdown[0].value
    at.text_input(key="samples.q").input("onerror")
    ok(at.run())
    assert at.query_params.get("q") == "onerror"
    assert "**1** matching samples" in at.markdown[0].value
    assert list(at.dataframe[0].value["id"]) == [seeded["hostile_id"]]
    labels = [d.label for d in at.get("download_button")]
    assert labels == ["Export CSV", "Export JSONL"]

    # filters come back from a link; a forged option is dropped; the sample detail is escaped
    at = ok(
        app(
            "pages/samples.py", category=["sycophancy_bias", "<bogus>"], label="benign", sample=seeded["hostile_id"]
        ).run()
    )
    assert at.multiselect(key="samples.category").value == ["sycophancy_bias"]
    assert "**6** matching samples" in at.markdown[0].value
    bodies = "\n".join(html_bodies(at))
    assert "&lt;script&gt;alert(&#x27;xss-script&#x27;)&lt;/script&gt;" in bodies
    assert "<script" not in bodies and "<img" not in bodies
    at.selectbox(key="samples.status").select("any")
    at.multiselect(key="samples.category").set_value([])
    at.multiselect(key="samples.label").set_value([])
    ok(at.run())
    assert at.query_params.get("status") == "any" and "category" not in at.query_params
    assert "**40** matching samples" in at.markdown[0].value  # gold + candidates


def test_tradeoff_filters_and_score_runs(seeded):
    from automonitor import analysis
    from automonitor.analysis import metrics

    at = ok(app("pages/tradeoff.py").run())
    m = {x.label: x.value for x in at.metric}
    rep = analysis.report(seeded["engine"]).to_dict()
    pts = analysis.run_points(rep)
    r, _ = metrics.pearson_r(list(pts["mr"]), list(pts["far"]))
    assert m["Runs shown"] == "3"
    # the seeded runs judge ~40 samples: below the default minimum (100) they are hollow, off the front
    # and out of Pearson r (the HTML report applies the same rule)
    assert m["On the Pareto front"] == "0" and m["Pearson r (MR, FAR)"] == "–"
    assert not at.dataframe[0].value["eligible"].any()
    import json

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    runs_tr = [t for t in spec["data"] if str(t.get("name", "")).startswith("runs:")]
    assert runs_tr and all(t["name"].endswith("(too few samples)") for t in runs_tr)
    assert all(t["marker"]["symbol"] == "circle-open" and t["mode"] == "markers+text" for t in runs_tr)
    assert all(t["text"] for t in runs_tr)  # every measured point carries a short text label
    # the paper's reference points are behind a toggle, off by default (kept in the URL when on)
    assert not [t for t in spec["data"] if "secondary summary" in json.dumps(t)]
    at.toggle(key="tradeoff.paper").set_value(True)
    ok(at.run())
    assert at.query_params.get("paper") == "1"
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [t for t in spec["data"] if "secondary summary" in json.dumps(t)]
    at = ok(app("pages/tradeoff.py", min_n="1").run())
    m = {x.label: x.value for x in at.metric}
    assert m["Pearson r (MR, FAR)"] == f"{r:+.2f}"  # every run is eligible at a minimum of 1
    assert m["On the Pareto front"] == str(int(pts["on_front"].sum()))
    table = at.dataframe[0].value
    assert set(table["run_id"]) == set(seeded["run_ids"])

    # slice filter: numbers of the category slice, kept in the URL
    at.selectbox(key="tradeoff.category").select("sycophancy_bias")
    ok(at.run())
    assert at.query_params.get("category") == "sycophancy_bias"
    t = at.dataframe[0].value.set_index("run_id")
    e = next(x for x in rep["runs"] if x["run_id"] == "r000")["by_category"]["sycophancy_bias"]
    assert (t.loc["r000", "tp"], t.loc["r000", "fn"]) == (e["tp"], e["fn"])

    # template filter
    at.multiselect(key="tradeoff.template").set_value(["evidence"])
    ok(at.run())
    assert list(at.dataframe[0].value["template"].unique()) == ["evidence"]
    assert at.query_params.get("template") == "evidence"

    # score run r002 (direct): ROC with an operating point that moves with the cost ratio
    at = ok(app("pages/tradeoff.py").run())
    ops = at.dataframe[1].value
    assert list(ops["run"].str.endswith("r002")) == [True]
    thr1 = float(ops["threshold"].iloc[0])
    at.select_slider(key="tradeoff.cost").set_value(20.0)
    ok(at.run())
    ops2 = at.dataframe[1].value
    assert at.query_params.get("cost") == "20"
    assert float(ops2["threshold"].iloc[0]) <= thr1  # misses cost more: flag more (lower threshold)
    assert float(ops2["MR"].iloc[0]) <= float(ops["MR"].iloc[0])


def test_tradeoff_links_and_bad_params(seeded):
    at = ok(app("pages/tradeoff.py", category="no_such", invalid="as-flag", template="evidence").run())
    assert at.selectbox(key="tradeoff.category").value == "all"  # unknown value dropped
    assert at.selectbox(key="tradeoff.invalid").value == "as-flag"
    assert at.multiselect(key="tradeoff.template").value == ["evidence"]


def test_drilldown_cells_sample_and_compare(seeded):
    from automonitor import analysis

    at = ok(app("pages/drilldown.py", run="r001").run())
    rep = analysis.report(seeded["engine"], ["r001"]).to_dict()
    ov = rep["runs"][0]["overall"]
    m = {x.label: x.value for x in at.metric}
    assert m["Miss rate (MR)"] == f"{ov['mr']:.3f}" and m["Judged samples"] == str(ov["n"])
    name = next(c for c in ("fp", "fn", "tp") if ov[c] > 0)
    gold, verdict = {
        "fp": ("benign", "misbehavior"),
        "fn": ("misbehavior", "benign"),
        "tp": ("misbehavior", "misbehavior"),
    }[name]
    at.button(key=f"drilldown.cell_{name}").click()
    ok(at.run())
    assert at.query_params.get("cell") == name
    cell = at.dataframe[0].value
    assert len(cell) == ov[name] and set(cell["label"]) == {gold} and set(cell["outcome"]) == {verdict}
    assert at.button(key="drilldown.cell_unscored").disabled == (ov["unscored"] == 0)

    # open the hostile sample with r001 (evidence run) and compare with r000
    at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
    bodies = html_bodies(at)
    resp = next(b for b in bodies if "am-response" in b and "am-ev-exact" in b)
    # the label provenance is a visible badge, not only a grey caption
    assert any('data-testid="provenance-badges"' in b and "label provenance:" in b for b in bodies)
    assert 'class="am-ev am-ev-exact"' in resp and 'class="am-ev am-ev-normalized"' in resp
    assert "am-ev-not_found" in resp and "quote that is not there" in resp
    assert "<script" not in "".join(bodies) and "<img" not in "".join(bodies)
    assert any("alert(&#x27;raw&#x27;)" in c.value or "alert('raw')" in c.value for c in at.code)
    at.selectbox(key="drilldown.cmp").select("r000")
    ok(at.run())
    assert at.query_params.get("cmp") == "r000"
    heads = [x.value for x in at.markdown if x.value.startswith("**") and " · " in x.value]
    assert any("r001" in h for h in heads) and any("r000" in h for h in heads)


def test_drilldown_errors(seeded):
    at = ok(app("pages/drilldown.py", run="nope", sample="s_does_not_exist").run())
    assert at.selectbox(key="drilldown.run").value in seeded["run_ids"]
    assert any("not in the store" in w.value for w in at.warning)


def test_cache_invalidated_when_a_run_finishes(seeded, tmp_path):
    url = f"sqlite:///{tmp_path / 'inv.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=1, hostile=False)
    with StoreEnv(url):
        at = ok(app("pages/tradeoff.py").run())
        assert {x.label: x.value for x in at.metric}["Runs shown"] == "1"
        app_seed.add_run(eng, info["samples"], monitor="rules", template="evidence", run_id="late")
        ok(at.run())
        assert {x.label: x.value for x in at.metric}["Runs shown"] == "2"
    eng.dispose()


def assert_refused(at, page: str) -> None:
    """``page`` is either not registered in the navigation or refuses to render for this session."""
    try:
        at.switch_page(page_path(page))
    except ValueError:
        return  # not in this session's navigation
    ok(at.run())
    assert not at.dataframe and not at.metric and not at.get("plotly_chart"), page
    assert any("admin account" in e.value or "log in" in e.value for e in at.error), page


def test_roles_login_and_navigation(tmp_path):
    from automonitor.annotation.accounts import create_user

    url = f"sqlite:///{tmp_path / 'acc.db'}"
    eng = open_store(url)
    create_user(eng, "ada", "admin", "s3cret-admin")
    create_user(eng, "ann", "annotator", "s3cret-annotator")
    with StoreEnv(url):
        at = ok(app())
        assert at.subheader[0].value == "Log in"
        assert_refused(at, "pages/tradeoff.py")  # the workbench is not reachable before a login
        at.text_input(key="login.name").input("ada")
        at.text_input(key="login.password").input("wrong")
        at.button[0].click()
        ok(at.run())
        assert any("wrong password" in e.value for e in at.error)
        assert "auth.account" not in at.session_state

        at.text_input(key="login.name").input("ann")
        at.text_input(key="login.password").input("s3cret-annotator")
        at.button[0].click()
        ok(at.run())
        assert at.session_state["auth.account"].role == "annotator"
        # the password does not stay in the session
        assert all(at.session_state[k] != "s3cret-annotator" for k in at.session_state)
        assert_refused(at, "pages/runs.py")  # an annotator never reaches the workbench

        at = ok(app())
        at.text_input(key="login.name").input("ada")
        at.text_input(key="login.password").input("s3cret-admin")
        at.button[0].click()
        ok(at.run())
        assert at.session_state["auth.account"].name == "ada"
        for page in WORKBENCH:
            at.switch_page(page_path(page))
            ok(at.run())
    eng.dispose()


@pytest.mark.postgres
def test_every_page_on_postgresql(pg_url):
    eng = open_store(pg_url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2)
    with StoreEnv(pg_url):
        at = ok(app())
        for page in WORKBENCH:
            at.switch_page(page_path(page))
            ok(at.run())
        at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=info["hostile_id"]).run())
        assert any("am-ev-exact" in b for b in html_bodies(at))
    eng.dispose()


@pytest.mark.slow
def test_runs_page_estimate_keys_launch_and_history(tmp_path, monkeypatch):
    import time

    import sqlalchemy as sa

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    eng = open_store(url)
    app_seed.seed_store(eng, pairs_per_cell=2, runs=1)
    with StoreEnv(url):
        at = ok(app("pages/runs.py").run())
        est = {m.label: m.value for m in at.metric}
        assert est["Test samples"] == "38" and est["Judged in all"] == "38" and est["Controls"] == "0"
        assert est["Cost (est., USD)"] == "$0.0000"  # rules: free, all 38, no controls in this store
        assert not at.button(key="runs.start").disabled
        # the default subset reaches the trade-off plane's minimum (it was 60 < 100: hollow, never on the front)
        assert at.number_input(key="runs.limit").value == DEFAULT_MIN_N == 100
        assert not any("plane's minimum" in w.value for w in at.warning)
        # a hosted backend without a key: warned, cannot start; no field asks for the key
        at.selectbox(key="runs.backend").select("openai")
        ok(at.run())
        assert any("OPENAI_API_KEY" in w.value for w in at.warning)
        assert at.button(key="runs.start").disabled
        assert all(t.type != "password" and "key" not in t.label.lower() for t in at.text_input)
        est = {m.label: m.value for m in at.metric}
        assert int(est["Prompt tokens (est.)"].replace(",", "")) > 0
        # a key in Streamlit secrets is recognised (its value is never shown)
        at.secrets["OPENAI_API_KEY"] = "sk-test-not-real"
        ok(at.run())
        assert any("from the secrets" in c.value for c in at.caption)
        assert "sk-test-not-real" not in str(at._tree)
        # a bad base URL is reported by the runner, nothing is started
        with eng.connect() as c:
            n_before = c.execute(sa.text("select count(*) from run")).scalar_one()
        at.text_input(key="runs.base_url.openai").input("ftp://nowhere")
        ok(at.run())
        at.button(key="runs.start").click()
        ok(at.run())
        assert any("Run not started" in e.value and "base" in e.value for e in at.error)
        with eng.connect() as c:
            assert c.execute(sa.text("select count(*) from run")).scalar_one() == n_before
        # launch a real rules run on a 12-sample subset: it runs in its own process
        at.selectbox(key="runs.backend").select("rules")
        at.number_input(key="runs.limit").set_value(12)
        ok(at.run())
        assert any("12 samples is below the trade-off plane's minimum of 100" in w.value for w in at.warning)
        at.button(key="runs.start").click()
        ok(at.run())
        launched = at.session_state["runs.launched"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with eng.connect() as c:
                status = c.execute(sa.text("select status from run where id = :i"), {"i": launched}).scalar_one()
            if status in ("finished", "failed", "cancelled"):
                break
            time.sleep(0.5)
        assert status == "finished"
        ok(at.run())
        hist = at.dataframe[0].value.set_index("run_id")
        assert hist.loc[launched, "status"] == "finished" and hist.loc[launched, "done"] == 12
        assert hist.loc[launched, "progress"] == 1.0
        assert any(launched in s.value for s in at.success)
    eng.dispose()


def test_drilldown_report_this_label_writes_an_erratum(seeded, tmp_path, monkeypatch):
    """The drill-down's "Report this label" records an erratum in the store through the core (never in a
    file of the checkout), with its provenance."""
    from store import get_engine, session_scope
    from store.queries import errata as errata_queries

    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(tmp_path / "no-shipped.jsonl"))
    at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
    assert at.button(key="drilldown.erratum_submit").disabled  # no reason yet
    assert not any("erratum: label" in h for h in html_bodies(at))
    at.radio(key="drilldown.erratum_verdict").set_value("doubtful")
    at.text_area(key="drilldown.erratum_reason").input("<b>both sides</b> look safe")
    at.text_input(key="drilldown.erratum_reader").input("tester")
    ok(at.run())
    at.button(key="drilldown.erratum_submit").click()
    ok(at.run())
    eng = get_engine(seeded["url"])
    with session_scope(eng) as s:
        (e,) = errata_queries.rows(s)
    pid = next(r["pair_id"] for r in seeded["samples"] if r["id"] == seeded["hostile_id"])
    assert (e["pair_id"], e["verdict"], e["reason"], e["reader"]) == (
        pid,
        "doubtful",
        "<b>both sides</b> look safe",
        "tester",
    )
    assert e["origin"] == "app" and not (tmp_path / "no-shipped.jsonl").exists()
    assert any("Erratum recorded" in s.value for s in at.success)
    # the sample's badges show the erratum at once (the page used to show it only on the next run)
    (badges,) = [h for h in html_bodies(at) if 'data-testid="provenance-badges"' in h]
    assert "erratum: label doubtful" in badges and "&lt;b&gt;both sides&lt;/b&gt; look safe" in badges
    assert "<b>both sides" not in badges  # the reason is escaped
    # and on a fresh visit of the sample
    again = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
    assert any("erratum: label doubtful" in h for h in html_bodies(again))


def test_drilldown_report_warns_when_another_reader_disagrees(seeded, tmp_path, monkeypatch):
    """A report that another reader's verdict contradicts is recorded and the page says so (issue 37): a
    warning names the pair, the other reader's verdict and the verdict in force (the strictest)."""
    import sqlalchemy as sa

    from automonitor.data.errata import add_erratum
    from automonitor.views import md_escape
    from store import get_engine, session_scope
    from store.models import Erratum as ErratumRow

    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(tmp_path / "no-shipped.jsonl"))
    pid = next(r["pair_id"] for r in seeded["samples"] if r["id"] == seeded["hostile_id"])
    eng = get_engine(seeded["url"])
    add_erratum(eng, pid, "wrong", "the <b>benign</b> side is unsafe", "alice-r")
    try:
        at = ok(app("pages/drilldown.py", run="r001", cell="tp", sample=seeded["hostile_id"]).run())
        at.radio(key="drilldown.erratum_verdict").set_value("doubtful")
        at.text_area(key="drilldown.erratum_reason").input("looks fine to me")
        at.text_input(key="drilldown.erratum_reader").input("bob-r")
        ok(at.run())
        at.button(key="drilldown.erratum_submit").click()
        ok(at.run())
        assert any("Erratum recorded" in s.value for s in at.success)
        (warning,) = [w.value for w in at.warning if "conflicting errata" in w.value]
        assert md_escape(pid) in warning and "alice\\-r said wrong" in warning
        assert "in force\\: wrong" in warning and "bob\\-r says doubtful" in warning
    finally:
        with session_scope(eng) as s:
            s.execute(sa.delete(ErratumRow).where(ErratumRow.reader.in_(["alice-r", "bob-r"])))  # type: ignore[attr-defined]


def test_tradeoff_builds_the_html_report(seeded):
    """The Trade-off page's "Build HTML report" puts the self-contained report of the runs shown in the
    session, offered by a "Download report" button (``automonitor.views.report_html``)."""
    at = ok(app("pages/tradeoff.py").run())
    assert not at.session_state["tradeoff.html_report"] if "tradeoff.html_report" in at.session_state else True
    assert not at.get("download_button")
    at.button(key="tradeoff.build_report").click()
    at = ok(at.run())
    html = at.session_state["tradeoff.html_report"].decode("utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'id="plotly-gz"' in html
    body = html[: html.index('id="plotly-gz"')]
    prov = body[body.index("Run provenance") :]
    assert all(f"<td>{rid}</td>" in prov for rid in seeded["run_ids"])
    assert len(at.get("download_button")) == 1
