"""Trade-off and drill-down logic (automonitor.views): honest points (labels, coincident
points, minimum sample size, archived runs, one front per edition), sample-set fingerprints, cell
navigation and filters, escaped search highlights and pair diffs, run archiving from the CLI."""

from __future__ import annotations

import re

import json

import pandas as pd
import pytest

from automonitor import views
from automonitor.views.honest_points import pareto_mask
from automonitor.errors import InputError, NotFound
from helpers import run_cli


def _points():
    return pd.DataFrame(
        [
            # run, monitor, template, mr, far, tp, fn, fp, tn
            ("r1", "rules", "direct", 0.40, 0.10, 300, 200, 50, 450),
            ("r2", "rules", "evidence", 0.40, 0.10, 300, 200, 50, 450),  # coincides with r1
            ("r3", "llamacpp:/models/gemma-3-270m-it-q4.gguf", "direct", 0.60, 0.05, 200, 300, 25, 475),
            ("r4", "openai:tiny", "evidence", 0.00, 0.00, 2, 0, 0, 2),  # 4 judged samples: too few
            ("r5", "openai:gpt", "direct", 0.50, 0.50, 250, 250, 250, 250),  # dominated
        ],
        columns=["run_id", "monitor", "template", "mr", "far", "tp", "fn", "fp", "tn"],
    )


def test_small_runs_are_hollow_and_off_the_front_and_coincident_points_spread():
    p = views.honest_points(_points(), min_n=100).set_index("run_id")
    assert not p.loc["r4", "eligible"] and not p.loc["r4", "on_front"]
    assert p.loc["r1", "on_front"] and p.loc["r2", "on_front"] and p.loc["r3", "on_front"]
    assert not p.loc["r5", "on_front"]
    # r1/r2 share a position: both drawn, apart from each other, near the true point
    assert p.loc["r1", "coincide"] == 2 and p.loc["r3", "coincide"] == 1
    assert (p.loc["r1", "x_plot"], p.loc["r1", "y_plot"]) != (p.loc["r2", "x_plot"], p.loc["r2", "y_plot"])
    assert abs(p.loc["r1", "x_plot"] - 0.10) < 0.02 and p.loc["r3", "x_plot"] == 0.05
    assert p.loc["r3", "label"] == "gemma-3-270m-it-q4 direct"
    assert (p.loc["r1", "label"], p.loc["r2", "label"]) == ("rules #r1", "rules #r2")  # one name, two runs
    # a lower threshold admits the 4-sample run, which then dominates everything
    q = views.honest_points(_points(), min_n=4).set_index("run_id")
    assert q.loc["r4", "on_front"] and not q.loc["r1", "on_front"]
    with pytest.raises(InputError):
        views.honest_points(_points(), min_n=0)


def test_archived_runs_leave_the_plot_and_editions_get_their_own_front():
    sets = pd.DataFrame(
        {
            "run_id": ["r1", "r2", "r3", "r4", "r5"],
            "edition": ["paper", "paper", "paper", "paper", "verified"],
            "fingerprint": ["a", "a", "a", "c", "b"],
            "sample_set": ["paper · 1,000", "paper · 1,000", "paper · 1,000", "x", "verified · 1,000"],
        }
    )
    p = views.honest_points(_points(), sets, archived=["r2"]).set_index("run_id")
    assert "r2" not in p.index
    # r5 (verified) is dominated by r1 (paper) but never compared with it: it leads its own front
    assert p.loc["r1", "on_front"] and p.loc["r3", "on_front"] and p.loc["r5", "on_front"]
    summary = views.set_summary(p.reset_index())
    assert [s["edition"] for s in summary] == ["paper", "verified"] and summary[0]["runs"] == 3
    shown = views.honest_points(_points(), sets, archived=["r2"], show_archived=True).set_index("run_id")
    assert shown.loc["r2", "archived"] and not shown.loc["r1", "archived"]


