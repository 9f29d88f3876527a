"""The annotation commands of the contract, through the installed ``automonitor`` script:
``users add``, ``assign``, ``annotations import|export``, ``agreement``, ``adjudications export``."""

from __future__ import annotations

import csv
import json

import pytest

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM, authenticate, create_user
from automonitor.errors import InputError
from store import get_engine, session_scope
from store.queries.samples import insert_samples

from helpers import account_named, candidate_row, run_cli_in_process


def _candidates(engine, n_pairs=6):
    rows = []
    for p in range(n_pairs):
        req = f"Please grade my proof {p}."
        for lab in ("misbehavior", "benign"):
            resp = f"{'Flawless!' if lab == 'misbehavior' else 'Step 2 is wrong.'} ({p})"
            rows.append(
                candidate_row(
                    id=f"cli{p}{lab[0]}",
                    pair_id=f"clipair{p}",
                    category=("sycophancy_bias", "specification_gaming")[p % 2],
                    task=("qa", "reasoning")[p % 2],
                    label=lab,
                    request=req,
                    response=resp,
                    source="s",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    return rows


@pytest.fixture
def store(sqlite_url, sqlite_engine):
    """A SQLite store with three annotators and an admin and 6 candidate pairs (the core these
    commands call is tested on PostgreSQL too; a CLI start costs a couple of seconds, so the CLI
    round trip runs on one backend)."""
    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("ann3", "annotator"), ("chief", "admin")):
        create_user(eng, name, role, f"password of {name}")
    _candidates(eng)
    yield eng, sqlite_url
    eng.dispose()


def test_users_add_hashes_the_stdin_password_and_refuses_bad_input(cli, db_url):
    r = cli(
        ["users", "add", "ann1", "--role", "annotator", "--password-stdin", "--json"],
        db=db_url,
        input="x y z and more\n",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["role"] == "annotator" and "x y z" not in r.stdout + r.stderr
    eng = get_engine(db_url, fresh=True)
    try:
        acc = authenticate(eng, "ann1", "x y z and more")  # the newline is not part of the password
        assert acc is not None and acc.role == "annotator"
    finally:
        eng.dispose()
    for args, stdin, word in (
        (["ann1", "--role", "admin"], "a long enough password\n", "already exists"),
        (["ann5", "--role", "owner"], "a long enough password\n", "role"),
        (["ann6", "--role", "admin"], "\n", "password"),
    ):  # the refusals in this process (the first add above went through a real pipe into the console script)
        r = run_cli_in_process(["users", "add", *args, "--password-stdin"], db=db_url, input=stdin)
        assert r.returncode == 2 and word in r.stderr and r.stdout == ""


@pytest.mark.slow
def test_assign_import_agreement_export_round_trip(store, cli, tmp_path):
    eng, url = store
    r = cli(["assign", "--k", "2", "--seed", "42", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["items"], doc["assignments"]) == (12, 24)
    assert set(doc["by_annotator"]) == {"ann1", "ann2", "ann3"} and sum(doc["by_annotator"].values()) == 24

    assigned = {}
    for name in ("ann1", "ann2", "ann3"):
        acc = account_named(eng, name)
        assigned[name] = [q.sample_id for q in ann.my_queue(eng, acc)]
    lines = []
    for name, items in assigned.items():
        for i, sid in enumerate(items):
            label = ("misbehavior" if sid.endswith("m") else "benign") if (i % 5) else "unsure"
            lines.append({"annotator": name, "sample_id": sid, "label": label, "note": f"n{i}"})
    good = tmp_path / "labels.jsonl"
    good.write_text("\n".join(json.dumps(x) for x in lines) + "\n")

    # all or nothing: a bad label on line 3 -> exit 2 naming file, line and field; nothing written
    bad = tmp_path / "bad.jsonl"
    bad_lines = [dict(x) for x in lines]
    bad_lines[2]["label"] = "spam"
    bad.write_text("\n".join(json.dumps(x) for x in bad_lines) + "\n")
    r = cli(["annotations", "import", str(bad)], db=url)
    assert r.returncode == 2 and str(bad) in r.stderr and "line 3" in r.stderr and "'label'" in r.stderr
    # a label for an item not assigned to that annotator is refused
    not_mine = next(s for s in assigned["ann2"] if s not in assigned["ann1"])
    other = tmp_path / "other.csv"
    other.write_text(
        f"annotator,sample_id,label,note\nann1,{assigned['ann1'][0]},benign,\nann1,{not_mine},benign,sneaky\n"
    )
    r = cli(["annotations", "import", str(other)], db=url)
    assert r.returncode == 2 and "line 3" in r.stderr and "'sample_id'" in r.stderr
    assert "not assigned" in r.stderr
    # an unsure label needs a note, as in the app
    no_note = tmp_path / "no_note.csv"
    no_note.write_text(f"annotator,sample_id,label,note\nann1,{assigned['ann1'][0]},unsure,\n")
    r = cli(["annotations", "import", str(no_note)], db=url)
    assert r.returncode == 2 and "line 2" in r.stderr and "'note'" in r.stderr and "needs a note" in r.stderr
    assert ann.annotation_records(eng, SYSTEM) == []

    r = cli(["annotations", "import", str(good), "--json"], db=url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"written": 24, "unchanged": 0, "submitted": True}

    r = cli(["agreement", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"items", "annotators", "percent_agreement", "cohen_kappa", "krippendorff_alpha", "by_category"} <= set(doc)
    assert doc["items"] == 12 and doc["annotators"] == ["ann1", "ann2", "ann3"]
    assert set(doc["by_category"]) == {"sycophancy_bias", "specification_gaming"}
    # the same function the app calls gives the same figures
    assert doc == json.loads(json.dumps(ag.agreement(eng, SYSTEM), default=str))
    assert 0 <= doc["percent_agreement"] <= 1 and doc["ci"]["percent_agreement"]
    human = cli(["agreement"], db=url)
    assert human.returncode == 0 and "krippendorff" in human.stdout

    out = tmp_path / "export.csv"
    r = cli(["annotations", "export", str(out)], db=url)
    assert r.returncode == 0, r.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 24 and {
        "annotator",
        "sample_id",
        "label",
        "note",
        "guideline_version",
        "submitted_at",
        "created_at",
    } <= set(rows[0])
    # exported labels import again unchanged (a round trip)
    r = cli(["annotations", "import", str(out), "--json"], db=url)
    assert r.returncode == 0 and json.loads(r.stdout)["unchanged"] == 24

    r = cli(["adjudications", "finalize", "--split", "test", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    fin = json.loads(r.stdout)
    assert fin["accepted"] + fin["rejected"] + fin["pending"] == 6
    r = cli(["adjudications", "export", str(tmp_path / "adj.jsonl"), "--json"], db=url)
    assert r.returncode == 0 and json.loads(r.stdout)["adjudications"] == 0


def test_assign_needs_enough_annotators(cli, sqlite_url, sqlite_engine):

    # sqlite_engine: an existing, empty store migrated to head (a missing one is refused)
    r = cli(["assign", "--k", "2", "--json"], db=sqlite_url)
    assert r.returncode == 2 and "k=2" in r.stderr and r.stdout == ""


@pytest.mark.parametrize(
    "name,content,line,field,fragment",
    [
        (
            "nan.jsonl",
            b'{"annotator": "ann1", "sample_id": "cli0m", "label": "benign"}\n'
            b'{"annotator": "ann1", "sample_id": "cli0b", "label": "benign", "seconds_spent": NaN}\n',
            2,
            "seconds_spent",
            "not a finite number",
        ),
        (
            "dup.jsonl",
            b'{"annotator": "ann1", "sample_id": "cli0m", "label": "benign", "label": "misbehavior"}\n',
            1,
            None,
            "duplicate key 'label'",
        ),
        (
            "bytes.jsonl",
            b'{"annotator": "ann1", "sample_id": "cli0m", "label": "benign"}\n'
            b'{"annotator": "ann1", "sample_id": "cli0b", "label": "benign", "note": "caf\xe9"}\n',
            2,
            None,
            "byte 0xe9",
        ),
        (
            "bytes.csv",
            b"annotator,sample_id,label,note\nann1,cli0m,benign,\nann1,cli0b,benign,caf\xe9\n",
            3,
            "note",
            "byte 0xe9",
        ),
        ("short.csv", b"annotator,sample_id,label,note\nann1,cli0m,benign\n", 2, None, "has 3 fields"),
    ],
)
def test_import_reader_is_strict_and_names_the_line(store, tmp_path, name, content, line, field, fragment):
    """The annotations import uses the shared strict reader: NaN, duplicate keys, bytes that are not UTF-8
    and short CSV rows are refused at their line (CSV: and column), before anything is written."""
    eng, _ = store
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as exc:
        ann.import_annotations(eng, SYSTEM, path)
    err = exc.value
    assert (err.file, err.line, err.field) == (str(path), line, field) and fragment in str(err), str(err)
    assert ann.annotation_records(eng, SYSTEM) == []


def test_reimporting_a_locked_label_names_the_fields_that_differ(store, cli, tmp_path):
    """A re-import of a submitted (locked) label that differs was refused as "already submitted and
    locked" at field 'sample_id', without saying what differs (fresh-user trial: a changed note): the
    error names the file, the line and each differing field with the stored and the file's value."""
    eng, url = store
    ann.assign(eng, SYSTEM, k=1, seed=1)
    items = [q.sample_id for q in ann.my_queue(eng, account_named(eng, "ann1"))][:2]
    rows = [{"annotator": "ann1", "sample_id": sid, "label": "benign", "note": f"first {sid}"} for sid in items]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ann.import_annotations(eng, SYSTEM, path).written == 2
    assert ann.import_annotations(eng, SYSTEM, path).unchanged == 2  # identical: a no-op
    rows[1]["note"] = "second thoughts"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = cli(["annotations", "import", str(path)], db=url)
    assert r.returncode == 2
    assert (
        f"{path}, line 2, field 'note': the label of 'ann1' on '{items[1]}' is already submitted and locked; "
        f"this row differs in note (stored 'first {items[1]}', file 'second thoughts')"
    ) in r.stderr, r.stderr
    rows[0].update(label="misbehavior", note="x" * 100)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as err:
        ann.import_annotations(eng, SYSTEM, path)
    assert (err.value.line, err.value.field) == (1, "label, note")
    assert "label (stored 'benign', file 'misbehavior'); note (stored " in err.value.message
    assert "file '" + "x" * 36 + "...)" in err.value.message  # a long value is cut
    assert {(r["sample_id"], r["note"]) for r in ann.annotation_records(eng, SYSTEM)} == {
        (sid, f"first {sid}") for sid in items
    }  # nothing written
