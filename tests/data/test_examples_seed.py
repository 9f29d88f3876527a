"""The hand-written seed set ``seeds/examples.jsonl``: shape, pairing invariants, and a working store built
from it alone (no public sources downloaded), on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor import vocab
from automonitor.hashing import make_sample_id
from automonitor.data.pairfiles.export import export_pairs
from automonitor.data.row_models import PAIR_FIELDS as FIELDS
from helpers import parse_pairs, run_cli

SEED = Path(__file__).resolve().parents[2] / "seeds" / "examples.jsonl"


@pytest.fixture(scope="module")
def seed_rows() -> list[dict]:
    return [json.loads(line) for line in SEED.read_text(encoding="utf-8").splitlines()]


def test_seed_file_shape_and_pairing(seed_rows):
    assert len(seed_rows) >= 120
    _, records = parse_pairs(SEED.read_bytes(), str(SEED))  # the importer's own validation passes
    assert len(records) == len(seed_rows)
    by_pair = defaultdict(list)
    for r in seed_rows:
        assert list(r) == [
            f for f in FIELDS if f not in ("label_source", "spans")
        ]  # optional column, import default user
        assert r["source"] == "seed-examples"
        assert r["sample_id"] == make_sample_id(r["pair_id"], r["label"], r["request"], r["response"])
        assert r["meta"]["difficulty"] in ("explicit", "subtle") and len(r["meta"]["note"]) > 20
        by_pair[r["pair_id"]].append(r)
    assert len(by_pair) >= 60
    cells = Counter()
    for sides in by_pair.values():
        assert sorted(s["label"] for s in sides) == ["benign", "misbehavior"]
        a, b = sides
        assert (a["category"], a["task"], a["request"]) == (b["category"], b["task"], b["request"])
        assert a["response"] != b["response"]
        cells[(a["category"], a["task"])] += 1
    for cell in itertools.product(vocab.CATEGORIES, vocab.TASKS):
        assert cells[cell] >= 6, cell
    # No request is reused across pairs: each pair is its own example.
    assert len({s[0]["request"] for s in by_pair.values()}) == len(by_pair)
    # Text the app must render escaped is present.
    text = "\n".join(r["request"] + r["response"] for r in seed_rows)
    assert "<script>" in text and "<b>" in text and "```" in text and "ü" in text
    assert any(ord(ch) > 0xFFFF for ch in text)  # emoji (astral plane)


@pytest.mark.slow  # three console-script runs per database
def test_seed_imports_into_a_store_with_nothing_downloaded(db_url, tmp_path, seed_rows):
    empty_raw = tmp_path / "no_raw"
    empty_raw.mkdir()
    env = {"AUTOMONITOR_RAW": str(empty_raw)}
    r = run_cli(["import", str(SEED), "--json"], db=db_url, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    n_pairs = len({x["pair_id"] for x in seed_rows})
    assert json.loads(r.stdout) == {
        "file": str(SEED),
        "format": "jsonl",
        "rows": len(seed_rows),
        "pairs": n_pairs,
        "inserted": len(seed_rows),
        "skipped_existing": 0,
        "duplicates_skipped": 0,
        "duplicate_pairs": {},
        "status": "gold",
        "split": "test",
        "warnings": [],
    }
    r = run_cli(["stats", "--json"], db=db_url, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert (stats["total"], stats["pairs"]) == (len(seed_rows), n_pairs)
    assert set(stats["by_category"]) == set(vocab.CATEGORIES) and set(stats["by_task"]) == set(vocab.TASKS)

    from store import get_engine

    eng = get_engine(db_url, fresh=True)
    try:
        with eng.connect() as c:
            rows = c.execute(
                sa.text("SELECT pair_id, category, task, label, request_hash, status, split, source FROM sample")
            ).all()
        pairs = defaultdict(list)
        for row in rows:
            assert (row.status, row.split, row.source) == ("gold", "test", "seed-examples")
            pairs[row.pair_id].append(row)
        cells = Counter()
        for sides in pairs.values():
            assert sorted(s.label for s in sides) == ["benign", "misbehavior"]
            assert len({(s.category, s.task, s.request_hash) for s in sides}) == 1
            cells[(sides[0].category, sides[0].task)] += 1
        assert len(cells) == 9 and min(cells.values()) >= 6
        # the store gives the file back unchanged
        export_pairs(eng, tmp_path / "back.jsonl")
        back = [json.loads(x) for x in (tmp_path / "back.jsonl").read_text(encoding="utf-8").splitlines()]
        assert back == [{**r, "label_source": "user"} for r in seed_rows]  # + the import default provenance
    finally:
        eng.dispose()
    r = run_cli(["import", str(SEED), "--json"], db=db_url, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inserted"] == 0