def test_pareto_mask_ignores_ineligible_points():
    assert pareto_mask([0.1, 0.0, 0.2], [0.1, 0.0, 0.05], [True, False, True]) == [True, False, True]


def test_fingerprint_is_order_free():
    assert (
        views.sample_sets.sample_set_digest(["b", "a", "a"])
        == views.sample_sets.sample_set_digest(["a", "b"])
        != views.sample_sets.sample_set_digest(["a"])
    )


def test_neighbours_and_run_choice():
    ids = ["s1", "s2", "s3"]
    assert views.neighbours(ids, "s2") == {"index": 1, "total": 3, "prev": "s1", "next": "s3"}
    assert views.neighbours(ids, "s1")["prev"] is None and views.neighbours(ids, "s3")["next"] is None
    assert views.neighbours(ids, "zz") == {"index": None, "total": 3, "prev": None, "next": "s1"}
    assert views.run_choice("r2", ["r1", "r2"]) == ("r2", None)
    run, warning = views.run_choice("nope<b>", ["r1", "r2"])
    assert run == "r1" and "nope<b>" in warning
    assert views.run_choice(None, ["r1"]) == ("r1", None)


def test_link_value_warning_names_the_parameter_the_values_ignored_and_those_accepted():
    """Fresh-user trial 53: ``?category=bogus`` on the Samples page was dropped silently."""
    from automonitor import vocab

    assert views.link_value_warning("category", ["sycophancy_bias"], vocab.CATEGORIES) is None
    assert views.link_value_warning("category", [], vocab.CATEGORIES) is None
    w = views.link_value_warning("category", ["bogus", "sycophancy_bias", "bogus"], vocab.CATEGORIES)
    assert w is not None and w.count("bogus") == 1 and "'category'" in w
    assert "accepts: safety_permission, sycophancy_bias, specification_gaming" in w
    assert "'sycophancy_bias'" not in w  # the accepted value is not among those ignored
    assert "100" in views.link_value_warning("size", ["7"], views.PAGE_SIZES)  # any accepted value: as text
    many = views.link_value_warning("source", [f"x{i}" for i in range(30)], [])
    assert "and 18 more" in many and "none in this store yet" in many
    hostile = views.link_value_warning("task", ["<b>" + "y" * 100], vocab.TASKS)
    assert "y" * 61 not in hostile and "…" in hostile
    assert "<b>" not in views.md_escape(hostile)  # the page shows it escaped


def test_link_values_match_the_vocabulary_ignoring_case():
    """``?task=Code`` on the Samples page was refused with a warning; only ``task=code`` worked."""
    from automonitor import vocab

    assert vocab.canonical("Code", vocab.TASKS) == "code" and vocab.canonical("code", vocab.TASKS) == "code"
    assert vocab.canonical("SYCOPHANCY_BIAS", vocab.CATEGORIES) == "sycophancy_bias"
    assert vocab.canonical("Misbehavior", vocab.LABELS) == "misbehavior"
    assert vocab.canonical("bogus", vocab.TASKS) is None and vocab.canonical("", vocab.TASKS) is None
    assert vocab.canonical("x", ["X", "x"]) == "x"  # the exact spelling first
    assert vocab.canonical("X", ["x", "X"]) == "X"
    assert vocab.canonical("Ab", ["aB", "ab"]) is None  # two options differ only in case: neither is guessed
    assert vocab.canonical(100, [50, 100]) == 100 and vocab.canonical(7, [50, 100]) is None
    assert views.link_value_warning("task", ["Code", "QA"], vocab.TASKS) is None
    w = views.link_value_warning("task", ["Code", "bogus"], vocab.TASKS)
    assert w is not None and "'bogus'" in w and "'Code'" not in w


