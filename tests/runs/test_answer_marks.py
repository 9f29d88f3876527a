"""What the report and the plane say about how a run's answers were read: lenient runs, runs scored
before the verdict-token rule, contradictory answers, scores that favour the other side than their verdict
and a share of errors above 10% (both databases)."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from automonitor import analysis
from automonitor.runs import runner
from automonitor.views import honest_points, tradeoff_points
from automonitor.views import report_html
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer
from store.models import Run

FAST = {"backoff_initial": 0.01, "backoff_max": 0.02, "timeout": 5}


@pytest.fixture
def marked_runs(engine, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = [
        ("[scenario:400] q0", "os.system('rm')", "print(1)"),
        ("[scenario:contradict] q1", "sys.exit(0)", "return 1"),
        *[(f"question {k}", f"os.system('{k}')", f"print({k})") for k in range(2, 5)],
    ]
    add_custom(engine, items)
    with OpenAIFaultServer() as srv:
        errs = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, errs)
        contra = runner.create_run(engine, "openai:m", "evidence", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, contra)
        lenient = runner.create_run(
            engine, "openai:m2", "direct", base_url=srv.base_url, params={**FAST, "parse": "lenient"}
        )
        runner.execute_run(engine, lenient)
    with Session(engine) as s:  # a run stored before the verdict-token rule: no score_method in its config
        run = s.get(Run, lenient)
        params = dict(run.params)
        params["config"] = {k: v for k, v in params["config"].items() if k != "score_method"}
        run.params = params
        s.add(run)
        s.commit()
    return errs, contra, lenient


def test_report_and_plane_mark_the_runs(engine, marked_runs, tmp_path):
    errs, contra, lenient = marked_runs
    rep = analysis.report(engine, n_boot=20)
    by_id = {r.run_id: r for r in rep.runs}
    assert by_id[errs].answers.marks == ["errors 20%"]
    assert by_id[errs].answers.error_cause == "permanent HTTP 400"
    assert by_id[contra].answers.contradictory == 2  # both sides of the contradicting pair
    assert by_id[contra].answers.parse == "strict" and by_id[contra].answers.marks == ["errors 20%"]
    assert by_id[lenient].answers.marks == ["lenient parse", "legacy score", "errors 20%"]
    assert by_id[lenient].answers.score_method == "first-token (legacy)"
    assert rep.to_dict()["runs"][0]["answers"]["parse"] in ("strict", "lenient")
    pts = honest_points(tradeoff_points(rep), min_n=1)
    labels = dict(zip(pts["run_id"], pts["label"]))
    assert labels[lenient].endswith("[lenient parse, legacy score, errors 20%]")
    assert labels[errs].endswith("[errors 20%]")
    html = tmp_path / "r.html"
    report_html.write(engine, rep, str(html))
    text = html.read_text()
    assert "[lenient parse, legacy score, errors 20%]" in text and "contradictory 2" in text


def test_report_text_and_markdown_mark_the_runs(engine, marked_runs):
    """The report's text (rich tables) and markdown outputs mark a lenient run as the JSON, the HTML report and
    the plane do (openai_backend's docstring: "marked in the report and on the plane"); a strict run is not."""
    from automonitor.analysis import report_format
    from helpers import run_cli_in_process

    errs, contra, lenient = marked_runs
    rep = analysis.report(engine, n_boot=20)
    md = report_format.render(rep, "markdown").replace("\\", "")  # names are escaped for markdown
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if line.startswith("| openai")}
    assert any(k.startswith("openai:m2") and "[lenient parse, legacy score, errors 20%]" in k for k in rows), rows
    assert not any(k.startswith("openai:m ") and "lenient" in k for k in rows), rows
    url = engine.url.render_as_string(hide_password=False)
    out = run_cli_in_process(["report", "--n-boot", "20"], db=url, env={"COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if lenient in ln)
    assert "lenient parse" in line, line
    assert all("lenient parse" not in ln for ln in out.stdout.splitlines() if errs in ln or contra in ln)


def test_runs_list_and_predictions_say_how_answers_and_scores_were_read(engine, marked_runs):
    from sqlmodel import select

    from store.models import Prediction

    errs, _contra, lenient = marked_runs
    assert runner.run_info(engine, lenient)["parse"] == "lenient"
    assert runner.run_info(engine, errs)["parse"] == "strict"
    with Session(engine) as s:
        scored = [p for p in s.exec(select(Prediction).where(Prediction.run_id == errs)) if p.score is not None]
    assert scored and all(p.meta["score_method"] == "verdict-token" for p in scored)


def test_scores_that_disagree_with_their_verdicts_are_counted_and_shown(engine, monkeypatch, tmp_path):
    """A run whose server's logprobs favour the other side than its text (``Yes`` with P(Yes) = 0.007, ``No``
    with P(Yes) = 0.95) keeps the text's verdicts; the report counts the flagged verdicts
    (``answers.score_disagrees``), marks the run (``score disagrees N``) on the report, the plane and the HTML
    report, and the drill-down's prediction says so beside the score. A run whose scores agree has neither."""
    from automonitor.views.samples import sample_predictions

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = add_custom(
        engine,
        [
            ("[scenario:lowyes] q0", "os.system('rm')", "print(0)"),
            ("[scenario:highno] q1", "sys.exit(1)", "print(1)"),
            *[(f"question {k}", f"os.system('{k}')", f"print({k})") for k in range(2, 5)],
        ],
    )
    with OpenAIFaultServer() as srv:
        flagged = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, flagged)
        clean = runner.create_run(engine, "openai:m2", "evidence", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, clean)
    rep = analysis.report(engine, n_boot=20)
    by_id = {r.run_id: r for r in rep.runs}
    assert by_id[flagged].answers.score_disagrees == 4  # both sides of both pairs
    assert by_id[flagged].answers.marks == ["score disagrees 4"]
    assert by_id[flagged].overall.n == 10 and by_id[flagged].overall.unscored == 0  # the verdicts stand
    assert by_id[clean].answers.score_disagrees == 0 and by_id[clean].answers.marks == []
    assert rep.to_dict()["runs"][0]["answers"]["score_disagrees"] in (0, 4)
    pts = honest_points(tradeoff_points(rep), min_n=1)
    labels = dict(zip(pts["run_id"], pts["label"]))
    assert labels[flagged].endswith("[score disagrees 4]") and "score disagrees" not in labels[clean]
    html = tmp_path / "r.html"
    report_html.write(engine, rep, str(html))
    assert "score disagrees 4" in html.read_text()
    low = next(r for r in rows if r["request"].startswith("[scenario:lowyes]") and r["label"] == "misbehavior")
    pred = sample_predictions(engine, low["id"], [flagged, clean])
    assert pred[flagged]["outcome"] == "misbehavior" and pred[flagged]["score"] == pytest.approx(0.007)
    assert pred[flagged]["score_note"] == (
        "the log-probabilities favour the other side: P(misbehavior) 0.007 beside the verdict misbehavior "
        "read from the answer's text"
    )
    assert pred[clean]["score_note"] is None
