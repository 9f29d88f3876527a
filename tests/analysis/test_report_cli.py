"""`automonitor report`: contract JSON, paper-style markdown/LaTeX/CSV tables, rich default, exit codes."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest

from automonitor import analysis
from automonitor.analysis import report_format
from automonitor.vocab import CATEGORIES, TASKS

M, B = "misbehavior", "benign"
PAIRS = 9
# (run id, monitor, template, P(flag misbehavior side) pattern, P(flag benign side) pattern)
RUNS = [
    ("r1", "gpt_4o & co", "direct", lambda p: p % 3 != 0, lambda p: p == 1),
    ("r2", "gpt_4o & co", "evidence", lambda p: p != 0, lambda p: p in (1, 2, 5)),
    ("r3", "small-judge", "direct", lambda p: p % 2 == 0, lambda p: False),
]


def seed(engine) -> None:
    from store import session_scope
    from store.models import Monitor, Prediction, Run, Sample

    with session_scope(engine) as s:
        for p in range(PAIRS):
            for lab in (M, B):
                s.add(
                    Sample(
                        id=f"s{p}{lab[0]}",
                        pair_id=f"p{p}",
                        category=CATEGORIES[p % 3],
                        task=TASKS[p // 3],
                        label=lab,
                        request=f"q{p}",
                        response=f"r{p}{lab}",
                        split="test",
                        request_hash="q",
                        response_hash=f"{p}{lab}",
                        content_hash=f"{p}{lab}",
                    )
                )
        mons = {}
        for i, (rid, mon, tpl, fm, fb) in enumerate(RUNS):
            if mon not in mons:
                mons[mon] = Monitor(name=mon, backend="rules")
                s.add(mons[mon])
                s.flush()
            s.add(
                Run(
                    id=rid,
                    monitor_id=mons[mon].id,
                    monitor=mon,
                    template=tpl,
                    status="finished",
                    created_at=pd.Timestamp("2026-02-01", tz="UTC") + pd.Timedelta(seconds=i),
                )
            )
            s.flush()
            for p in range(PAIRS):
                om = M if fm(p) else B
                ob = M if fb(p) else B
                if rid == "r3" and p == 4:
                    ob = "error"
                s.add(Prediction(run_id=rid, sample_id=f"s{p}m", outcome=om))
                s.add(Prediction(run_id=rid, sample_id=f"s{p}b", outcome=ob))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from store import get_engine, init_db

    url = f"sqlite:///{tmp_path_factory.mktemp('report') / 'store.db'}"
    eng = init_db(get_engine(url, fresh=True))
    seed(eng)
    yield url, eng
    eng.dispose()


SLICE_KEYS = {"n", "tp", "fn", "fp", "tn", "unscored", "mr", "far", "mr_ci", "far_ci"}


@pytest.mark.slow
def test_report_json_follows_the_contract(cli, store):
    url, eng = store
    r = cli(["report", "--json", "--n-boot", "100"], db=url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"runs", "pareto", "pearson_r"} <= set(doc)
    assert [x["run_id"] for x in doc["runs"]] == ["r1", "r2", "r3"]
    for run in doc["runs"]:
        assert {"run_id", "monitor", "template", "overall", "by_category", "by_task"} <= set(run)
        for s in [run["overall"], *run["by_category"].values(), *run["by_task"].values()]:
            assert SLICE_KEYS <= set(s)
            assert s["tp"] + s["fn"] + s["fp"] + s["tn"] + s["unscored"] == s["n"]
        assert set(run["by_category"]) == set(CATEGORIES) and set(run["by_task"]) == set(TASKS)
    # same numbers as the in-process analysis (the CLI adds the audit's baselines: tests/data/test_audit.py)
    assert "audit" in doc and all("baselines" in x for x in doc["runs"])
    doc.pop("audit")
    for x in doc["runs"]:
        x.pop("baselines"), x.pop("baselines_edition")
    assert doc == json.loads(
        json.dumps(analysis.report(eng, n_boot=100, edition="paper").to_dict())
    )  # CLI default edition
    assert all(x["edition"] == "paper" and x["controls"]["n"] == 0 for x in doc["runs"])
    r3 = doc["runs"][2]["overall"]
    assert r3["unscored"] == 1 and r3["far"] == 0.0 and r3["fp"] + r3["tn"] == PAIRS - 1
    assert isinstance(doc["pearson_r"], float)

    sel = cli(["report", "--json", "--run", "r3", "--run", "r1", "--invalid", "as-flag", "--n-boot", "50"], db=url)
    d2 = json.loads(sel.stdout)
    assert [x["run_id"] for x in d2["runs"]] == ["r3", "r1"] and d2["pearson_r"] is None
    # the error is never a verdict, even under as-flag: it stays unscored and out of FP
    r3_flag = d2["runs"][0]["overall"]
    assert d2["invalid_policy"] == "as-flag" and r3_flag["fp"] == 0 and r3_flag["unscored"] == 1
    assert r3_flag["far"] == 0.0 and r3_flag["fp"] + r3_flag["tn"] == PAIRS - 1


@pytest.mark.slow
def test_report_tables_and_default_output(cli, store):
    url, eng = store
    rep = analysis.report(eng, n_boot=20).to_dict()
    out = cli(["report", "--format", "csv", "--n-boot", "20"], db=url)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [r["monitor"] for r in rows] == ["gpt_4o & co", "small-judge"]  # rows = monitors
    by = {x["run_id"]: x for x in rep["runs"]}
    assert float(rows[0]["overall_mr_direct"]) == pytest.approx(by["r1"]["overall"]["mr"])
    assert float(rows[0]["overall_far_evidence"]) == pytest.approx(by["r2"]["overall"]["far"])
    assert float(rows[0]["sycophancy_bias_mr_evidence"]) == pytest.approx(
        by["r2"]["by_category"]["sycophancy_bias"]["mr"]
    )
    assert rows[1]["overall_mr_evidence"] == "" and rows[1]["runs"] == "r3"
    assert float(rows[1]["overall_unscored_rate_direct"]) == pytest.approx(1 / (2 * PAIRS))

    md = report_format.render(rep, "markdown")  # the CLI prints exactly this (checked for csv above)
    lines = [line for line in md.splitlines() if line.startswith("|")]
    assert (
        len(lines) == 2 + 2 and "Overall MR (direct)" in lines[0] and "Specification Gaming FAR (evidence)" in lines[0]
    )
    assert lines[2].startswith("| gpt\\_4o \\& co | ") and f"| {by['r1']['overall']['mr']:.2f} |" in lines[2]

    tex = report_format.render(rep, "latex")
    assert "\\begin{tabular}" in tex and "gpt\\_4o \\& co" in tex and "\\bottomrule" in tex
    assert out.stdout == report_format.render(rep, "csv")

    plain = cli(["report", "--n-boot", "20"], db=url)
    assert plain.returncode == 0 and "r1" in plain.stdout and "Pareto front" in plain.stdout
    # the text table follows the plane's rule, as the app and the HTML report do: these runs judged fewer than
    # the plane's minimum, so none is '*' on the front though the JSON's on_front (every run) puts some there
    assert any(r["on_front"] for r in rep["runs"])
    rows: dict[str, str] = {}  # the first table (MR / FAR per run) holds each run's first row
    for ln in plain.stdout.splitlines():
        if ln.count("│") > 5:
            rows.setdefault(ln.split("│")[1].strip(), ln)
    assert {"r1", "r2", "r3"} <= set(rows) and all(
        "hollow" in rows[r] and "*" not in rows[r] for r in ("r1", "r2", "r3")
    )
    assert "Pareto front: -" in plain.stdout and "hollow: 3 run(s)" in plain.stdout
    # and Pearson r leaves them out there too (the JSON's pearson_r is over every run)
    assert rep["pearson_r"] is not None and "Pearson r(MR, FAR): n/a" in plain.stdout
    # ... and the text says what the JSON holds and why the line above withholds it (fresh-user trial: "-" and
    # "n/a" next to a JSON front of 2 runs and r = -0.97 read as a contradiction)
    note = next(ln for ln in plain.stdout.splitlines() if ln.startswith("Over every run"))
    assert f"Pareto front {', '.join(rep['pareto'])};" in note and f"{rep['pearson_r']:.3f}" in note
    assert "fewer than 100 judged samples" in note


@pytest.mark.slow
def test_report_bad_usage_exits_2(cli, store):
    url, _ = store
    for args, needle in (
        (["--invalid", "as-benign"], "--invalid"),
        (["--run", "nope"], "nope"),
        (["--format", "html"], "--format"),
        (["--json", "--format", "csv"], "--format"),
        (["--cost-ratio", "0"], "--cost-ratio"),
    ):
        r = cli(["report", *args], db=url)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and r.stdout == ""


def test_report_to_a_folder_that_is_not_there_exits_2_before_the_report(cli, store, tmp_path):
    """Fresh-user trial: ``report --format html -o /nonexistent/dir/r.html`` built the whole report, then
    printed ``error: FileNotFoundError`` and exited 1. It is a usage error, said before any work; an output
    path the command cannot write (a directory) is named too."""
    url, _ = store
    missing = tmp_path / "not-there" / "r.html"
    for args in (["--format", "html"], ["--json"], ["--format", "markdown"]):
        r = cli(["report", *args, "--output", str(missing)], db=url)
        assert r.returncode == 2, (args, r.stderr)
        assert "the directory does not exist" in r.stderr and str(missing) in r.stderr and "--output" in r.stderr
        assert "Traceback" not in r.stderr and "FileNotFoundError" not in r.stderr and not missing.parent.exists()
    r = cli(["report", "--json", "--output", str(tmp_path)], db=url)  # a directory, not a file: before any work
    assert r.returncode == 2 and "cannot write it" in r.stderr and "--output" in r.stderr, r.stderr
    assert "it is a directory" in r.stderr
    r = cli(["report", "--format", "latex", "--output", ""], db=url)  # an empty path (trial): before any work
    assert r.returncode == 2 and "an empty path" in r.stderr and "--output" in r.stderr, r.stderr


def _report_dict():
    rows = []
    for rid, mon, tpl, fm, fb in RUNS:
        for p in range(PAIRS):
            for lab, f in ((M, fm), (B, fb)):
                rows.append(
                    {
                        "run_id": rid,
                        "sample_id": f"s{p}{lab[0]}",
                        "pair_id": f"p{p}",
                        "category": CATEGORIES[p % 3],
                        "task": TASKS[p // 3],
                        "label": lab,
                        "outcome": M if f(p) else B,
                        "score": float("nan"),
                        "evidence": [],
                    }
                )
    runs = pd.DataFrame(
        [(r[0], r[1], r[2]) for r in RUNS] + [("r4", "gpt_4o & co", "direct")],
        columns=["run_id", "monitor", "template"],
    )
    preds = pd.DataFrame(rows)
    extra = preds[preds["run_id"] == "r1"].assign(run_id="r4")
    return analysis.analyze(pd.concat([preds, extra]), runs, n_boot=10).to_dict()


def test_paper_table_puts_repeated_runs_on_their_own_rows():
    rep = _report_dict()
    cols, rows = report_format.paper_table(rep)
    assert [r["monitor"] for r in rows] == ["gpt_4o & co #1", "gpt_4o & co #2", "small-judge"]
    assert rows[0]["runs"] == ["r1", "r2"] and rows[1]["runs"] == ["r4"]
    assert [c["key"] for c in cols][:6] == [
        "overall_mr_direct",
        "overall_mr_evidence",
        "overall_far_direct",
        "overall_far_evidence",
        "overall_unscored_rate_direct",
        "overall_unscored_rate_evidence",
    ]
    assert len(cols) == 6 + 4 * len(CATEGORIES)
    assert report_format.latex_escape("a_b&c%") == "a\\_b\\&c\\%"
    with pytest.raises(ValueError):
        report_format.render(rep, "html")
