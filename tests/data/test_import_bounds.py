"""A bad import file keeps a bounded problem list ("first N problems, M
more": a million bad rows cost a counter, not a million error objects), and a file over the documented
size limit (``AUTOMONITOR_MAX_IMPORT_MB``) is refused before it is read, exit 2, store unchanged."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from automonitor.errors import InputError
from automonitor.runs.prediction_files import import_predictions
from automonitor.data.records import KEPT_PROBLEMS
from store.models import Run, Sample


def test_a_predictions_file_with_many_bad_rows_keeps_a_bounded_problem_list(engine, tmp_path):
    f = tmp_path / "preds.jsonl"
    n = 5_000  # 50 times the kept problems (KEPT_PROBLEMS, 100): the rest only counted
    f.write_text("".join(json.dumps({"sample_id": f"s{i}", "outcome": "perhaps"}) + "\n" for i in range(n)))
    with pytest.raises(InputError) as ei:
        import_predictions(engine, f, "imported:bad")
    err = ei.value
    assert len(err.problems) <= KEPT_PROBLEMS  # type: ignore[attr-defined]
    assert f"({n - 1} more problems)" in err.message
    assert err.message.count("\n  also:") == 9 and f"... and {n - 10} more" in err.message
    assert err.line == 1 and str(f) == err.file
    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Run)).scalar() == 0


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path, cli, db_url):
    f = tmp_path / "pairs.jsonl"
    row = {"pair_id": "p", "category": "sycophancy_bias", "task": "qa", "request": "q" * 9000}
    f.write_text(
        json.dumps({**row, "response": "a", "label": "misbehavior"})
        + "\n"
        + json.dumps({**row, "response": "b", "label": "benign"})
        + "\n"
    )
    res = cli(["import", str(f)], db=db_url, env={"AUTOMONITOR_MAX_IMPORT_MB": "0.01"})
    assert res.returncode == 2, res.stderr
    assert "over the import limit of 0 MiB" not in res.stderr  # the limit is printed readably
    assert "over the import limit" in res.stderr and str(f) in res.stderr
    ok = cli(["import", str(f), "--json"], db=db_url)  # the default limit takes it
    assert ok.returncode == 0, ok.stderr
    from store import get_engine

    eng = get_engine(db_url, fresh=True)
    with eng.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Sample)).scalar() == 2
    eng.dispose()


_TRACE = """
import json, sys, tracemalloc
from automonitor.errors import InputError
from automonitor.runs.prediction_files import import_predictions
from store import get_engine, init_db

engine = get_engine(sys.argv[1], fresh=True)
init_db(engine)
tracemalloc.start()
try:
    import_predictions(engine, sys.argv[2], "imported:bad")