def test_filter_cell_by_outcome_score_ids_and_search():
    df = pd.DataFrame(
        {
            "sample_id": ["a", "b", "c"],
            "outcome": ["misbehavior", "invalid", "misbehavior"],
            "score": [0.9, None, 0.3],
            "request": ["Delete   the\ntests", "x", "y"],
            "response": ["ok", "FIND me", "z" * 200],
        }
    )
    assert list(views.filter_cell(df, outcomes=["misbehavior"])["sample_id"]) == ["a", "c"]
    assert list(views.filter_cell(df, score_range=(0.5, 1.0))["sample_id"]) == ["a"]
    assert list(views.filter_cell(df, score_range=(0.0, 1.0))["sample_id"]) == ["a", "b", "c"]
    assert list(views.filter_cell(df, only={"b", "c"})["sample_id"]) == ["b", "c"]
    out = views.filter_cell(df, search="find")
    assert list(out["sample_id"]) == ["b"]
    full = views.filter_cell(df)
    assert full.loc[0, "request_preview"] == "Delete the tests" and full.loc[2, "response_preview"].endswith("…")
    assert len(full.loc[2, "response_preview"]) == 90


def test_search_highlight_is_escaped():
    html = views.browsing.highlight_search_html("<script>alert(1)</script> and ALERT", "alert")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count('<mark class="am-hit"') == 2 and ">ALERT</mark>" in html
    assert views.browsing.highlight_search_html("<b>", "") == "&lt;b&gt;"


def test_pair_diff_line_and_word_modes_reconstruct_both_sides():
    vuln = "def q(name):\n    sql = 'SELECT * FROM t WHERE n=' + name\n    return run(sql)\n"
    fixed = "def q(name):\n    sql = 'SELECT * FROM t WHERE n=?'\n    return run(sql, (name,))\n"
    parts = views.browsing.pair_diff(vuln, fixed, "line")
    assert "".join(t for op, t in parts if op != "insert") == vuln
    assert "".join(t for op, t in parts if op != "delete") == fixed
    assert [op for op, _ in parts] == ["equal", "delete", "insert"]
    words = views.browsing.pair_diff("You are right, 2+2=5.", "Actually, 2+2=4.", "word")
    assert ("delete", "5.") in words or any(op == "delete" and "5." in t for op, t in words)
    html = views.pair_diff_html("<img src=x onerror=alert(1)> a", "<img src=x> b", "word")
    assert "<img" not in html and "&lt;img" in html and 'class="am-del"' in html and 'class="am-ins"' in html
    # a replaced word keeps a gap before its replacement (fresh-user trial: "givenmade"), as a margin, not text
    html = views.pair_diff_html("it was given", "it was made", "word")
    assert re.search(r'<del class="am-del" style="[^"]*margin-right:[^"]*">given</del><ins', html), html
    # a changed last line without a newline: the removed and the added line stay on separate rows
    html = views.pair_diff_html("x = 1\ny = 2", "x = 1\ny = 3", "line")
    assert ">y = 2\n</del>" in html and ">y = 3</ins>" in html
    assert views.diff_mode("code") == "line" and views.diff_mode("qa") == "word"
    with pytest.raises(InputError):
        views.browsing.pair_diff("a", "b", "char")


def test_archive_and_sample_sets_on_a_store(sqlite_url):
    from automonitor.runs import runner
    from helpers import REPO

    out = run_cli(["import", str(REPO / "seeds" / "examples.jsonl")], db=sqlite_url)
    assert out.returncode == 0, out.stderr
    from store import get_engine, init_db

    eng = init_db(get_engine(sqlite_url))
    rid = runner.create_run(eng, "rules", "direct")
    runner.execute_run(eng, rid)
    sets = views.run_sample_sets(eng)
    row = sets.set_index("run_id").loc[rid]
    assert row["edition"] == "paper" and row["n_samples"] > 0 and len(row["fingerprint"]) == 10
    assert row["sample_set"].startswith("paper · ")
    assert run_cli(["runs", "--archive", rid], db=sqlite_url).returncode == 0
    doc = json.loads(run_cli(["runs", "--json"], db=sqlite_url).stdout)
    assert doc["runs"][0]["archived"] is True
    bad = run_cli(["runs", "--archive", "no-such-run"], db=sqlite_url)
    assert bad.returncode == 2 and "no-such-run" in bad.stderr
    assert run_cli(["runs", "--unarchive", rid], db=sqlite_url).returncode == 0
    assert json.loads(run_cli(["runs", "--json"], db=sqlite_url).stdout)["runs"][0]["archived"] is False
    with pytest.raises(NotFound):
        views.set_archived(eng, "nope", True)


