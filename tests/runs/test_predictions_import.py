"""`automonitor predictions import`: outside verdicts become an imported run; all-or-nothing validation."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from automonitor.errors import InputError
from automonitor.runs.prediction_files import import_predictions

M, B = "misbehavior", "benign"


def seed_samples(engine, pairs: int = 4) -> list[str]:
    from store import session_scope
    from store.models import Sample

    ids = []
    with session_scope(engine) as s:
        for p in range(pairs):
            for lab in (M, B):
                sid = f"s{p}{lab[0]}"
                ids.append(sid)
                s.add(
                    Sample(
                        id=sid,
                        pair_id=f"p{p}",
                        category="sycophancy_bias",
                        task="qa",
                        label=lab,
                        request=f"q{p}",
                        response=f"The answer {p} is wrong, as you said ({lab})",
                        split="test",
                        request_hash="r",
                        response_hash=sid,
                        content_hash=sid,
                    )
                )
    return ids


def counts(engine) -> tuple[int, int, int]:
    with engine.connect() as c:
        return tuple(c.execute(sa.text(f"select count(*) from {t}")).scalar() for t in ("run", "prediction", "monitor"))


def good_rows(ids):
    rows = []
    for i, sid in enumerate(ids):
        rows.append(
            {
                "sample_id": sid,
                "outcome": [M, B, "invalid", M][i % 4],
                "score": round(i / 10, 2),
                "evidence": ["as you said"] if i % 2 == 0 else [],
                "raw": f"verdict {i}",
            }
        )
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path, rows):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "outcome", "score", "evidence", "raw"])
        for r in rows:
            w.writerow(
                [
                    r["sample_id"],
                    r["outcome"],
                    "" if r.get("score") is None else r["score"],
                    json.dumps(r.get("evidence", [])),
                    r.get("raw", ""),
                ]
            )
    return path


def test_import_jsonl_and_csv_become_runs_that_report_treats_like_any_run(engine, tmp_path):
    from automonitor import analysis

    ids = seed_samples(engine)
    rows = good_rows(ids)
    res = import_predictions(engine, write_jsonl(tmp_path / "v.jsonl", rows), "VendorGuard", "evidence")
    assert res["created"] and res["n"] == 8 and res["kind"] == res["status"] == "imported"
    assert res["counts"] == {M: 4, B: 2, "invalid": 2, "refusal": 0, "error": 0} and res["scores"] == 8
    res2 = import_predictions(engine, write_csv(tmp_path / "v.csv", rows), "OtherEval")
    assert res2["template"] == "direct"
    # same file again for the same monitor/template: no duplicate
    again = import_predictions(engine, tmp_path / "v.jsonl", "VendorGuard", "evidence")
    assert again["run_id"] == res["run_id"] and not again["created"]
    assert counts(engine) == (2, 16, 2)
    with engine.connect() as c:
        backends = set(c.execute(sa.text("select backend from monitor")).scalars())
    assert backends == {"external"}

    df = analysis.predictions_frame(engine, [res["run_id"], res2["run_id"]])
    a = df[df["run_id"] == res["run_id"]].set_index("sample_id")
    b = df[df["run_id"] == res2["run_id"]].set_index("sample_id")
    for r in rows:  # JSONL and CSV carry the same values
        for d in (a, b):
            assert d.loc[r["sample_id"], "outcome"] == r["outcome"]
            assert d.loc[r["sample_id"], "score"] == pytest.approx(r["score"])
            assert d.loc[r["sample_id"], "evidence"] == r["evidence"] and d.loc[r["sample_id"], "raw"] == r["raw"]
    rep = analysis.report(engine, n_boot=50).to_dict()
    ev = next(r for r in rep["runs"] if r["run_id"] == res["run_id"])
    assert ev["kind"] == "imported" and ev["overall"]["unscored"] == 2 and ev["overall"]["n"] == 8
    assert ev["grounding"]["exact"] == 4 and "auroc" in ev


BAD_CASES = [
    # (description, file content (bytes or list of rows), suffix, line, field)
    (
        "unknown sample",
        lambda ids: [{"sample_id": ids[0], "outcome": M}, {"sample_id": "nope", "outcome": B}],
        ".jsonl",
        2,
        "sample_id",
    ),
    ("bad outcome", lambda ids: [{"sample_id": ids[0], "outcome": "unsafe"}], ".jsonl", 1, "outcome"),
    ("score above 1", lambda ids: [{"sample_id": ids[0], "outcome": M, "score": 1.5}], ".jsonl", 1, "score"),
    ("score not a number", lambda ids: [{"sample_id": ids[0], "outcome": M, "score": "high"}], ".jsonl", 1, "score"),
    ("score boolean", lambda ids: [{"sample_id": ids[0], "outcome": M, "score": True}], ".jsonl", 1, "score"),
    (
        "duplicate sample",
        lambda ids: [
            {"sample_id": ids[0], "outcome": M},
            {"sample_id": ids[1], "outcome": B},
            {"sample_id": ids[0], "outcome": B},
        ],
        ".jsonl",
        3,
        "sample_id",
    ),
    (
        "evidence not list",
        lambda ids: [{"sample_id": ids[0], "outcome": M, "evidence": "quote"}],
        ".jsonl",
        1,
        "evidence",
    ),
    ("missing outcome", lambda ids: [{"sample_id": ids[0]}], ".jsonl", 1, "outcome"),
    (
        "malformed json",
        lambda ids: (json.dumps({"sample_id": ids[0], "outcome": M}) + '\n{"sample_id": \n').encode(),
        ".jsonl",
        2,
        None,
    ),
    (
        "non-utf8",
        lambda ids: (json.dumps({"sample_id": ids[0], "outcome": M}) + "\n").encode() + b'{"raw": "\xff"}\n',
        ".jsonl",
        2,
        None,
    ),
    ("empty", lambda ids: b"\n\n", ".jsonl", None, None),
    (
        "csv bad score",
        lambda ids: f"sample_id,outcome,score\n{ids[0]},misbehavior,0.2\n{ids[1]},benign,nan\n".encode(),
        ".csv",
        3,
        "score",
    ),
    (
        "csv bad evidence json",
        lambda ids: f'sample_id,outcome,evidence\n{ids[0]},benign,["x"\n'.encode(),
        ".csv",
        2,
        "evidence",
    ),
    (  # an outside system's text is capped as a judge's answer is (the trial stored a 30 MB reason)
        "reason over the cap",
        lambda ids: [{"sample_id": ids[0], "outcome": M}, {"sample_id": ids[1], "outcome": M, "reason": "r" * 256_001}],
        ".jsonl",
        2,
        "reason",
    ),
    (
        "csv raw over the cap",
        lambda ids: f"sample_id,outcome,raw\n{ids[0]},misbehavior,{'x' * 256_001}\n".encode(),
        ".csv",
        2,
        "raw",
    ),
    ("csv missing column", lambda ids: f"sample_id,score\n{ids[0]},0.1\n".encode(), ".csv", 1, "outcome"),
    ("csv header only", lambda ids: b"sample_id,outcome\n", ".csv", None, None),
]


@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_names_file_line_field_and_changes_nothing(sqlite_engine, tmp_path, case):
    _, make, suffix, line, field = case
    ids = seed_samples(sqlite_engine)
    content = make(ids)
    path = tmp_path / f"bad{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        write_jsonl(path, content)
    before = counts(sqlite_engine)
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, path, "Vendor")
    err = exc.value
    assert err.file == str(path) and err.line == line and err.field == field
    assert counts(sqlite_engine) == before == (0, 0, 0)


STRICT_CASES = [
    # (description, file content, suffix, line, field, message fragment): the shared strict reader
    (
        "nan score",
        lambda ids: (
            (json.dumps({"sample_id": ids[0], "outcome": M}) + "\n").encode()
            + f'{{"sample_id": "{ids[1]}", "outcome": "benign", "score": NaN}}\n'.encode()
        ),
        ".jsonl",
        2,
        "score",
        "not a finite number",
    ),
    (
        "duplicate key",
        lambda ids: f'{{"sample_id": "{ids[0]}", "outcome": "benign", "outcome": "misbehavior"}}\n'.encode(),
        ".jsonl",
        1,
        None,
        "duplicate key 'outcome'",
    ),
    (
        "csv non-utf8 cell",
        lambda ids: f"sample_id,outcome,raw\n{ids[0]},benign,ok\n{ids[1]},benign,caf@\n".encode().replace(
            b"@", b"\xe9"
        ),
        ".csv",
        3,
        "raw",
        "byte 0xe9",
    ),
    (
        "jsonl non-utf8 byte",
        lambda ids: f'{{"sample_id": "{ids[0]}", "raw": "caf@", "outcome": "benign"}}\n'.encode().replace(
            b"@", b"\xe9"
        ),
        ".jsonl",
        1,
        None,
        "byte 0xe9",
    ),
]


@pytest.mark.parametrize("case", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_strict_reader_rejects_nan_duplicate_keys_and_bad_bytes_by_line(sqlite_engine, tmp_path, case):
    _, make, suffix, line, field, fragment = case
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(make(seed_samples(sqlite_engine)))
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, path, "Vendor")
    err = exc.value
    assert (err.file, err.line, err.field) == (str(path), line, field) and fragment in str(err)
    assert counts(sqlite_engine) == (0, 0, 0)


def test_problems_are_listed_in_line_order(sqlite_engine, tmp_path):
    """Fresh-user trial 45: a file with a NaN (found while reading) on line 5, a JSON array on line 6 and bad
    fields on lines 2-4 (found while validating) listed line 5 first, then 6, 2, 3, 4. The error names the
    earliest bad line and lists the rest in line order."""
    ids = seed_samples(sqlite_engine)
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"sample_id": ids[0], "outcome": M}),
                json.dumps({"sample_id": ids[1], "outcome": "maybe"}),
                json.dumps({"sample_id": "nope", "outcome": B}),
                json.dumps({"sample_id": ids[2], "outcome": B, "score": "high"}),
                f'{{"sample_id": "{ids[3]}", "outcome": "benign", "score": NaN}}',
                "[1, 2]",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, path, "Vendor")
    err = exc.value
    lines = [p.line for p in err.problems]
    assert err.line == 2 and lines == sorted(lines) and {2, 5, 6} <= set(lines), (lines, str(err))
    listed = [int(m) for m in re.findall(r"line (\d+)", str(err))]
    assert listed == sorted(listed) and listed[0] == 2, str(err)
    assert counts(sqlite_engine) == (0, 0, 0)


def test_bad_options(sqlite_engine, tmp_path):
    ids = seed_samples(sqlite_engine)
    path = write_jsonl(tmp_path / "ok.jsonl", good_rows(ids))
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, path, "Vendor", "chain-of-thought")
    assert exc.value.field == "template"
    with pytest.raises(InputError):
        import_predictions(sqlite_engine, path, "  ")
    # a name holding a terminal escape (issue 41 trial: `runs` printed ESC ] 0 ; ... BEL from a monitor name raw)
    for name in ("t9\x1b[31m", "t10\x1b]0;PWN\x07", "a\rb", "x\u202ey"):
        with pytest.raises(InputError, match="control characters") as exc:
            import_predictions(sqlite_engine, path, name)
        assert exc.value.field == "monitor"
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, tmp_path / "missing.jsonl", "Vendor")
    assert exc.value.file.endswith("missing.jsonl")
    assert counts(sqlite_engine) == (0, 0, 0)


@pytest.mark.slow
def test_cli_import_json_and_exit_2(cli, sqlite_url, sqlite_engine, tmp_path):
    """The real console script (SQLite; the import itself is tested on both databases above)."""

    db_url = sqlite_url
    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    ids = seed_samples(eng)
    ok = write_jsonl(tmp_path / "ok.jsonl", good_rows(ids))
    r = cli(["predictions", "import", str(ok), "--monitor", "Guard", "--template", "evidence", "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["n"] == len(ids) and doc["run_id"].startswith("imp-")
    bad = write_jsonl(
        tmp_path / "bad.jsonl", [{"sample_id": ids[0], "outcome": M}, {"sample_id": ids[1], "outcome": "?"}]
    )
    r2 = cli(["predictions", "import", str(bad), "--monitor", "Guard2", "--json"], db=db_url)
    assert r2.returncode == 2 and r2.stdout == ""
    assert "bad.jsonl" in r2.stderr and "line 2" in r2.stderr and "'outcome'" in r2.stderr
    assert counts(eng) == (1, len(ids), 1)
    rep = cli(["report", "--json", "--n-boot", "20"], db=db_url)
    assert rep.returncode == 0, rep.stderr
    assert [x["run_id"] for x in json.loads(rep.stdout)["runs"]] == [doc["run_id"]]
    eng.dispose()


def test_a_missing_outcome_is_called_missing(sqlite_engine, tmp_path):
    ids = seed_samples(sqlite_engine)
    path = write_jsonl(tmp_path / "no_outcome.jsonl", [{"sample_id": ids[0]}])
    with pytest.raises(InputError) as exc:
        import_predictions(sqlite_engine, path, "Vendor")
    assert exc.value.field == "outcome" and "missing outcome" in str(exc.value) and "None" not in str(exc.value)


def test_imported_text_has_the_cap_of_a_judges_answer(sqlite_engine, tmp_path):
    from automonitor.data.row_models import PREDICTION_TEXT_CAP
    from automonitor.runs.parsing import ANSWER_CHAR_CAP

    assert PREDICTION_TEXT_CAP == ANSWER_CHAR_CAP
    ids = seed_samples(sqlite_engine)
    path = tmp_path / "at_cap.jsonl"
    write_jsonl(path, [{"sample_id": ids[0], "outcome": M, "reason": "r" * PREDICTION_TEXT_CAP}])
    assert import_predictions(sqlite_engine, path, "Vendor")["n"] == 1  # the cap itself is allowed


def _add_samples(engine, rows: list[tuple[str, str, str | None, str]]) -> None:
    """Samples (id, status, split, label) of one made-up cell, each its own pair."""
    from store import session_scope
    from store.queries.samples import insert_samples

    from helpers import candidate_row

    with session_scope(engine) as s:
        insert_samples(
            s,
            [
                candidate_row(
                    id=sid,
                    pair_id=("controls:" if split == "controls" else "") + f"pp-{sid}",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request=f"req {sid}",
                    response=f"resp {sid}",
                    status=status,
                    split=split,
                )
                for sid, status, split, lab in rows
            ],
        )


def test_rows_for_train_or_candidate_samples_are_refused_by_line_and_nothing_is_written(engine, tmp_path):
    """Issue (fresh-user trial): 150 train-split ids imported without a word and were reported as an edition
    ``paper`` run on the Pareto front. Only gold samples of the test set and the controls (what a run
    judges) take a verdict: a train-split, candidate or rejected sample is a problem naming file, line and
    field and saying what the sample is; every such row is listed; nothing is written (SQLite and PostgreSQL)."""
    ids = seed_samples(engine)
    _add_samples(
        engine,
        [
            ("tr1", "gold", "train", M),
            ("tr2", "gold", "train", B),
            ("cand1", "candidate", None, M),
            ("rej1", "rejected", None, B),
            ("ctl1", "gold", "controls", B),
        ],
    )
    before = counts(engine)
    rows = [{"sample_id": ids[0], "outcome": M}, {"sample_id": "tr1", "outcome": M}]
    rows += [
        {"sample_id": "cand1", "outcome": B},
        {"sample_id": "rej1", "outcome": B},
        {"sample_id": "tr2", "outcome": B},
    ]
    for path in (write_jsonl(tmp_path / "mixed.jsonl", rows), write_csv(tmp_path / "mixed.csv", rows)):
        with pytest.raises(InputError) as exc:
            import_predictions(engine, path, "VendorGuard")
        err = exc.value
        first = 2 if path.suffix == ".jsonl" else 3  # CSV: the header is line 1
        assert (err.file, err.line, err.field) == (str(path), first, "sample_id")
        assert [(p.line, p.field) for p in err.problems] == [(first + i, "sample_id") for i in range(4)]  # type: ignore[attr-defined]
        text = str(err)
        assert "'tr1' is a train-split sample" in text and "'tr2' is a train-split sample" in text
        assert "'cand1' is a candidate sample (not gold" in text and "'rej1' is a rejected sample (not gold)" in text
        assert counts(engine) == before
    # a file of train ids only (the trial's case) is refused too; test and control ids are taken
    with pytest.raises(InputError, match="train-split"):
        import_predictions(engine, write_jsonl(tmp_path / "train.jsonl", [{"sample_id": "tr1", "outcome": B}]), "T")
    ok = [{"sample_id": sid, "outcome": B} for sid in [*ids, "ctl1"]]
    res = import_predictions(engine, write_jsonl(tmp_path / "ok.jsonl", ok), "VendorGuard")
    assert res["created"] and res["n"] == len(ids) + 1
    assert counts(engine) == (before[0] + 1, before[1] + len(ids) + 1, before[2] + 1)


def test_cli_refuses_train_ids_with_exit_2_naming_file_line_and_field(sqlite_url, sqlite_engine, tmp_path):
    from helpers import run_cli_in_process

    ids = seed_samples(sqlite_engine)
    _add_samples(sqlite_engine, [(f"tr{i}", "gold", "train", (M, B)[i % 2]) for i in range(6)])
    path = write_jsonl(tmp_path / "train.jsonl", [{"sample_id": f"tr{i}", "outcome": B} for i in range(6)])
    r = run_cli_in_process(["predictions", "import", str(path), "--monitor", "Guard", "--json"], db=sqlite_url)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert "train.jsonl" in r.stderr and "line 1" in r.stderr and "'sample_id'" in r.stderr
    assert "train-split sample" in r.stderr
    assert counts(sqlite_engine) == (0, 0, 0)
    ok = write_jsonl(tmp_path / "ok.jsonl", [{"sample_id": ids[0], "outcome": B}])
    r = run_cli_in_process(["predictions", "import", str(ok), "--monitor", "rules:rules-v1"], db=sqlite_url)
    assert r.returncode == 2 and "built-in judge backend (rules)" in r.stderr and "monitor" in r.stderr, r.stderr
    assert counts(sqlite_engine) == (0, 0, 0)


def test_simultaneous_imports_of_one_file_make_one_monitor_and_one_run(engine, db_url, tmp_path):
    """Issue (fresh-user trial): three `predictions import pred.jsonl --monitor race` started together made two
    runs and two `monitor` rows named `race`. Three importers on their own connections, released together:
    one monitor row, one run, and every importer returns that run (SQLite and PostgreSQL)."""
    import threading

    from store import get_engine

    ids = seed_samples(engine, pairs=40)
    path = write_jsonl(
        tmp_path / "pred.jsonl", [{"sample_id": sid, "outcome": (M, B)[i % 2]} for i, sid in enumerate(ids)]
    )
    start = threading.Barrier(3)
    results: list[object] = []

    def importer() -> None:
        eng = get_engine(db_url, fresh=True)
        try:
            start.wait(10)
            results.append(import_predictions(eng, path, "race"))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(exc)
        finally:
            eng.dispose()

    threads = [threading.Thread(target=importer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(isinstance(r, dict) for r in results) and len(results) == 3, results
    assert len({r["run_id"] for r in results}) == 1  # type: ignore[index]
    assert sorted(r["created"] for r in results) == [False, False, True]  # type: ignore[index]
    assert counts(engine) == (1, len(ids), 1)


def test_a_built_in_backend_spec_or_another_backends_monitor_is_no_outside_system_name(engine, tmp_path):
    """`--monitor rules:rules-v1` made a second monitor named like the built-in rules baseline: a name that is a
    built-in backend spec is refused (exit 2, field ``monitor``), and so is the name of a monitor of another
    backend already in the store."""
    from store import session_scope
    from store.models import Monitor

    ids = seed_samples(engine)
    path = write_jsonl(tmp_path / "ok.jsonl", good_rows(ids))
    for name in ("rules", "rules:rules-v1", "RULES", "openai:gpt-4o-mini", "anthropic:claude", "llamacpp", "probe:x"):
        with pytest.raises(InputError, match="built-in judge backend") as exc:
            import_predictions(engine, path, name)
        assert exc.value.field == "monitor"
    with session_scope(engine) as s:
        s.add(Monitor(name="ensemble-x", backend="derived"))
    with pytest.raises(InputError, match="name of a derived monitor") as exc:
        import_predictions(engine, path, "ensemble-x")
    assert exc.value.field == "monitor"
    assert counts(engine) == (0, 0, 1)
    assert import_predictions(engine, path, "rulesy-guard")["created"]  # a name that merely starts alike is fine


def test_an_imported_run_is_scored_on_its_editions_samples_only(small_built_url, tmp_path):
    """A file that covers every gold test sample (``export --blind`` writes the union of the editions) gives
    MR/FAR on the samples of the run's edition (``paper``), as a run made by ``automonitor run --edition paper``
    does: its verdicts on samples outside ``paper`` do not count there (fresh-user trial). Controls stay."""
    from automonitor.analysis import report as make_report
    from store import get_engine
    from store.queries.audit import edition_member_ids

    eng = get_engine(small_built_url)
    with eng.connect() as c:
        paper = edition_member_ids(c, "paper")
        gold_test = set(
            c.execute(
                sa.text("select id from sample where status = 'gold' and split in ('test', 'controls')")
            ).scalars()
        )
    outside = gold_test - paper
    assert paper and outside, "the small build has test samples outside paper"
    f = tmp_path / "all.jsonl"
    f.write_text("".join(json.dumps({"sample_id": sid, "outcome": "misbehavior"}) + "\n" for sid in sorted(gold_test)))
    run_id = import_predictions(eng, f, "whole-test-set")["run_id"]
    entry = next(r for r in make_report(eng, edition="paper").runs if r.run_id == run_id)
    assert entry.overall.n == len(paper)  # before: len(gold_test), the verified-only verdicts counted in paper
