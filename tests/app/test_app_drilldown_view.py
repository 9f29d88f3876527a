"""AppTest: the drill-down of a run judged under a monitor view shows the sample as the monitor saw it (the
view's rendering, named), with the whole stored response kept in an expander; a ``full`` run shows the
stored response as before."""

from __future__ import annotations

from apptest_support import StoreEnv, app, html_bodies, ok, open_store
from automonitor.runs import runner
from servers.views_data import add_view_samples


def test_drilldown_shows_the_response_under_the_runs_view(tmp_path):
    url = f"sqlite:///{tmp_path / 'drill.db'}"
    eng = open_store(url)
    rows = add_view_samples(eng)
    hack = next(sid for sid, r in rows.items() if r["source"] == "aisi_olmo_rh" and r["label"] == "misbehavior")
    try:
        ids = {}
        for view in ("full", "answer"):
            ids[view] = runner.create_run(eng, "rules", "direct", view=view)
            runner.execute_run(eng, ids[view])
        with StoreEnv(url):
            at = ok(app("pages/drilldown.py", run=ids["answer"], cell="fn", sample=hack).run())
            assert any("as the monitor saw it" in m.value and "answer" in m.value for m in at.markdown)
            bodies = [b for b in html_bodies(at) if "am-response" in b and "import os" in b]
            # the answer rendering (code, no thinking) and, in the expander, the whole stored response
            assert len(bodies) == 2 and "Plan " not in bodies[0] and "Plan 0" in bodies[1]
            assert [e.label for e in at.expander if e.label == "The whole stored response"]
            full = ok(app("pages/drilldown.py", run=ids["full"], cell="fn", sample=hack).run())
            assert not any("as the monitor saw it" in m.value for m in full.markdown)
            assert not [e for e in full.expander if e.label == "The whole stored response"]
    finally:
        eng.dispose()


def test_drilldown_names_no_edition_for_a_store_of_imported_pairs(tmp_path):
    """Issue 41 (fresh-user trial): a store holding only imported pairs (no built edition) was captioned
    "paper (edition inferred)"; the drill-down now names the set the report scores such a run on: paper, every
    gold test sample of a store never built (contract41: the words of stats and report, not "no edition")."""
    import app_seed

    url = f"sqlite:///{tmp_path / 'imported.db'}"
    eng = open_store(url)
    try:
        rid = app_seed.seed_store(eng, pairs_per_cell=2, runs=1, hostile=False)["run_ids"][0]
        with StoreEnv(url):
            at = ok(app("pages/drilldown.py", run=rid).run())
            captions = [c.value for c in at.caption if "Measured on sample set" in c.value]
            assert len(captions) == 1, [c.value for c in at.caption]
            # the edition the report scores such a run on, in the words stats and report use (contract41)
            assert "paper" in captions[0] and "no build" in captions[0] and "every gold test sample" in captions[0]
            assert "inferred" not in captions[0]  # the set is every gold test sample, not an edition guessed
    finally:
        eng.dispose()
