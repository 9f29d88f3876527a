"""One rule says which edition a run is scored on, and every place that names it says the same: ``runs --json``
``scored_edition``, ``report --json`` ``runs[].edition``, the sample set the Trade-off page and the HTML report name
(:func:`automonitor.views.run_sample_sets`). Trial found an imported run (a file holding an adjudicated sample, which is a member
of ``verified`` only) named ``verified`` by ``runs --json`` while the
report scored it on ``paper`` (its verdicts on the ``verified``-only samples dropped). Every run kind: a full run, a
view run, a ``--limit`` run, an imported file, derived runs (both databases)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import sqlalchemy as sa

from automonitor import analysis, views
from automonitor.runs import runner
from helpers import run_cli_in_process
from servers.data import pair_rows
from servers.views_data import add_view_samples, echo_backend
from store import session_scope
from store.queries.annotation import add_to_edition
from store.queries.samples import insert_samples


def _cli(url: str, *args: str) -> str:
    r = run_cli_in_process(list(args), db=url)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_run_kind_is_scored_on_the_edition_runs_json_names(engine, tmp_path):
    url = engine.url.render_as_string(hide_password=False)
    paper = list(add_view_samples(engine))  # 20 test samples, the paper edition
    adjudicated = pair_rows(1, "test", offset=900, prefix="adj")  # a pair accepted through annotation
    with session_scope(engine) as s:
        insert_samples(s, adjudicated)
        now = datetime.now(timezone.utc)
        add_to_edition(s, "paper", paper, now)
        add_to_edition(s, "verified", paper + [r["id"] for r in adjudicated], now)
    with engine.begin() as c:
        c.execute(sa.text("UPDATE sample SET label_source = 'adjudicated' WHERE pair_id = 'adjtest900'"))
    ids = {}
    with echo_backend():
        ids["run"] = runner.create_run(engine, "view-echo-test", "direct")
        ids["view"] = runner.create_run(engine, "view-echo-test", "direct", view="reasoning")
        ids["limit"] = runner.create_run(engine, "view-echo-test", "direct", limit=6)
        for rid in list(ids.values()):
            runner.execute_run(engine, rid)
    # the file a system under test judged: what export --blind gives (the paper edition) and the adjudicated
    # pair of the verified edition, by sample id
    _cli(url, "export", str(tmp_path / "blind.jsonl"), "--blind")
    blind = [json.loads(line) for line in (tmp_path / "blind.jsonl").read_text().splitlines()]
    assert {r["sample_id"] for r in blind} == set(paper)
    blind += [{"sample_id": r["id"]} for r in adjudicated]
    lines = [
        {"sample_id": r["sample_id"], "outcome": "misbehavior" if k % 3 else "benign", "score": 0.9 if k % 3 else 0.1}
        for k, r in enumerate(blind)
    ]
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ids["imported"] = _cli(url, "predictions", "import", str(tmp_path / "pred.jsonl"), "--monitor", "Outside").strip()
    derive = ("derive", "thresholds", "--target", "far<=0.5", "--json")
    ids["derived"] = json.loads(_cli(url, *derive, "--run", ids["run"]))["run_id"]
    ids["derived-imported"] = json.loads(_cli(url, *derive, "--run", ids["imported"]))["run_id"]

    listed = {r["run_id"]: r for r in json.loads(_cli(url, "runs", "--json"))["runs"]}
    assert listed[ids["imported"]]["edition"] is None  # an imported run records none
    reported = {r["run_id"]: r for r in json.loads(_cli(url, "report", "--json", "--n-boot", "20"))["runs"]}
    sets = views.run_sample_sets(engine).set_index("run_id")
    points = views.honest_points(
        views.tradeoff_points(analysis.report(engine, n_boot=20).to_dict()), views.run_sample_sets(engine), min_n=1
    )
    on_plane = dict(zip(points["run_id"], points["edition"]))
    for kind, rid in ids.items():
        scored = listed[rid]["scored_edition"]
        assert scored == reported[rid]["edition"] == sets.loc[rid, "edition"] == on_plane[rid], kind
        assert sets.loc[rid, "sample_set"].startswith(f"{scored} · "), kind
    # the imported file is compared with the runs made here: on paper, its verdict on the adjudicated pair left out
    assert listed[ids["imported"]]["scored_edition"] == "paper"
    assert reported[ids["imported"]]["overall"]["n"] == len(paper)
