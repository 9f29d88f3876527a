"""The build's plan cache (:mod:`automonitor.data.build.plan_cache`) and the audits a build into a new store
reads from an earlier one (:mod:`automonitor.data.build.fresh_audits`): the same stored result, and a change of
raw data, seed, errata, ``hard`` or code is another key."""

from __future__ import annotations

import json
import re
import shutil

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from automonitor.data.build import build
from automonitor.data.build.plan_cache import files_digest, plan_key
from automonitor.data.errata import load_errata

SOURCE = "school_of_reward_hacks"
#: columns that hold when a row was written (and the kept audit's fingerprint, which holds the newest of them)
_WHEN = re.compile(r"(_at|^fingerprint)$")


def _store(template, tmp_path, name):
    from store import get_engine, init_db

    path = tmp_path / f"{name}.db"
    shutil.copyfile(template, path)
    eng = get_engine(f"sqlite:///{path}", fresh=True)
    init_db(eng)
    return eng


def _tables(eng) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows ordered by primary key, the columns of :data:`_WHEN` left out; a build report's
    timings (``seconds``) left out of ``build_log``."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    meta = sa.MetaData()
    meta.reflect(eng)
    with eng.connect() as c:
        for name, t in sorted(meta.tables.items()):
            cols = [col for col in t.columns if not _WHEN.search(col.name)]
            rows = c.execute(sa.select(*cols).order_by(*(t.primary_key.columns or t.columns))).all()
            if name == "build_log":
                rows = [tuple(_untimed(v) for v in r) for r in rows]
            out[name] = [tuple(r) for r in rows]
    return out


def _untimed(v):
    doc = json.loads(v) if isinstance(v, str) and v.startswith("{") else v
    if isinstance(doc, dict):
        doc = {k: x for k, x in doc.items() if k != "seconds"}
        doc["hard"] = {k: x for k, x in doc.get("hard", {}).items() if k not in ("seconds", "cached")}
    return doc


def _raw(tmp_path, raw_dir):
    raw = tmp_path / "raw"
    shutil.copytree(raw_dir / SOURCE, raw / SOURCE)
    for p in (raw / SOURCE).iterdir():
        p.chmod(0o644)
    return raw


@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection")
def test_a_rebuild_reads_its_plan_and_a_new_store_its_audit_with_the_same_result(
    tmp_path, raw_dir, empty_sqlite_template, monkeypatch
):
    """A warm build that makes its plan and audit (the ladder, filter and certificate caches full) and a build
    of the same raw data into another new store that reads both back (no stage runs, no audit computed) store
    exactly the same rows and report (less when rows were written and the timings); the audit kept is the audit
    of what was stored; a rebuild changes nothing (a raw file changed is another key: the next test)."""
    from automonitor.data.audit.cache import STORE_KEY, cached_audit
    from automonitor.data.build.plan_cache import plan_cache_dir

    cache = tmp_path / "cache"
    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(cache))
    raw = _raw(tmp_path, raw_dir)
    build(_store(empty_sqlite_template, tmp_path, "cold"), raw, 0, audits=("paper",))  # fills every cache
    shutil.rmtree(plan_cache_dir())
    for p in (cache / "audit").glob("built-*.json"):
        p.unlink()
    first, again = _store(empty_sqlite_template, tmp_path, "a"), _store(empty_sqlite_template, tmp_path, "b")
    seen_a: list[str] = []
    rep_a = build(first, raw, 0, progress=seen_a.append, audits=("paper",))  # what a warm build did before
    assert not any(line.startswith("plan: read from the cache") for line in seen_a)
    assert any(line.startswith("audit of edition paper: computing") for line in seen_a)
    seen_b: list[str] = []
    rep_b = build(again, raw, 0, progress=seen_b.append, audits=("paper",))
    assert any(line.startswith("plan: read from the cache") for line in seen_b), seen_b
    assert not any("computing" in line for line in seen_b), seen_b
    # the stage lines with counts are replayed (the CLI's tests and users read them)
    assert any(re.match(r"^gates: [\d,]+ pairs pass \(cached\)$", line) for line in seen_b)
    assert any(re.match(r"^selection: [\d,]+ test pairs", line) for line in seen_b)
    assert any(re.match(rf"^{SOURCE}: [\d,]+ pairs from 2 file\(s\) \(cached\)$", line) for line in seen_b)
    assert _tables(first) == _tables(again)
    assert _untimed(json.dumps(rep_a)) == _untimed(json.dumps(rep_b)) and rep_b["inserted"] > 0
    assert rep_b["ladder"]["cached"] and rep_b["hard"]["cached"]
    with again.connect() as c:
        kept = c.execute(
            sa.text("select doc from derived_document where key = :k"), {"k": STORE_KEY.format(edition="paper")}
        ).scalar()
    assert json.loads(kept) == cached_audit(again, "paper", use_cache=False)  # recomputed from the store
    seen: list[str] = []
    assert build(again, raw, 0, progress=seen.append, audits=("paper",))["unchanged"] is True
    assert any(line.startswith("plan: read from the cache") for line in seen)


def test_the_plan_key_changes_with_every_input(tmp_path, raw_dir):
    """Seed, ``hard``, the errata in force, the external test hashes, any raw file's bytes or name and the code
    (every file of the ``automonitor`` package) each make another key; the same inputs the same key."""
    import automonitor
    from automonitor.data.build import plan_cache

    raw = _raw(tmp_path, raw_dir)
    errata = load_errata()
    assert errata

    def key(seed=0, **kw):
        return plan_key(raw, seed, **{"external_test": None, "errata": errata, "hard": True, **kw})

    base = key()
    assert key() == base
    assert key(1) != base
    assert key(hard=False) != base
    assert key(errata=errata[1:]) != base
    assert key(external_test=({"r"}, set())) != base
    (raw / SOURCE / "SOURCES.md").write_text("changed")
    assert key() != base
    changed = key()
    (raw / SOURCE / "SOURCES.md").rename(raw / SOURCE / "SOURCES2.md")
    assert key() != changed
    # the code: the digest of every file under the package, which one byte of one file changes
    assert plan_cache._PACKAGE == Path(automonitor.__file__).resolve().parent
    code = tmp_path / "code"
    (code / "sub").mkdir(parents=True)
    (code / "sub" / "a.py").write_text("x = 1\n")
    before = files_digest(code)
    (code / "sub" / "a.py").write_text("x = 2\n")
    assert files_digest(code) != before


def test_only_the_newest_plans_are_kept(tmp_path, monkeypatch):
    """The cache keeps the :data:`~automonitor.data.build.plan_cache.KEEP` most recently used plans."""
    import os

    from automonitor.data.build.plan_cache import KEEP, evict, plan_cache_dir

    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path))
    d = plan_cache_dir()
    d.mkdir(parents=True)
    paths = [d / f"{i}.json" for i in range(KEEP + 2)]
    for i, p in enumerate(paths):
        p.write_text("{}")
        os.utime(p, (1000 + i, 1000 + i))
    evict(paths[0])  # the oldest, just used
    assert sorted(p.name for p in d.iterdir()) == sorted([paths[0].name, *(p.name for p in paths[-(KEEP - 1) :])])
