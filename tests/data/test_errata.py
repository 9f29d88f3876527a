"""Errata that last: the shipped file format, errata in the store (``errata add|list|export|import``), and
every build applying them (across a rebuild with another seed), on real raw sources (two of them)."""

from __future__ import annotations

import json
import re
import threading

import pytest

from automonitor.data.build import build, plan_build
from automonitor.data.errata import (
    add_erratum,
    current,
    errata_in_force,
    import_errata,
    load_errata,
    make_erratum,
)
from automonitor.errors import InputError
from store import session_scope

LINE = {
    "pair_id": "xstest:v2-1",
    "source": "xstest",
    "verdict": "wrong",
    "reason": "harmless",
    "reader": "t",
    "date": "2026-12-01",
}


def test_repo_errata_file_is_valid_and_has_every_reading_judged_wrong():
    errata = load_errata()
    ids = {e.pair_id for e in errata}
    # docs/verified_readings.md judged these wrong
    assert {"safecoder:train:112", "xstest:v2-48", "sven:train/cwe-089:122", "xstest:v2-367"} <= ids
    assert {
        "xstest:v2-30",
        "sven:cwe-089-f5000e965d",
        "sycophancy_qa:sure:54:885",
    } <= ids  # later readings (reasons in the file)
    for e in errata:
        assert list(json.loads(e.line())) == ["pair_id", "source", "verdict", "reason", "reader", "date"]


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"verdict": "maybe"}, "verdict"),
        ({"date": "01/12/2026"}, "date"),
        ({"date": "2026-02-30"}, "date"),
        ({"reason": "  "}, "reason"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_line_names_file_line_and_field(tmp_path, patch, field):
    p = tmp_path / "errata.jsonl"
    p.write_text(json.dumps(LINE) + "\n" + json.dumps({**LINE, **patch}) + "\n")
    with pytest.raises(InputError) as ei:
        load_errata(p)
    assert ei.value.line == 2 and ei.value.field == field and ei.value.file == str(p)


def test_bad_file_imports_nothing(engine, tmp_path):
    p = tmp_path / "errata.jsonl"
    p.write_text(json.dumps(LINE) + "\n" + json.dumps({**LINE, "verdict": "maybe"}) + "\n")
    with pytest.raises(InputError) as ei:
        import_errata(engine, p, path=tmp_path / "none.jsonl")
    assert ei.value.line == 2
    with session_scope(engine) as s:
        assert errata_in_force(s, tmp_path / "none.jsonl") == []


def test_add_records_exact_fields_in_the_store_and_later_entries_win(engine, tmp_path):
    none = tmp_path / "none.jsonl"
    threads = [
        threading.Thread(target=add_erratum, args=(engine, f"cand:sven:cwe-089-{i:04d}", "doubtful", f"r{i}", "t"))
        for i in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with session_scope(engine) as s:
        rows = errata_in_force(s, none)
    assert len(rows) == 20 and all(list(json.loads(e.line())) == list(LINE) for e in rows)
    assert {e.source for e in rows} == {"sven"} and all(not e.pair_id.startswith("cand:") for e in rows)
    add_erratum(engine, "sven:cwe-089-0003", "wrong", "re-read", "t")
    with session_scope(engine) as s:
        cur = current(errata_in_force(s, none))
    assert len(cur) == 20 and cur["sven:cwe-089-0003"].verdict == "wrong"
    with pytest.raises(InputError) as ei:
        add_erratum(engine, "x:1", "nope", "r")
    assert ei.value.field == "--verdict"


def _append(p, pair_id: str, verdict: str, reason: str) -> None:
    """Append one erratum line to a shipped-format errata file ``p``."""
    with open(p, "a", encoding="utf-8") as fh:
        fh.write(make_erratum(pair_id, verdict, reason, "t").line() + "\n")


def test_cli_add_list_export_import_and_bad_file_exit_2(cli, tmp_path, sqlite_url, sqlite_engine, monkeypatch):
    shipped = tmp_path / "shipped.jsonl"
    shipped.write_text(json.dumps(LINE) + "\n")
    env = {"AUTOMONITOR_ERRATA": str(shipped)}
    r = cli(
        ["errata", "add", "xstest:v2-9", "--verdict", "wrong", "--reason", "safe reply", "--reader", "me"],
        db=sqlite_url,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "not in the store" in r.stderr
    r = cli(["errata", "list", "--json"], db=sqlite_url, env=env)
    doc = json.loads(r.stdout)
    assert doc["not_in_store"] == ["xstest:v2-1", "xstest:v2-9"] and doc["counts"]["by_source"] == {
        "xstest": {"wrong": 2, "doubtful": 0}
    }
    out = tmp_path / "reviewed.jsonl"
    r = cli(["errata", "export", str(out)], db=sqlite_url, env=env)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["pair_id"] for x in out.read_text().splitlines()] == ["xstest:v2-1", "xstest:v2-9"]
    other = f"sqlite:///{tmp_path / 'other.db'}"
    r = cli(["errata", "import", str(out), "--json"], db=other, env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"read": 2, "added": 1, "already": 1}, r.stderr
    r = cli(["errata", "import", str(out), "--json"], db=other, env=env)
    assert json.loads(r.stdout)["added"] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pair_id": "x"}\n')
    r = cli(["errata", "list", "--file", str(bad)], db=sqlite_url)
    assert r.returncode == 2 and "line 1" in r.stderr and "field 'source'" in r.stderr
    r = cli(["errata", "import", str(bad)], db=f"sqlite:///{tmp_path / 'never.db'}")
    assert r.returncode == 2 and not (tmp_path / "never.db").exists()
    r = cli(["errata", "add", "x:1", "--verdict", "bad", "--reason", "r"], db=f"sqlite:///{tmp_path / 'n.db'}")
    assert r.returncode == 2 and not (tmp_path / "n.db").exists()


#: the sources the build tests below read: SafeCoder (paper and verified pairs, content-named pairs with
#: their upstream id as an alias) and School of Reward Hacks (a draw that changes with the seed); the
#: errata rules, not the data, are under test, and a plan of these two takes seconds, not a full build's
ERRATA_SOURCES = ("safecoder", "school_of_reward_hacks")


@pytest.fixture(scope="module")
def errata_raw(tmp_path_factory, raw_dir):
    """A raw dir holding only :data:`ERRATA_SOURCES` (copied from the run's raw dir)."""
    import shutil

    root = tmp_path_factory.mktemp("errata-raw")
    for name in ERRATA_SOURCES:
        shutil.copytree(raw_dir / name, root / name)
    return root


@pytest.fixture(scope="module")
def loaded(errata_raw):
    from automonitor.data.build import load_all

    return load_all(errata_raw)


# The errata act before the adversarial filter (edition ``hard`` is made from ``verified`` afterwards, so an
# erratum leaves ``hard`` with ``verified``); these tests skip the filter (``hard=False``): each erratum
# changes the filter's input, and refitting it per erratum would cost a minute each.


def _verified(plan):
    return {r["pair_id"] for r in plan.rows if "verified" in r.get("editions", ())}


@pytest.mark.slow
def test_errata_leave_verified_across_reseed_and_mark_paper(tmp_path, errata_raw, loaded):
    raw_dir = errata_raw
    empty = tmp_path / "none.jsonl"
    base = plan_build(raw_dir, 0, loaded=loaded, errata_file=empty, hard=False)
    assert "hard" not in base.report and not any("hard" in r.get("editions", ()) for r in base.rows)
    ver = sorted(_verified(base))
    paper_ver = sorted({r["pair_id"] for r in base.rows if {"paper", "verified"} <= set(r.get("editions", ()))})
    wrong, doubtful = paper_ver[0], ver[-1]
    # an alias: the upstream id of a content-named pair (safecoder:train:N style)
    alias_row = next(r for r in base.rows if r["pair_id"] in ver and r["meta"].get("upstream_id"))
    p = tmp_path / "errata.jsonl"
    _append(p, wrong, "wrong", "label reads wrong")
    _append(p, doubtful, "doubtful", "unclear")
    _append(p, alias_row["meta"]["upstream_id"], "wrong", "by alias")
    _append(p, "xstest:v2-99999", "wrong", "gone")
    for seed in (0, 1):
        plan = plan_build(raw_dir, seed, loaded=loaded, errata_file=p, hard=False)
        v = _verified(plan)
        assert not v & {wrong, doubtful, alias_row["pair_id"]}
        rows = [r for r in plan.rows if r["pair_id"].removeprefix("cand:") in {wrong, doubtful}]
        assert all(r["split"] != "train" for r in rows)
        cands = {r["pair_id"].removeprefix("cand:"): r for r in rows if r["status"] == "candidate"}
        assert cands[wrong]["meta"]["gate"] == "erratum (wrong): label reads wrong"
        assert cands[doubtful]["meta"]["gate"].startswith("erratum (doubtful)")
        for r in rows:
            if "paper" in r.get("editions", ()):
                assert r["meta"]["erratum"]["verdict"] in ("wrong", "doubtful")  # marked, never silently gold
        rep = plan.report["errata"]
        assert rep["wrong"] == 3 and rep["doubtful"] == 1 and rep["applied"] == 3
        assert rep["unmatched"] == ["xstest:v2-99999"]
    # without the errata the seed-1 build has an errata'd pair in verified (a source with spare pairs refills
    # its quota, so the count need not drop)
    assert (_verified(plan_build(raw_dir, 1, loaded=loaded, errata_file=empty, hard=False)) - v) & {
        wrong,
        doubtful,
        alias_row["pair_id"],
    }


@pytest.mark.slow
def test_erratum_added_after_a_build_applies_on_rebuild(tmp_path, errata_raw, loaded):
    raw_dir = errata_raw
    from store import get_engine, init_db, session_scope
    from store.queries.samples import stats

    eng = init_db(get_engine(f"sqlite:///{tmp_path / 's.db'}", fresh=True))
    p = tmp_path / "errata.jsonl"
    build(eng, raw_dir, 0, loaded=loaded, errata_file=p, hard=False)
    with session_scope(eng) as s:
        before = stats(s, "test", "verified")["pairs"]
    plan = plan_build(raw_dir, 0, loaded=loaded, errata_file=p, hard=False)
    pid = next(r["pair_id"] for r in plan.rows if {"paper", "verified"} <= set(r.get("editions", ())))
    add_erratum(eng, pid, "wrong", "read wrong", "t")  # into the store: the next build applies it
    lines: list[str] = []
    rep = build(eng, raw_dir, 0, loaded=loaded, errata_file=p, hard=False, progress=lines.append)
    assert rep["updated"] >= 2 and not rep["unchanged"]
    # the line before the writes and the line after count the same updates (the erratum-only ones included)
    planned = next(x for x in lines if x.startswith("store: writing "))
    done = next(x for x in lines if re.match(r"store: [\d,]+ inserted", x))
    assert f"{rep['updated']:,} updated" in planned and f"{rep['updated']:,} updated" in done, (planned, done)
    with session_scope(eng) as s:
        assert stats(s, "test", "verified")["pairs"] == before - 1
    import sqlalchemy as sa

    from store.models import Sample

    with eng.connect() as c:
        metas = [r[0] for r in c.execute(sa.select(Sample.meta).where(Sample.pair_id == pid))]
    assert len(metas) == 2 and all(m["erratum"]["reason"] == "read wrong" for m in metas)
    assert build(eng, raw_dir, 0, loaded=loaded, errata_file=p, hard=False)["unchanged"]
    eng.dispose()
    assert not p.exists()  # nothing is written into a file
