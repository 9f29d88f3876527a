"""The typed report (``automonitor.analysis.report_schema``): ``report --json`` prints the models' dump, and that
dump is byte-for-byte the JSON of the dict-built report before the models existed (pinned in
``tests/fixtures/goldens/report_golden.json``, written by the pre-model code on the store seeded here: score and
evidence runs, an unscored policy, a repeated run, controls, a paired comparison, audit baselines)."""

from __future__ import annotations

import os

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from automonitor import analysis
from automonitor.analysis import report_format
from automonitor.analysis.report_schema import Report, RunReport, SliceStats, as_report
from automonitor.vocab import CATEGORIES, TASKS

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "goldens" / "report_golden.json"
_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def same_bytes(got: str, pinned: str) -> bool:
    """``got`` is the pinned JSON text byte for byte, except that floats agree to 12 significant digits
    (the last digit of a float from scipy/numpy varies between their releases and CPUs)."""

    def norm(text: str) -> str:
        return _FLOAT.sub(lambda m: f"{float(m.group(0)):.12g}", text)

    return norm(got) == norm(pinned)


ARGS = ["report", "--json", "--n-boot", "40", "--seed", "7", "--compare", "rA,rC", "--cost-ratio", "2"]
M, B = "misbehavior", "benign"
N_PAIRS = 12


def _outcome(rid: str, p: int, lab: str) -> str | None:
    if rid == "rA":  # misses p % 3 == 0, false alarms on 1 and 2, invalid on 4b, pending on 5b
        return (B if p % 3 == 0 else M) if lab == M else {1: M, 2: M, 4: "invalid", 5: None}.get(p, B)
    if rid == "rB":  # refusal on 0m; false alarms for p < 6
        return ("refusal" if p == 0 else M) if lab == M else (M if p < 6 else B)
    return M if (lab == M or p % 4 == 0) else B


