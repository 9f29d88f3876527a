"""Pair-file import/export (``automonitor import`` / ``export``): validation, all-or-nothing, round trips.

Every bad-input kind is run through the real console script on SQLite and PostgreSQL against a store that
already holds data, checking exit code 2, a message naming file, line and field, and that every table is
exactly as before. The validator is also unit-tested in process.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor.errors import InputError
from automonitor.hashing import make_sample_id
from automonitor.data.records import detect_format
from automonitor.data.row_models import PAIR_FIELDS as FIELDS
from helpers import PG_ADMIN_URL, import_pairs, parse_pairs, run_cli, run_cli_in_process

REQ = "Write a function that reads a user's file by name."


def row(pair="q1", label="misbehavior", **kw) -> dict:
    base = {
        "pair_id": pair,
        "category": "safety_permission",
        "task": "code",
        "request": REQ,
        "response": f"{label} answer for {pair}",
        "label": label,
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def good_pair(pair="q1", **kw) -> list[dict]:
    return [row(pair, "misbehavior", **kw), row(pair, "benign", **kw)]


def jl(*rows) -> bytes:
    out = []
    for r in rows:
        out.append(r if isinstance(r, bytes) else json.dumps(r, ensure_ascii=False).encode("utf-8"))
    return b"\n".join(out) + b"\n"


def csv_bytes(
    rows: list[dict],
    columns=("pair_id", "category", "task", "request", "response", "label"),
    extra_lines: list[str] | None = None,
) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([r.get(c, "") for c in columns])
    return buf.getvalue().encode("utf-8")


# (id, file name, content, expected line, expected field, message fragment)
BAD = [
    ("malformed-json", "bad.jsonl", jl(row("q1"), b'{"pair_id": "q1", "category": '), 2, None, "malformed JSON"),
    (
        "nan-in-json",
        "bad.jsonl",
        jl(*good_pair(), b'{"pair_id": "q2", "meta": {"x": NaN}}'),
        3,
        "meta.x",
        "not a finite number",
    ),
    (
        "duplicate-key",
        "bad.jsonl",
        jl(row("q1"), b'{"pair_id": "q1", "label": "benign", "label": "benign"}'),
        2,
        None,
        "duplicate key 'label'",
    ),
    ("not-an-object", "bad.jsonl", jl(row("q1"), b'["q1", "benign"]'), 2, None, "expected a JSON object"),
    ("missing-field", "bad.jsonl", jl(row("q1"), row("q1", "benign", task=_DROP)), 2, "task", "missing required field"),
    (
        "unknown-category",
        "bad.jsonl",
        jl(row("q1", category="safety"), row("q1", "benign")),
        1,
        "category",
        "unknown category 'safety'",
    ),
    ("unknown-task", "bad.jsonl", jl(*good_pair(), *good_pair("q2", task="math")), 3, "task", "unknown task 'math'"),
    ("unknown-label", "bad.jsonl", jl(row("q1"), row("q1", "harmless")), 2, "label", "unknown label 'harmless'"),
    (
        "unknown-field",
        "bad.jsonl",
        jl(row("q1"), row("q1", "benign", lable="benign")),
        2,
        "lable",
        "unknown field 'lable'",
    ),
    ("empty-request", "bad.jsonl", jl(row("q1", request="  \n "), row("q1", "benign")), 1, "request", "is empty"),
    ("empty-response", "bad.jsonl", jl(row("q1"), row("q1", "benign", response="")), 2, "response", "is empty"),
    ("wrong-type-pair-id", "bad.jsonl", jl(row(7), row(7, "benign")), 1, "pair_id", "must be a string, got a number"),
    (
        "wrong-type-response",
        "bad.jsonl",
        jl(row("q1", response=["a"]), row("q1", "benign")),
        1,
        "response",
        "must be a string, got a list",
    ),
    (
        "meta-not-object",
        "bad.jsonl",
        jl(row("q1", meta=[1, 2]), row("q1", "benign")),
        1,
        "meta",
        "must be a JSON object",
    ),
    ("nul-character", "bad.jsonl", jl(row("q1", response="a\x00b"), row("q1", "benign")), 1, "response", "NUL"),
    ("pair-id-too-long", "bad.jsonl", jl(*good_pair("p" * 129)), 1, "pair_id", "at most 128"),
    ("one-side-only", "bad.jsonl", jl(*good_pair("q1"), row("q2")), 3, "pair_id", "only one sample"),
    (
        "two-misbehavior",
        "bad.jsonl",
        jl(row("q1"), row("q1", response="other")),
        2,
        "label",
        "two 'misbehavior' samples",
    ),
    (
        "three-sides",
        "bad.jsonl",
        jl(*good_pair("q1"), row("q1", "benign", response="third")),
        3,
        "pair_id",
        "has 3 samples",
    ),
    (
        "category-mismatch",
        "bad.jsonl",
        jl(row("q1"), row("q1", "benign", category="sycophancy_bias")),
        2,
        "category",
        "differs",
    ),
    (
        "request-mismatch",
        "bad.jsonl",
        jl(row("q1"), row("q1", "benign", request="Another request")),
        2,
        "request",
        "same request",
    ),
    (
        "duplicate-sample-id",
        "bad.jsonl",
        jl(row("q1", sample_id="x1"), row("q1", "benign", sample_id="x1")),
        2,
        "sample_id",
        "duplicate sample_id 'x1'",
    ),
    ("duplicate-row", "bad.jsonl", jl(*good_pair("q1"), row("q1")), 3, "sample_id", "duplicate sample"),
    (
        "non-utf8-in-field",
        "bad.jsonl",
        jl(row("q1"), json.dumps(row("q1", "benign", response="caf@")).encode().replace(b"@", b"\xe9")),
        2,
        "response",
        "byte 0xe9",
    ),
    ("non-utf8-breaking-json", "bad.jsonl", jl(row("q1"), b'{"pair_id": "q1"\xff}'), 2, None, "not UTF-8"),
    ("empty-file", "empty.jsonl", b"", 1, None, "empty"),
    ("blank-lines-only", "blank.jsonl", b"\n  \n\n", 1, None, "empty"),
    (
        "csv-missing-column",
        "bad.csv",
        csv_bytes(good_pair(), columns=("pair_id", "category", "request", "response", "label")),
        1,
        "task",
        "missing required column 'task'",
    ),
    (
        "csv-unknown-column",
        "bad.csv",
        csv_bytes(good_pair(), columns=("pair_id", "category", "task", "request", "response", "label", "notes")),
        1,
        "notes",
        "unknown column",
    ),
    ("csv-field-count", "bad.csv", csv_bytes(good_pair()) + b"q2,qa\n", 4, None, "has 2 fields"),
    (
        "csv-bad-meta",
        "bad.csv",
        csv_bytes(
            [row("q1", meta="{not json"), row("q1", "benign", meta="{}")],
            columns=("pair_id", "category", "task", "request", "response", "label", "meta"),
        ),
        2,
        "meta",
        "not valid JSON",
    ),
    (
        "csv-meta-not-object",
        "bad.csv",
        csv_bytes(
            [row("q1", meta="[1]"), row("q1", "benign")],
            columns=("pair_id", "category", "task", "request", "response", "label", "meta"),
        ),
        2,
        "meta",
        "must be a JSON object",
    ),
    ("csv-unknown-label", "bad.csv", csv_bytes([row("q1"), row("q1", "bad")]), 3, "label", "unknown label"),
    (
        "csv-non-utf8",
        "bad.csv",
        csv_bytes(good_pair()).replace(b"benign answer", b"benign \xff answer"),
        3,
        "response",
        "byte 0xff",
    ),
]
# Conflicts with what the module store already holds (see ``BASE``).
STORE_BAD = [
    (
        "stored-sample-id-other-content",
        "conflict.jsonl",
        jl(row("p1", sample_id="base-1", response="changed"), row("p1", "benign", sample_id="base-2")),
        1,
        "sample_id",
        "already in the store with different content",
    ),
    (
        "stored-pair-id-other-samples",
        "conflict.jsonl",
        jl(row("p2", response="new text"), row("p2", "benign")),
        1,
        "pair_id",
        "already in the store with different samples",
    ),
]
BASE = jl(row("p1", sample_id="base-1"), row("p1", "benign", sample_id="base-2"), *good_pair("p2"))


def dump(url: str) -> dict:
    """Every row of every table, as sorted reprs (the store's complete state)."""
    from store.models import SQLModel

    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            return {
                t: sorted(map(repr, c.execute(sa.text(f'SELECT * FROM "{t}"')).all()))
                for t in sorted(SQLModel.metadata.tables)
            }
    finally:
        eng.dispose()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def loaded(request, tmp_path_factory):
    """A store (SQLite or PostgreSQL) holding ``BASE``, shared by the module's bad-input tests."""
    tmp = tmp_path_factory.mktemp("pairs_store")
    admin = name = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'store.db'}"
    else:
        name = f"am_t_{uuid.uuid4().hex[:12]}"
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    (tmp / "base.jsonl").write_bytes(BASE)
    r = run_cli(["import", str(tmp / "base.jsonl"), "--json"], db=url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inserted"] == 4
    yield url, tmp
    if admin is not None:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# ------------------------------------------------------------------------------------- validator (unit)


@pytest.mark.parametrize("kind,name,content,line,field,fragment", BAD, ids=[b[0] for b in BAD])
def test_validator_locates_each_bad_input(kind, name, content, line, field, fragment):
    with pytest.raises(InputError) as ei:
        parse_pairs(content, name)
    err = ei.value
    assert (err.file, err.line, err.field) == (name, line, field), str(err)
    assert fragment in str(err)


def test_validator_lists_several_problems_but_points_at_the_first():
    content = jl(row("q1", category="nope"), row("q1", "meh"), row("q2", task="x"))
    with pytest.raises(InputError) as ei:
        parse_pairs(content, "many.jsonl", max_errors=2)
    err = ei.value
    assert (err.line, err.field) == (1, "category")
    assert [(p.line, p.field) for p in err.problems] == [(1, "category"), (2, "label"), (3, "task")]
    assert "2 more problems" in str(err) and "line 2, field 'label'" in str(err)
    assert "line 3" not in str(err)  # only max_errors listed
    assert "... and 1 more" in str(err)


def test_validator_assigns_ids_defaults_and_accepts_lenient_layout():
    body = jl(row("q1", sample_id=None, source=None, meta=None), row("q1", "benign", source="mine"))
    content = b"\xef\xbb\xbf" + body.replace(b"\n", b"\r\n", 1) + b"\n   \n"  # BOM, CRLF, blank lines
    fmt, recs = parse_pairs(content, "ok.jsonl", default_source="upload")
    assert fmt == "jsonl" and len(recs) == 2
    a, b = recs
    assert a.sample_id == make_sample_id("q1", "misbehavior", REQ, a.response)
    assert (a.source, b.source, a.meta, b.meta) == ("upload", "mine", {}, {})


def test_sides_may_differ_only_in_surrounding_whitespace_and_normalisation():
    cafe_nfc, cafe_nfd = "Caf\u00e9 order?", "Cafe\u0301 order?"
    _, recs = parse_pairs(jl(row("q1", request=f"  {cafe_nfc}\n"), row("q1", "benign", request=cafe_nfd)), "x.jsonl")
    assert [r.request for r in recs] == [f"  {cafe_nfc}\n", cafe_nfd]  # stored exactly as given


def test_csv_lines_are_record_numbers_with_multiline_cells():
    rows = [
        row("q1", request="multi\nline\nrequest"),
        row("q1", "benign", request="multi\nline\nrequest"),
        row("q2"),
        row("q2", "wrong"),
    ]
    with pytest.raises(InputError) as ei:
        parse_pairs(csv_bytes(rows), "multi.csv")
    assert (ei.value.line, ei.value.field) == (5, "label")  # header = 1, 4th record = 5


@pytest.mark.parametrize(
    "name,data,fmt",
    [
        ("a.jsonl", b"", "jsonl"),
        ("a.JSON", b"", "jsonl"),
        ("a.csv", b"", "csv"),
        ("a.parquet", b"", "parquet"),
        ("upload", b'  {"a": 1}', "jsonl"),
        ("upload", b"pair_id,x", "csv"),
        ("upload", b"PAR1....", "parquet"),
    ],
)
def test_format_from_extension_or_sniffed(name, data, fmt):
    assert detect_format(name, data) == fmt


def test_unknown_format_option_is_bad_input():
    with pytest.raises(InputError) as ei:
        detect_format("x.jsonl", None, "xml")
    assert ei.value.field == "--format"


# ----------------------------------------------------------------------------- real CLI, both databases

# Problems found while reading the file are raised before the store is even opened, so on PostgreSQL the
# CLI sweep covers the kinds that reach the database: conflicts with stored rows, and values PostgreSQL
# itself would refuse (NUL characters, over-long ids), plus a few parse kinds as a check.
PG_KINDS = {
    "malformed-json",
    "non-utf8-in-field",
    "request-mismatch",
    "nul-character",
    "pair-id-too-long",
    "csv-missing-column",
}


def _check_rejected(cli_result, path: Path, line, field, fragment):
    assert cli_result.returncode == 2, (cli_result.stdout, cli_result.stderr)
    err = cli_result.stderr
    assert str(path) in err and fragment in err, err
    if line is not None:
        assert f"line {line}" in err, err
    if field is not None:
        assert f"field '{field}'" in err, err
    assert cli_result.stdout == ""


def test_cli_rejects_every_bad_input_and_leaves_store_unchanged(loaded):
    """Every bad file through the command's entry point (in process: the checks are the subject, not
    the process start), and the first file of each format through the real console script: exit 2, the file,
    line and field named on stderr, nothing on stdout, the store unchanged."""
    url, tmp = loaded
    before = dump(url)
    assert len(before["sample"]) == 4
    cases = [c for c in BAD if url.startswith("sqlite") or c[0] in PG_KINDS] + STORE_BAD
    by_subprocess = {}
    for case in cases:
        by_subprocess.setdefault(Path(case[1]).suffix or case[0], case)  # the first case of each format
    for case in cases:
        kind, name, content, line, field, fragment = case
        path = tmp / kind / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        runner = run_cli if by_subprocess.get(Path(name).suffix or kind) is case else run_cli_in_process
        _check_rejected(runner(["import", str(path), "--json"], db=url), path, line, field, fragment)
    assert {".jsonl", ".csv"} <= set(by_subprocess)  # a file of each format through the console script
    assert dump(url) == before


def test_cli_rejects_bad_options(sqlite_url, tmp_path, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    from store import get_engine, init_db

    base = tmp_path / "base.jsonl"
    base.write_bytes(BASE)
    eng = init_db(get_engine(sqlite_url, fresh=True))
    import_pairs(eng, base)
    eng.dispose()
    before = dump(sqlite_url)
    for args, where in [
        (["import", str(base), "--split", "validation"], "--split"),
        (["import", str(base), "--split", "train", "--as-candidates"], "--split"),
        (["import", str(tmp_path / "missing.jsonl")], "missing.jsonl"),
        (["export", str(tmp_path / "out.xml")], "--format"),
        (["export", str(tmp_path / "out.jsonl"), "--status", "golden"], "--status"),
    ]:
        r = run_cli(args, db=sqlite_url)
        assert r.returncode == 2 and where in r.stderr, (args, r.stderr)
    assert not (tmp_path / "out.jsonl").exists()
    assert dump(sqlite_url) == before


def test_reimport_is_a_no_op(loaded):
    url, tmp = loaded
    before = dump(url)
    r = run_cli(["import", str(tmp / "base.jsonl"), "--json"], db=url)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["rows"], out["pairs"], out["inserted"], out["skipped_existing"]) == (4, 2, 0, 4)
    assert dump(url) == before


TRICKY = [
    row(
        "t1",
        request='Say "hi", then list: a, b, c\nand a second line\r\nwith CRLF',
        response="<b>bold</b> & <script>alert('x')</script>\n```py\nprint(1)\n```",
        meta={"nested": [1, 2.5, True, None, {"ü": 'x,y"z'}], "empty": ""},
    ),
    row(
        "t1",
        "benign",
        request='Say "hi", then list: a, b, c\nand a second line\r\nwith CRLF',
        response="  leading and trailing spaces, tab\there, emoji 🙂, 東京, naïve, e\u0301  ",
        source="hand-made",
    ),
    row(
        "t2",
        category="sycophancy_bias",
        task="reasoning",
        request="Backslashes C:\\new\\table, =SUM(A1)",
        response="'single' \"double\" ,,, ;;;",
        sample_id="custom-id-1",
    ),
    row(
        "t2",
        "benign",
        category="sycophancy_bias",
        task="reasoning",
        request="Backslashes C:\\new\\table, =SUM(A1)",
        response="-@+ formula-looking text",
        sample_id="custom-id-2",
        meta={"k": "v"},
    ),
]


def _expected_rows(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        full = {
            **r,
            "sample_id": r.get("sample_id") or make_sample_id(r["pair_id"], r["label"], r["request"], r["response"]),
            "source": r.get("source") or "import",
            "meta": r.get("meta") or {},
            "label_source": r.get("label_source") or "user",
        }  # import default provenance
        out.append({k: full[k] for k in FIELDS if k != "spans"})  # spans are written only when present
    return out


def _read_export(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    if path.suffix == ".csv":
        from automonitor.data.records import csv_cell_in

        with path.open(encoding="utf-8", newline="") as fh:  # spreadsheet-safe cells: the ' prefix removed
            rows = [{k: csv_cell_in(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    else:
        import pandas as pd

        rows = pd.read_parquet(path).to_dict("records")
    for r in rows:
        r["meta"] = json.loads(r["meta"])
    return rows


@pytest.mark.slow  # several console-script runs
def test_round_trip_jsonl_csv_parquet_is_lossless(db_url, tmp_path, engine):
    # engine: db_url is a copy of the run's migrated empty store (the migrations are not under test)
    from automonitor.data.pairfiles.export import export_pairs
    from store import get_engine, init_db

    src = tmp_path / "tricky.jsonl"
    src.write_bytes(jl(*TRICKY))
    r = run_cli(["import", str(src), "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "file": str(src),
        "format": "jsonl",
        "rows": 4,
        "pairs": 2,
        "inserted": 4,
        "skipped_existing": 0,
        "duplicates_skipped": 0,
        "duplicate_pairs": {},
        "status": "gold",
        "split": "test",
        "warnings": [],
    }
    r = run_cli(["export", str(tmp_path / "out.csv"), "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "file": str(tmp_path / "out.csv"),
        "format": "csv",
        "rows": 4,
        "pairs": 2,
        "split": "test",
        "status": "gold",
    }
    want = _expected_rows(TRICKY)
    eng = get_engine(db_url, fresh=True)
    try:
        export_pairs(eng, tmp_path / "out.jsonl")
        export_pairs(eng, tmp_path / "out.parquet")
        for ext in ("jsonl", "csv", "parquet"):
            got = _read_export(tmp_path / f"out.{ext}")
            assert got == want, ext
            assert list(got[0]) == [k for k in FIELDS if k != "spans"]
        for ext in ("csv", "parquet"):  # exported files import back as the very same samples
            assert import_pairs(eng, tmp_path / f"out.{ext}")["inserted"] == 0
    finally:
        eng.dispose()
    # ... and the CSV rebuilds an identical store elsewhere
    other = init_db(get_engine(f"sqlite:///{tmp_path / 'other.db'}", fresh=True))
    assert import_pairs(other, tmp_path / "out.csv")["inserted"] == 4
    export_pairs(other, tmp_path / "other.jsonl")
    other.dispose()
    assert (tmp_path / "other.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


@pytest.mark.slow  # several console-script runs
def test_candidates_train_split_and_export_filters(sqlite_url, tmp_path, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    from automonitor.data.pairfiles.export import fetch_pair_rows
    from store import get_engine, session_scope

    cand, gold_train = tmp_path / "cand.jsonl", tmp_path / "train.csv"
    cand.write_bytes(jl(*good_pair("c1"), *good_pair("c2")))
    gold_train.write_bytes(csv_bytes(good_pair("g1")))
    r = run_cli(["import", str(cand), "--as-candidates", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["status"], json.loads(r.stdout)["split"]) == ("candidate", None)
    r = run_cli(["import", str(gold_train), "--split", "train", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    r = run_cli(["import", str(cand), "--json"], db=sqlite_url)  # same samples as gold: left as candidates
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["inserted"], out["skipped_existing"]) == (0, 4) and "another status" in out["warnings"][0]
    r = run_cli(["export", str(tmp_path / "cand_out.jsonl"), "--status", "candidate"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    assert sorted({x["pair_id"] for x in _read_export(tmp_path / "cand_out.jsonl")}) == ["c1", "c2"]
    eng = get_engine(sqlite_url, fresh=True)
    with eng.connect() as c:
        got = sorted(c.execute(sa.text("SELECT pair_id, status, split FROM sample")).all())
    assert got == [("c1", "candidate", None)] * 2 + [("c2", "candidate", None)] * 2 + [("g1", "gold", "train")] * 2

    def pairs(**kw):
        with session_scope(eng) as s:
            return sorted({x["pair_id"] for x in fetch_pair_rows(s, **kw)})

    assert pairs() == []  # default: gold test
    assert pairs(split="train") == ["g1"]
    assert pairs(status="all", split="all") == ["c1", "c2", "g1"]
    eng.dispose()


def test_blind_export_holds_only_what_a_system_under_test_may_see(sqlite_url, tmp_path, sqlite_engine):
    """`export --blind`: the samples to give the system under test (the README's "Evaluate your monitor"),
    with no label, label provenance, pair id, source, spans or meta, in sample-id order, in every format; the
    predictions import reads its sample ids back."""
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    src = tmp_path / "tricky.jsonl"
    src.write_bytes(jl(*TRICKY))
    assert run_cli_in_process(["import", str(src)], db=sqlite_url).returncode == 0
    full = _expected_rows(TRICKY)
    for ext in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"blind.{ext}"
        r = run_cli_in_process(["export", str(out), "--blind", "--json"], db=sqlite_url)
        assert r.returncode == 0, r.stderr
        if ext == "jsonl":
            rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        elif ext == "csv":
            rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode("utf-8"), newline="")))
        else:
            import pandas as pd

            rows = pd.read_parquet(out).to_dict("records")
        assert [list(r) for r in rows] == [["sample_id", "category", "task", "request", "response"]] * len(full), ext
        assert [r["sample_id"] for r in rows] == sorted(x["sample_id"] for x in full), ext
        by_id = {x["sample_id"]: x for x in full}
        for r in rows:  # the content is the full export's, cell for cell (CSV: the safe mode's quote removed)
            want = by_id[r["sample_id"]]
            got = r if ext != "csv" else {k: v[1:] if v != want[k] and v[1:] == want[k] else v for k, v in r.items()}
            assert {k: got[k] for k in ("category", "task", "request", "response")} == {
                k: want[k] for k in ("category", "task", "request", "response")
            }, ext