def test_front_sample_sets_names_every_sample_set_on_the_front():
    import pandas as pd

    pts = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "on_front": [True, True, False],
            "sample_set": ["paper · 3,010 samples · aaa", "paper · 120 samples · bbb", "paper · 120 samples · ccc"],
        }
    )
    assert views.front_sample_sets(pts) == ["paper · 120 samples · bbb", "paper · 3,010 samples · aaa"]
    pts.loc[1, "on_front"] = False
    assert views.front_sample_sets(pts) == ["paper · 3,010 samples · aaa"]
    assert views.front_sample_sets(pd.DataFrame()) == []


def test_short_label_of_derived_runs_names_the_recipe_not_a_fragment_of_its_inputs():
    from automonitor.views.honest_points import short_label

    assert short_label("cascade (probe:tfidf-lr then rules; 0.2/0.8)", "direct", "derived") == "cascade direct"
    assert short_label("ensemble or (rules + gemma)", "direct") == "ensemble or direct"
    assert short_label("thresholds far<=0.2 by category (llamacpp:gemma@6a)", "direct", "derived").startswith(
        "thresholds far<=0.2"
    )


def test_short_label_takes_the_last_path_part_only_of_a_model_id_or_a_path():
    """A point's label keeps the text of a name with spaces, markup or a URL (a hostile name once showed
    as "evil.example] LLLL…"); a model id or an artefact path gives its last part."""
    from automonitor.views.honest_points import short_label

    assert short_label("llamacpp:/m/gemma-3-270m.gguf", "direct") == "gemma-3-270m direct"
    assert short_label("openai:meta-llama/Llama-3-8B", "evidence") == "Llama-3-8B evid."
    assert short_label("probe:/a/b/tfidf-lr.joblib", "direct") == "tfidf-lr.joblib direct"
    hostile = "<b>x</b> [link](http://example.com) **bold** https://evil.example"
    assert short_label(hostile, "direct") == "<b>x</b> [link](http:… direct"
    assert short_label("my judge https://x.example/a/b", "direct").startswith("my judge http")


def test_a_store_of_imported_pairs_names_no_edition_and_a_built_one_keeps_paper(tmp_path):
    """Issue 41 (fresh-user trial): a run without a recorded edition on a store that holds only imported
    pairs (no ``edition_sample`` row) was shown as ``paper (edition inferred)``; its samples belong to no
    edition, and its sample set now says so. Once a build made them members, the same run reads
    ``paper``, inferred, as before."""
    from datetime import datetime, timezone

    import app_seed
    from store import get_engine, init_db, session_scope
    from store.queries.annotation import add_to_edition

    eng = init_db(get_engine(f"sqlite:///{tmp_path / 'imp.db'}"))
    info = app_seed.seed_store(eng, pairs_per_cell=2, runs=1, hostile=False)
    rid = info["run_ids"][0]
    row = views.run_sample_sets(eng).set_index("run_id").loc[rid]
    assert not row["edition_recorded"] and not row["edition_inferred"]
    assert row["edition"] == "paper"  # what the analysis reads it as (every gold test sample of such a store)
    assert row["sample_set"].startswith(views.sample_sets.NO_EDITION + " · ")
    caption = views.sample_set_caption(row)
    # named as the report scores it (report --json "paper", runs --json scored_edition "paper"), in the words
    # stats and report use for a store never built (fresh-user trial: the hover said "no edition")
    assert "paper (no build: every gold test sample)" in caption and "inferred" not in caption
    with session_scope(eng) as s:
        test_ids = [r["id"] for r in info["samples"] if r["split"] == "test"]
        add_to_edition(s, "paper", test_ids, datetime.now(timezone.utc))
    built = views.run_sample_sets(eng).set_index("run_id").loc[rid]
    assert built["edition"] == "paper" and built["edition_inferred"]
    assert built["sample_set"].startswith("paper · ")
    assert views.sample_set_caption(built).endswith(" (edition inferred)")
    eng.dispose()


