"""A run that covers part of its edition's test set is marked: ``predictions import`` says how many of the
test samples (and controls) the file covers, and the report (JSON ``coverage``, text, markdown, HTML) and
the plane mark the run. Fresh-user trial 45: ``head -100 predictions.jsonl`` imported as a run was reported
and drawn as if it judged the whole test set of 2,966 samples."""

from __future__ import annotations

import json

import sqlalchemy as sa

from automonitor.analysis import report
from automonitor.views import report_html
from helpers import add_control_sample, run_cli_in_process, write_pairs


def _sample_ids(url: str) -> list[str]:
    eng = sa.create_engine(url)
    with eng.connect() as c:
        ids = [r[0] for r in c.execute(sa.text("select id from sample where split = 'test' order by id"))]
    eng.dispose()
    return ids


def _import(url: str, path, rows: list[dict], monitor: str):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = run_cli_in_process(["predictions", "import", str(path), "--monitor", monitor, "--json"], db=url)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_partial_import_is_counted_and_marked(engine, tmp_path):
    url = engine.url.render_as_string(hide_password=False)
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    assert run_cli_in_process(["import", str(pairs)], db=url).returncode == 0
    add_control_sample(engine)
    ids = _sample_ids(url)
    assert len(ids) == 8
    part = _import(url, tmp_path / "part.jsonl", [{"sample_id": i, "outcome": "benign"} for i in ids[:3]], "Part")
    assert part["coverage"] == {
        "edition": "paper",
        "test": 3,
        "test_members": 8,
        "controls": 0,
        "controls_members": 1,
    }
    whole = _import(url, tmp_path / "all.jsonl", [{"sample_id": i, "outcome": "benign"} for i in ids], "Whole")
    assert whole["coverage"]["test"] == 8
    # the import's line on stderr says so
    text = run_cli_in_process(
        ["predictions", "import", str(tmp_path / "part.jsonl"), "--monitor", "Part2"], db=url
    ).stderr
    assert "covers 3 of the 8 test samples of the paper edition and 0 of the 1 controls" in text
    assert "warning" in text
    rep = report(engine, n_boot=20)
    by_id = {r.run_id: r for r in rep.runs}
    p, w = by_id[part["run_id"]], by_id[whole["run_id"]]
    assert (p.coverage.covered, p.coverage.members, p.coverage.partial) == (3, 8, True)
    assert (w.coverage.covered, w.coverage.members, w.coverage.partial) == (8, 8, False)
    assert "covers 3 of 8 test samples" in p.answers.marks
    assert not any("covers" in m for m in w.answers.marks)
    doc = json.loads(run_cli_in_process(["report", "--json"], db=url).stdout)
    cov = {r["run_id"]: r["coverage"] for r in doc["runs"]}
    assert cov[part["run_id"]]["partial"] is True and cov[whole["run_id"]]["partial"] is False
    txt = run_cli_in_process(["report"], db=url).stdout
    assert f"run {part['run_id']} (Part) covers 3 of 8 test samples of the paper edition" in txt
    assert "(Whole) covers" not in txt
    md = run_cli_in_process(["report", "--format", "markdown"], db=url).stdout.replace("\\", "")  # escaped markdown
    assert "(Part) covers 3 of 8 test samples" in md and "(Whole) covers" not in md
    # the plane (HTML report and Trade-off page) labels the point with the mark
    pts = report_html.plane_points(rep, report_html.run_provenance(engine, [r.run_id for r in rep.runs]))
    labels = dict(zip(pts["run_id"], pts["label"]))
    assert "covers 3 of 8 test samples" in labels[part["run_id"]]
    assert "covers" not in labels[whole["run_id"]]
    html = report_html.build(engine, rep)
    assert "covers 3 of 8 test samples" in html
