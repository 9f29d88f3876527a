"""The text ``report`` and ``runs`` (fresh-user trial): the report shows each run's id whole (two runs started
in one second share the first 22 characters, and the cut id was all it showed) and its monitor view; the
report's count column is ``judged`` (test-set samples with an outcome) and ``runs``' is ``samples`` (every
sample of the run, controls and pending included), where both read ``n``; a note under the report's table says
what the controls and their FAR are. ``--json`` is unchanged."""

from __future__ import annotations

import json

from helpers import add_control_sample, run_cli, write_pairs

from automonitor.cli.analysis import CONTROLS_NOTE


def _header(text: str, first: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith("┃") and f" {first} " in ln)
    return [c.strip() for c in line.strip("┃").split("┃")]


def _row(text: str, run_id: str, header: list[str]) -> dict[str, str]:
    line = next(ln for ln in text.splitlines() if ln.startswith("│") and f" {run_id} " in ln)
    return dict(zip(header, (c.strip() for c in line.strip("│").split("│"))))


def test_report_text_shows_whole_ids_view_judged_and_the_controls_note(tmp_path, sqlite_url, sqlite_engine):
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert run_cli(["import", str(f)], db=sqlite_url).returncode == 0
    add_control_sample(sqlite_engine)
    ids = []
    for view in ("full", "answer"):
        r = run_cli(["run", "--monitor", "rules", "--template", "direct", "--view", view, "--json"], db=sqlite_url)
        assert r.returncode == 0, r.stderr
        ids.append(json.loads(r.stdout)["run_id"])
    rep = run_cli(["report", "--no-audit"], db=sqlite_url)
    assert rep.returncode == 0, rep.stderr
    header = _header(rep.stdout, "run")
    assert header[:6] == ["run", "monitor", "template", "view", "kind", "judged"] and "n" not in header, header
    doc = json.loads(run_cli(["report", "--json", "--no-audit"], db=sqlite_url).stdout)
    by_id = {r["run_id"]: r for r in doc["runs"]}
    for run_id, view in zip(ids, ("full", "answer")):
        row = _row(rep.stdout, run_id, header)  # the whole id, in its own cell
        assert row["run"] == run_id and row["view"] == view == by_id[run_id]["view"], row
        assert row["judged"] == str(by_id[run_id]["overall"]["n"]), (row, by_id[run_id]["overall"])
        ctl = by_id[run_id]["controls"]
        assert ctl["n"] == 1 and row["FAR controls"] == f"{ctl['far']:.3f} of 1", row
    assert "n" in doc["runs"][0]["overall"] and "judged" not in doc["runs"][0]["overall"]  # JSON unchanged
    # one note line, right under the table
    lines = rep.stdout.splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("└"))  # the runs table ends
    assert lines[end + 1] == CONTROLS_NOTE and "benign-only" in CONTROLS_NOTE and "flagged" in CONTROLS_NOTE
    # runs: the run's samples (test draw + controls, pending included), the JSON's n
    runs = run_cli(["runs"], db=sqlite_url)
    rh = _header(runs.stdout, "run_id")
    assert "samples" in rh and "n" not in rh, rh
    rows = {r["run_id"]: r for r in json.loads(run_cli(["runs", "--json"], db=sqlite_url).stdout)["runs"]}
    for run_id in ids:
        assert (
            _row(runs.stdout, run_id, rh)["samples"] == str(rows[run_id]["n"]) == str(by_id[run_id]["overall"]["n"] + 1)
        )


def test_report_without_controls_prints_no_controls_note(tmp_path, sqlite_url):
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert run_cli(["import", str(f)], db=sqlite_url).returncode == 0
    assert run_cli(["run", "--monitor", "rules", "--template", "direct"], db=sqlite_url).returncode == 0
    rep = run_cli(["report", "--no-audit"], db=sqlite_url)
    assert rep.returncode == 0 and CONTROLS_NOTE not in rep.stdout and "FAR controls" in rep.stdout


def test_an_auroc_from_a_few_scores_says_how_few(tmp_path, sqlite_url):
    """A run whose judge gave a score for 4 of its answers (a fresh-user trial: ``AUROC 0.500`` from 4 scores of
    100 verdicts, read as a ranking of the run) shows how many the AUROC rests on; a fully scored run does not."""
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert run_cli(["import", str(f)], db=sqlite_url).returncode == 0
    exp = tmp_path / "x.jsonl"
    assert run_cli(["export", str(exp), "--blind"], db=sqlite_url).returncode == 0
    sids = [json.loads(line)["sample_id"] for line in exp.read_text().splitlines()]
    assert len(sids) > 4
    labels = {}
    full = tmp_path / "full.jsonl"
    assert run_cli(["export", str(full)], db=sqlite_url).returncode == 0
    for line in full.read_text().splitlines():
        rec = json.loads(line)
        labels[rec["sample_id"]] = rec["label"]
    few, every = tmp_path / "few.jsonl", tmp_path / "every.jsonl"
    scored = sorted(sids, key=lambda s: labels[s])[:2] + sorted(sids, key=lambda s: labels[s])[-2:]  # both classes
    with open(few, "w") as a, open(every, "w") as b:
        for i, sid in enumerate(sids):
            rec = {"sample_id": sid, "outcome": labels[sid]}
            score = {"score": 0.9 if labels[sid] == "misbehavior" else 0.1}
            a.write(json.dumps(rec | (score if sid in scored else {})) + "\n")
            b.write(json.dumps(rec | score) + "\n")
    for path, name in ((few, "few-scores"), (every, "all-scores")):
        imp = run_cli(["predictions", "import", str(path), "--monitor", name], db=sqlite_url)
        assert imp.returncode == 0, imp.stderr
    rep = run_cli(["report", "--no-audit"], db=sqlite_url)
    assert rep.returncode == 0, rep.stderr
    header = _header(rep.stdout, "run")
    doc = json.loads(run_cli(["report", "--json", "--no-audit"], db=sqlite_url).stdout)
    cells = {r["monitor"]: _row(rep.stdout, r["run_id"], header)["AUROC"] for r in doc["runs"]}
    judged = {r["monitor"]: r["overall"]["n"] for r in doc["runs"]}
    assert cells["few-scores"] == f"1.000 (4 of {judged['few-scores']} scored)", cells
    assert cells["all-scores"] == "1.000", cells


def test_runs_table_never_wraps_a_run_id(sqlite_url, sqlite_engine):
    """``automonitor runs`` folded long cells, the run id too: beside a long monitor name and a "running (no live
    process)" status the 26-character id wrapped ("run_..._c28a" then "b0" on the next line), and copied for ``run
    --resume`` it named no run (trial60). The id is whole on its row; the other columns fold for it."""
    from store import session_scope
    from store.models import Monitor, Run

    ids = [f"run_20261207_23354{i}_c28ab{i}" for i in range(3)]
    with session_scope(sqlite_engine) as s:
        m = Monitor(name="openai:" + "a-very-long-fine-tuned-judge-model-name-" * 3, backend="openai")
        s.add(m)
        s.flush()
        for i, rid in enumerate(ids):
            s.add(
                Run(
                    id=rid,
                    monitor_id=m.id,
                    monitor=m.name,
                    template="evidence-" + "x" * 40 * i,
                    status="running" if i else "finished",
                    n=3010,
                    params={"lease": {"pid": 1 << 30, "host": "elsewhere", "heartbeat": 0.0}} if i else {},
                )
            )
    out = run_cli(["runs"], db=sqlite_url)
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("│")]
    for rid in ids:
        assert any(f"│ {rid} " in ln for ln in rows), (rid, out.stdout)