def seed(engine) -> None:
    """12 test pairs over the 3 categories x 3 tasks, 6 train pairs, a control sample; runs rA (direct),
    rB (evidence, scores), rC (another monitor, judged twice: ``--repeat 2``)."""
    from store import session_scope
    from store.models import Monitor, Prediction, Run, Sample

    def sample(sid: str, pair: str, cat: str, task: str, lab: str, split: str, text: str) -> Sample:
        return Sample(
            id=sid,
            pair_id=pair,
            category=cat,
            task=task,
            label=lab,
            request=f"Request {pair}: please run the check",
            response=text,
            source="test",
            split=split,
            request_hash=f"r{sid}",
            response_hash=f"h{sid}",
            content_hash=f"c{sid}",
        )

    with session_scope(engine) as s:
        for p in range(N_PAIRS):
            for lab in (M, B):
                text = f"Step {p}:  I will  Bypass the CHECK\nfor pair {p} ({lab})." + " more" * (p if lab == M else 0)
                s.add(sample(f"s{p}{lab[0]}", f"p{p}", CATEGORIES[p // 4], TASKS[p % 3], lab, "test", text))
        for p in range(6):
            for lab in (M, B):
                text = ("bad " * (3 + p) if lab == M else "ok ") + f"train {p}"
                s.add(sample(f"t{p}{lab[0]}", f"tp{p}", CATEGORIES[0], TASKS[0], lab, "train", text))
        s.add(sample("c0b", "controls:c0", CATEGORIES[1], TASKS[1], B, "controls", "a benign control"))
        mons = {name: Monitor(name=name, backend="rules") for name in ("alpha", "beta")}
        s.add_all(mons.values())
        s.flush()
        runs = {"rA": ("alpha", "direct", {}), "rB": ("alpha", "evidence", {}), "rC": ("beta", "direct", {})}
        runs["rC"] = ("beta", "direct", {"judge": {"repeat": 2}})
        for i, (rid, (mon, tpl, params)) in enumerate(runs.items()):
            s.add(
                Run(
                    id=rid,
                    monitor_id=mons[mon].id,
                    monitor=mon,
                    template=tpl,
                    status="finished",
                    n=2 * N_PAIRS,
                    params=params,
                    created_at=pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=i),
                )
            )
            s.flush()
            for p in range(N_PAIRS):
                for lab in (M, B):
                    kw: dict = {}
                    if rid == "rB":
                        score = 0.6 + 0.03 * p if lab == M else 0.1 + 0.05 * p
                        ev = (
                            [f"Bypass the CHECK\nfor pair {p}", "rm -rf /"]
                            if lab == M
                            else [f"i will bypass the check for pair {p}"]
                        )
                        kw = {"score": round(score, 4), "evidence": ev}
                    s.add(Prediction(run_id=rid, sample_id=f"s{p}{lab[0]}", outcome=_outcome(rid, p, lab), **kw))
                    if rid == "rC":
                        flip = B if (p % 5 == 0 and lab == M) else _outcome(rid, p, lab)
                        s.add(Prediction(run_id=rid, sample_id=f"s{p}{lab[0]}", outcome=flip, repeat=1))
            s.add(Prediction(run_id=rid, sample_id="c0b", outcome=M if rid == "rB" else B))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from store import get_engine, init_db

    url = f"sqlite:///{tmp_path_factory.mktemp('schema') / 'store.db'}"
    eng = init_db(get_engine(url, fresh=True))
    seed(eng)
    yield url, eng, tmp_path_factory.mktemp("cache")
    eng.dispose()


@pytest.mark.slow
def test_report_json_is_byte_for_byte_the_pinned_report(cli, store):
    url, _, cache = store
    r = cli(ARGS, db=url, env={"AUTOMONITOR_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert same_bytes(r.stdout, GOLDEN.read_text())


def test_the_pinned_report_round_trips_through_the_models():
    text = GOLDEN.read_text()
    doc = json.loads(text)
    rep = Report.model_validate(doc)
    assert rep.to_dict() == doc
    assert json.dumps(rep.to_dict(), indent=2) + "\n" == text  # same key order, ints stay ints
    # the pinned store has every optional part
    assert {r.run_id for r in rep.runs if r.roc} == {"rB"} and rep.run("rB").grounding is not None
    assert rep.run("rC").stability is not None and rep.run("rA").controls is not None
    assert rep.paired and rep.audit and all(r.baselines is not None for r in rep.runs)


def test_python_api_report_is_the_typed_model(store):
    _, eng, _ = store
    model = analysis.report(eng, n_boot=20, compare=[("rA", "rC")])
    assert isinstance(model, Report) and isinstance(model.runs[0], RunReport)
    assert isinstance(model.runs[0].overall, SliceStats)
    # the old aliases are gone (0.3)
    assert not hasattr(analysis, "report_model") and not hasattr(analysis, "analyze_model")
    assert "roc" not in model.to_dict()["runs"][0] and "roc" in model.to_dict()["runs"][1]  # unset parts left out
    # the report formats read the model and the dict alike
    for fmt in report_format.FORMATS:
        assert report_format.render(model, fmt) == report_format.render(model.to_dict(), fmt)
    assert as_report(model) is model


def test_a_malformed_report_dict_names_the_field():
    doc = json.loads(GOLDEN.read_text())
    doc["runs"][0]["overall"].pop("tp")
    with pytest.raises(ValueError, match=r"runs\.0\.overall\.tp"):
        as_report(doc)


AUDIT_GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "goldens" / "audit_golden.json"


@pytest.mark.slow
def test_audit_json_is_byte_for_byte_the_pinned_audit(cli, store):
    """``audit --json`` on the same store, pinned before ``audit_frame`` was split into named steps."""
    url, _, cache = store
    env = {"AUTOMONITOR_CACHE_DIR": str(cache), "AUTOMONITOR_ERRATA": str(cache / "no-errata.jsonl")}
    r = cli(["audit", "--json", "--no-cache"], db=url, env=env)  # pinned without errata (the repo's file grows)
    assert r.returncode == 0, r.stderr
    if os.environ.get("AUTOMONITOR_REPIN_AUDIT") == "1":  # deliberate re-pin after an additive change
        AUDIT_GOLDEN.write_text(r.stdout)
    assert same_bytes(r.stdout, AUDIT_GOLDEN.read_text())


def test_drilldown_cells_and_roc_count_the_samples_of_the_plane_not_the_controls(store):
    """rB flags the benign-only control c0b: its controls FAR says so, but the drill-down's FP cell and the
    ROC hold the same samples as the run's MR/FAR (before, the control was among the FPs and negatives)."""
    from automonitor import analysis

    _, eng, _ = store
    rep = analysis.report(eng, ["rB"], "exclude")
    run = rep.run("rB")
    assert run.controls is not None and run.controls.fp == 1
    fp = analysis.cell_samples(eng, "rB", "fp")
    assert "c0b" not in set(fp["sample_id"]) and len(fp) == run.overall.fp
    roc = analysis.roc_frame(eng, "rB")
    negatives = run.overall.fp + run.overall.tn
    assert round(float(roc["fpr"].iloc[-1]) * negatives) == negatives  # the last point flags every negative
    assert set((roc["fpr"] * negatives).round(6)) <= {float(k) for k in range(negatives + 1)}


def test_a_status_or_kind_this_version_does_not_know_is_reported_as_null(store, caplog):
    """A store written by another version may hold a run status (or kind) outside the vocabulary's
    ``RunStatus`` / ``RunKind``: the report still builds and prints, with ``null`` there and a logged
    warning naming the run; so does a report JSON carrying such a value. Known values are unchanged."""
    import sqlalchemy as sa

    from store.migrations.versions import r8_vocabulary_checks as checks

    _, eng, _ = store
    # a newer version's store: its database allows a status and a kind this version's vocabulary lacks
    run_checks = [r for r in checks.RULES if r[0] == "run"]
    with eng.begin() as c:
        old = c.execute(sa.text("select status, kind from run where id = 'rB'")).one()
        checks.drop(c, run_checks)
        c.execute(sa.text("update run set status = 'paused', kind = 'live' where id = 'rB'"))
    try:
        with caplog.at_level("WARNING", logger="automonitor.analysis.report_schema"):
            rep = analysis.report(eng, ["rA", "rB"], "exclude")
    finally:
        with eng.begin() as c:
            c.execute(
                sa.text("update run set status = :s, kind = :k where id = 'rB'"), {"s": old.status, "k": old.kind}
            )
            checks.create(c, run_checks)
    assert rep.run("rB").status is None and rep.run("rB").kind is None
    assert rep.run("rA").status == old.status and rep.run("rA").kind == old.kind  # known values unchanged
    assert "run rB: status 'paused' is not one of" in caplog.text and "kind 'live'" in caplog.text
    assert json.loads(json.dumps(rep.to_dict()))["runs"][1]["status"] is None
    doc = json.loads(GOLDEN.read_text())
    doc["runs"][0]["status"] = "paused"
    assert Report.model_validate(doc).runs[0].status is None


#: pairs whose rows carry ``meta.erratum`` (as a build marks them) in :func:`errata_store`: two test pairs, and a
#: train pair (no scored sample)
ERRATA = {"p1": "wrong", "p2": "doubtful", "tp0": "wrong"}


@pytest.fixture(scope="module")
def errata_store(tmp_path_factory):
    """The store of :func:`seed` with the pairs of :data:`ERRATA` marked (the pinned store has no erratum)."""
    import sqlalchemy as sa

    from store import get_engine, init_db

    url = f"sqlite:///{tmp_path_factory.mktemp('errata') / 'store.db'}"
    eng = init_db(get_engine(url, fresh=True))
    seed(eng)
    with eng.begin() as c:
        for pair, verdict in ERRATA.items():
            meta = {"erratum": {"verdict": verdict, "reason": "r", "reader": "t", "date": "2026-01-01"}}
            c.execute(sa.text("update sample set meta = :m where pair_id = :p"), {"m": json.dumps(meta), "p": pair})
    yield eng
    eng.dispose()


def test_the_report_counts_the_scored_samples_that_errata_mark(errata_store):
    """Trial defect 2: the paper edition scores pairs its errata read wrong or doubtful; the report says how many
    (each side of a marked pair is a sample; the marked train pair is no scored sample), and which edition
    leaves them out, in the JSON and as the one plain line the HTML report and the Trade-off page show."""
    from automonitor.analysis.report_schema import ErrataNote

    rep = analysis.report(errata_store, n_boot=20)
    assert rep.errata == {"paper": ErrataNote(samples=2 * N_PAIRS, wrong=2, doubtful=2, left_out_by="verified")}
    assert rep.to_dict()["errata"] == {"paper": {"samples": 24, "wrong": 2, "doubtful": 2, "left_out_by": "verified"}}
    line = (
        "paper edition: 2 scored samples are marked wrong and 2 doubtful by errata; "
        "the verified edition leaves them out."
    )
    assert report_format.errata_lines(rep) == [line]
    assert report_format.errata_lines(rep.to_dict(), ["verified"]) == []  # only the editions asked for
    # one run: its own judged samples (5b is pending in rA), both marked pairs among them
    only = analysis.report(errata_store, ["rA"], n_boot=20).errata
    assert only is not None and (only["paper"].samples, only["paper"].wrong) == (2 * N_PAIRS - 1, 2)


def test_a_report_on_a_store_without_errata_says_none_is_marked(store):
    """The pinned store has no erratum: the report counts 0 and no line is shown."""
    _, eng, _ = store
    rep = analysis.report(eng, n_boot=20)
    assert rep.errata is not None and (rep.errata["paper"].wrong, rep.errata["paper"].doubtful) == (0, 0)
    assert report_format.errata_lines(rep) == []
