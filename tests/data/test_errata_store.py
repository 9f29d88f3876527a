"""Errata kept in the store and shipped with the package (issue 37, findings 3 and 4): writers and readers
in two real processes on SQLite and PostgreSQL, a bounded reason shown escaped with its control and
line-separator characters marked (drill-down badge, ``errata list``), the shipped readings loaded by a
build from an installed wheel, and the app never writing into the code checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor import views
from automonitor.data.errata import MAX_REASON, add_erratum, errata_in_force, load_errata
from automonitor.errors import InputError
from store import session_scope
from store.models import Erratum as ErratumRow

from helpers import REPO, run_cli

WORKER = Path(__file__).resolve().parents[1] / "race_worker.py"
HOSTILE = "looks fine\u2028but NEL\u0085here \x1b[2J\x1b]0;pwned\x07 and \u202eevil"


def _worker(db_url: str, env: dict, *args: str) -> subprocess.Popen:
    full = {**os.environ, **env, "PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}
    start = str(time.time())
    return subprocess.Popen(
        [sys.executable, str(WORKER), args[0], db_url, start, *args[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )


def test_a_writer_and_a_reader_process_never_see_a_torn_erratum(engine, db_url, tmp_path):
    """One process records 60 errata (long reasons with U+2028, U+0085 and an escape sequence) while
    another reads the errata in force in a loop: every read succeeds, holds only whole errata, and the
    count only grows; at the end all 60 are there."""
    env = {"AUTOMONITOR_ERRATA": str(tmp_path / "no-shipped.jsonl")}
    reader = _worker(db_url, env, "errata-read", "120", "60")
    assert reader.stdout.readline().strip() == "reading", reader.stderr.read()[-2000:]
    writer = _worker(db_url, env, "errata-write", "60")
    w_out, w_err = writer.communicate(timeout=300)
    r_out, r_err = reader.communicate(timeout=300)
    assert writer.returncode == 0, w_err[-2000:]
    assert reader.returncode == 0, r_err[-2000:]
    assert json.loads(w_out) == {"written": 60}
    doc = json.loads(r_out)
    assert doc["bad"] == [] and doc["reads"] > 1
    assert doc["counts"][0] == 0 and doc["counts"][-1] == 60 and doc["counts"] == sorted(doc["counts"])
    with session_scope(engine) as s:
        errata = errata_in_force(s, tmp_path / "no-shipped.jsonl")
    assert len(errata) == 60 and all("\u2028" in e.reason and "\u0085" in e.reason for e in errata)


def test_the_reason_is_bounded_by_the_core_and_the_database(engine):
    add_erratum(engine, "x:1", "wrong", "é" * (MAX_REASON // 2), "r")  # 4096 bytes: accepted
    with pytest.raises(InputError) as ei:
        add_erratum(engine, "x:2", "wrong", "é" * (MAX_REASON // 2) + "e", "r")
    assert ei.value.field == "--reason" and "4096 bytes" in str(ei.value)
    with pytest.raises(sa.exc.IntegrityError):  # a writer bypassing the core
        with session_scope(engine) as s:
            s.add(
                ErratumRow(
                    pair_id="x:3",
                    source="x",
                    verdict="wrong",
                    reason="r" * 5000,
                    reader="r",
                    date="2026-12-05",
                    origin="cli",
                )
            )
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as s:
            s.add(
                ErratumRow(
                    pair_id="x:4", source="x", verdict="maybe", reason="r", reader="r", date="2026-12-05", origin="cli"
                )
            )


def test_a_reason_with_line_separators_is_shown_whole_and_marked(engine, tmp_path, monkeypatch):
    """The drill-down badge finds an erratum whose reason holds U+2028 / U+0085 in the shipped file (the
    file used to be split on them, so the badge never showed) and in the store, and shows every control
    and line-separator character as a visible marker, HTML-escaped."""
    shipped = tmp_path / "shipped.jsonl"
    row = {
        "pair_id": "p:1",
        "source": "p",
        "verdict": "wrong",
        "reason": HOSTILE,
        "reader": "r<b>",
        "date": "2026-12-01",
    }
    shipped.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(shipped))
    assert [e.reason for e in load_errata()] == [HOSTILE]
    add_erratum(engine, "p:1", "doubtful", "second <i>reading</i>\u2028x", "tester", origin="app", entered_by="ada")
    found = views.sample_errata({"pair_id": "p:1", "meta": {}}, engine)
    assert [e["verdict"] for e in found] == ["wrong", "doubtful"]
    html = views.provenance_html("user", found)
    for marker in ("⟨U+2028⟩", "⟨U+0085⟩", "⟨U+001B⟩", "⟨U+0007⟩", "⟨U+202E⟩"):
        assert marker in html
    assert not any(ch in html for ch in "\u2028\u0085\x1b\x07\u202e")
    assert "&lt;i&gt;reading&lt;/i&gt;" in html and "r&lt;b&gt;" in html and "entered via app by ada" in html


def test_errata_list_passes_no_terminal_escape(engine, db_url, tmp_path):
    shipped = tmp_path / "none.jsonl"
    add_erratum(engine, "p:\x1b[31m1", "wrong", HOSTILE, "\x1b]0;title\x07reader")
    r = run_cli(["errata", "list"], db=db_url, env={"AUTOMONITOR_ERRATA": str(shipped)})
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert not any(ch in out for ch in "\x1b\x07\u2028\u0085\u202e\x9b"), repr(out)
    assert "⟨U+001B⟩" in out and "⟨U+2028⟩" in r.stdout


def test_the_drilldown_never_writes_into_the_checkout(engine, db_url, tmp_path):
    """ "Report this label" goes through the store; the shipped file (in the checkout) is only read."""
    before = (REPO / "seeds" / "errata.jsonl").read_bytes()
    add_erratum(engine, "xstest:v2-1", "wrong", "reported from the app", "ada", origin="app", entered_by="ada")
    assert (REPO / "seeds" / "errata.jsonl").read_bytes() == before
    with session_scope(engine) as s:
        (row,) = s.execute(sa.select(ErratumRow)).scalars().all()
        assert (row.origin, row.entered_by) == ("app", "ada") and row.entered_at is not None


@pytest.mark.slow
def test_an_installed_wheel_ships_the_errata_and_its_build_applies_them(tmp_path):
    """A wheel built from the source tree and installed into a bare target directory holds the project's
    errata as package data, and a build run from that install (not the checkout) applies every one."""
    src = tmp_path / "src"
    for name in ("automonitor", "store", "seeds"):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "w")], check=True
    )
    (wheel,) = (tmp_path / "w").glob("*.whl")
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], check=True)
    assert (site / "automonitor" / "data" / "errata.jsonl").is_file()
    raw = tmp_path / "raw"  # one small source: the errata in force are counted whatever pairs they match
    shutil.copytree(Path(os.environ.get("AUTOMONITOR_RAW", REPO.parent / "shared" / "raw")) / "xstest", raw / "xstest")
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOMONITOR_ERRATA", "PYTHONPATH")}
    env.update({"PYTHONPATH": str(site), "AUTOMONITOR_DB": f"sqlite:///{tmp_path / 'w.db'}"})
    where = subprocess.run(
        [sys.executable, "-c", "import automonitor; print(automonitor.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(site)), where
    r = subprocess.run(
        [sys.executable, "-m", "automonitor", "build", "--raw", str(raw), "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    shipped = load_errata(REPO / "seeds" / "errata.jsonl")
    report = json.loads(r.stdout)["errata"]
    assert shipped and report["wrong"] + report["doubtful"] == len({e.pair_id for e in shipped})
    assert report["applied"] >= 1  # xstest pairs judged wrong are taken out of verified