def test_sample_sets_from_the_report_frame_are_those_read_from_the_store(engine):
    """``run_sample_sets(..., preds=frame)`` (the HTML report: the runs' repeat-0 predictions read once, only the
    other repeats' rows read again) gives the rows the store read gives: controls left out, a sample judged only
    in a later repeat counted, a run judging an adjudicated sample still ``paper``, a run without predictions, edition
    members, several runs sharing one sample set (one fingerprint)."""
    from datetime import datetime, timezone

    import sqlalchemy as sa
    from servers.data import pair_rows

    from store import session_scope
    from store.models import Monitor, Prediction, Run
    from store.queries.analysis import load_predictions
    from store.queries.annotation import add_to_edition
    from store.queries.samples import insert_samples

    test, controls = pair_rows(4, "test"), pair_rows(1, "controls", offset=500)
    with session_scope(engine) as s:
        insert_samples(s, test + controls)
    ids = [r["id"] for r in test]
    with engine.begin() as c:
        c.execute(sa.text("UPDATE sample SET label_source = 'adjudicated' WHERE id = :i"), {"i": ids[3]})
    judged = {
        "r-a": [*ids[:3], controls[0]["id"]],  # controls left out of its set
        "r-b": ids[:3],  # the same set as r-a
        "r-c": ids,  # judges the adjudicated sample: verified
        "r-d": ids[1:3],  # and ids[0] in repeat 1 only
        "r-e": [],  # nothing judged
    }
    with session_scope(engine) as s:
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        for rid, sids in judged.items():
            s.add(Run(id=rid, monitor_id=m.id, monitor="rules", template="direct", status="finished",
                      edition="paper" if rid == "r-b" else None))  # fmt: skip
        s.flush()
        for rid, sids in judged.items():
            for k, sid in enumerate(sids):
                s.add(Prediction(run_id=rid, sample_id=sid, outcome=None if k == 1 else "benign"))
        s.add(Prediction(run_id="r-d", sample_id=ids[0], outcome="benign", repeat=1))
        s.add(Prediction(run_id="r-d", sample_id=ids[1], outcome="benign", repeat=1))
        add_to_edition(s, "paper", ids[:2], datetime.now(timezone.utc))
    runs = list(judged)
    frame = load_predictions(engine, runs, light=True)
    from_store = views.run_sample_sets(engine, runs)
    pd.testing.assert_frame_equal(views.run_sample_sets(engine, runs, preds=frame), from_store)
    # the Trade-off page: the frame of the report's runs only (r-a, r-d), the other runs read from the store
    part = ["r-a", "r-d"]
    pd.testing.assert_frame_equal(
        views.run_sample_sets(engine, preds=load_predictions(engine, part, light=True), preds_runs=part),
        views.run_sample_sets(engine),
    )
    rows = from_store.set_index("run_id")
    assert rows.loc["r-a", "n_samples"] == 3 and rows.loc["r-a", "fingerprint"] == rows.loc["r-b", "fingerprint"]
    # an unrecorded run is scored on paper even when it judged an adjudicated (verified-only) sample, as the report
    # scores it (automonitor.vocab.scored_edition; tests/analysis/test_scored_edition.py)
    assert rows.loc["r-c", "edition"] == "paper" and rows.loc["r-c", "edition_inferred"]
    assert rows.loc["r-d", "n_samples"] == 3 and rows.loc["r-d", "fingerprint"] == rows.loc["r-a", "fingerprint"]
    assert rows.loc["r-e", "n_samples"] == 0 and rows.loc["r-b", "edition_recorded"]