except InputError as exc:
    code = (exc.line, exc.field)
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "first": code}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_large_all_bad_predictions_file_is_validated_in_flat_memory(tmp_path, fmt, empty_sqlite_template):
    """Streaming validation, JSONL and CSV: a 4 MB predictions file whose every row is bad keeps only the
    sample ids (duplicate check) and a bounded problem list: its traced peak does not grow with the file
    (measured 9.6 MB for JSONL and 8.9 MB for CSV at 1, 3 and 4 MB). Read whole (the bytes or the text, then
    every record), as CSV was before streaming, the same 4 MB peak at 39 MB (JSONL) and 59 MB (CSV), so the
    bound below (5x the file's size; it was 70 MB for a 12 MB file, 5.8x) still tells the two apart while the
    traced run takes a third of the time. The store is a copy of the run's migrated empty store (``init_db``
    in the process only checks it; tracing starts after)."""
    import shutil
    import subprocess
    import sys

    f = tmp_path / f"preds.{fmt}"
    rows = ["\ufeffsample_id,outcome,raw\r\n"] if fmt == "csv" else []  # with a BOM, as spreadsheets write it
    size, i = sum(len(r.encode()) for r in rows), 0
    while size < 4e6:  # counted, not fh.tell() a row (a text file's tell() cost seconds of the test)
        if fmt == "jsonl":
            rows.append(json.dumps({"sample_id": f"s{i}", "outcome": "perhaps", "raw": "x" * 40}) + "\n")
        else:
            rows.append(f"s{i},perhaps,{'x' * 40}\r\n")
        size += len(rows[-1])  # ASCII
        i += 1
    f.write_bytes("".join(rows).encode())
    shutil.copyfile(empty_sqlite_template, tmp_path / "store.db")  # migrated: no migrations in the process
    url = f"sqlite:///{tmp_path / 'store.db'}"
    res = subprocess.run([sys.executable, "-c", _TRACE, url, str(f)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["first"] == ([1, "outcome"] if fmt == "jsonl" else [2, "outcome"])
    assert out["peak"] < 20e6, out  # bytes


_TRACE_PAIRS = """
import json, sys, tracemalloc
from automonitor.data.pairfiles.importing import apply_import, prepare_import
from store import get_engine, init_db

engine = get_engine(sys.argv[1], fresh=True)
init_db(engine)
tracemalloc.start()
out = apply_import(engine, prepare_import(sys.argv[2]))
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "inserted": out["inserted"]}))
"""


def _write_pair_file(f, fmt: str, target_bytes: float) -> int:
    """A valid pair file of about ``target_bytes`` (long texts, so the file is mostly text); sample count."""
    pad = "lorem ipsum dolor " * 120
    n = 0
    with f.open("w", newline="", encoding="utf-8") as fh:
        if fmt == "csv":
            fh.write("pair_id,category,task,request,response,label\r\n")
        i = 0
        while fh.tell() < target_bytes:
            for label in ("misbehavior", "benign"):
                row = ["p%d" % i, "sycophancy_bias", "qa", f"request {i} {pad}", f"{label} {i} {pad}", label]
                if fmt == "jsonl":
                    fh.write(
                        json.dumps(dict(zip(("pair_id", "category", "task", "request", "response", "label"), row)))
                    )
                    fh.write("\n")
                else:
                    fh.write(",".join(row) + "\r\n")
                n += 1
            i += 1
    return n


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_large_pair_file_is_imported_in_memory_under_its_size(tmp_path, fmt, empty_sqlite_template):
    """Pair files stream: validated once keeping ids and hashes only, written in chunks from a second read.
    A 12 MB file's import peaks under the file's size in traced Python memory (measured 7.5 MB, most of it
    one write chunk); read whole, as before, it peaked at 38.7 MB (the bytes, then every record). The store
    is a copy of the run's migrated empty store (``init_db`` in the process only checks it)."""
    import shutil
    import subprocess
    import sys

    f = tmp_path / f"pairs.{fmt}"
    n = _write_pair_file(f, fmt, 12e6)
    shutil.copyfile(empty_sqlite_template, tmp_path / "store.db")  # migrated: no migrations in the process
    url = f"sqlite:///{tmp_path / 'store.db'}"
    res = subprocess.run([sys.executable, "-c", _TRACE_PAIRS, url, str(f)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["inserted"] == n
    assert out["peak"] < 0.75 * f.stat().st_size, out  # bytes


@pytest.mark.parametrize(
    "edit",
    [("lorem", "LOREM"), ('"task": "qa"', '"task":"qa"')],
    ids=["other-text", "same-samples-other-bytes"],
)
def test_a_pair_file_rewritten_between_validation_and_write_imports_nothing(engine, tmp_path, edit):
    """The write reads the file again; if it no longer is the file that was validated (other text, or the
    same samples written differently) the import is refused and the store is unchanged."""
    from automonitor.data.pairfiles.importing import apply_import, prepare_import

    f = tmp_path / "pairs.jsonl"
    _write_pair_file(f, "jsonl", 20_000)
    plan = prepare_import(f)
    f.write_text(f.read_text().replace(*edit))
    with pytest.raises(InputError, match="changed while it was being imported") as ei:
        apply_import(engine, plan)
    assert ei.value.file == str(f)
    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Sample)).scalar() == 0
