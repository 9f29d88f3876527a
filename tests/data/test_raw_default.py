"""Where the raw sources are when neither ``--raw`` nor ``AUTOMONITOR_RAW`` is given: ``../shared/raw``
relative to the working directory when it exists (said in one stderr line), else exit 2 naming both
options, as the README's "Evaluate your monitor" section says."""

from __future__ import annotations

import pytest
from helpers import run_cli_in_process

from automonitor.data.build import resolve_raw
from automonitor.errors import InputError


def _layout(tmp_path, *, with_raw: bool):
    work = tmp_path / "checkout"
    work.mkdir()
    if with_raw:
        (tmp_path / "shared" / "raw").mkdir(parents=True)
    return work


def test_resolve_raw_falls_back_to_shared_raw_and_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOMONITOR_RAW", raising=False)
    monkeypatch.chdir(_layout(tmp_path, with_raw=True))
    notes: list[str] = []
    assert resolve_raw(None, note=notes.append) == (tmp_path / "shared" / "raw").resolve()
    assert len(notes) == 1 and "../shared/raw" in notes[0] and str((tmp_path / "shared" / "raw").resolve()) in notes[0]


def test_resolve_raw_prefers_the_option_then_the_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(_layout(tmp_path, with_raw=True))
    mine, env = tmp_path / "mine", tmp_path / "env"
    mine.mkdir(), env.mkdir()
    monkeypatch.setenv("AUTOMONITOR_RAW", str(env))
    notes: list[str] = []
    assert resolve_raw(str(mine), note=notes.append) == mine.resolve()
    assert resolve_raw(None, note=notes.append) == env.resolve()
    assert notes == []


def test_resolve_raw_without_any_names_both_options(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOMONITOR_RAW", raising=False)
    monkeypatch.chdir(_layout(tmp_path, with_raw=False))
    with pytest.raises(InputError) as err:
        resolve_raw(None)
    assert "--raw" in str(err.value) and "AUTOMONITOR_RAW" in str(err.value) and "../shared/raw" in str(err.value)


def test_plain_build_uses_shared_raw_beside_the_checkout(tmp_path):
    """``automonitor build`` with no option and no variable reads ``../shared/raw`` (here empty: the build
    then stops at "no public source files found under" that directory, which proves it was used)."""
    work = _layout(tmp_path, with_raw=True)
    done = run_cli_in_process(["build"], db=f"sqlite:///{tmp_path / 's.db'}", env={"AUTOMONITOR_RAW": None}, cwd=work)
    raw = str((tmp_path / "shared" / "raw").resolve())
    assert done.returncode == 2, done.stderr
    assert f"raw sources: {raw}" in done.stderr
    assert f"no public source files found under {raw}" in done.stderr


def test_plain_build_without_shared_raw_exits_2_naming_both_options(tmp_path):
    work = _layout(tmp_path, with_raw=False)
    done = run_cli_in_process(["build"], db=f"sqlite:///{tmp_path / 's.db'}", env={"AUTOMONITOR_RAW": None}, cwd=work)
    assert done.returncode == 2, done.stderr
    assert "no raw sources directory given" in done.stderr
    assert "--raw" in done.stderr and "AUTOMONITOR_RAW" in done.stderr and "Traceback" not in done.stderr
