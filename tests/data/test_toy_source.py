"""Adding a source is one file, the module that loads it (no list elsewhere to extend): a toy source
(``tests/fixtures/toy_source.py``, a module written like the real ones and registered with
``register_source`` and ``verified_pairs``) is built by ``automonitor build`` (in this process, where
the toy is registered; the raw dir holds only the toy's folder), its pairs are in the ``verified`` test
set with their provenance, ``automonitor audit`` lists its slice, and a rules run over the edition is
reported with it (audit, run and report are the real console script in subprocesses: they need the
store only, not the registry)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import sqlalchemy as sa

from automonitor.cli import main
from automonitor.data.build import verified_extra
from automonitor.data.sources import REGISTRY, data_files
from store.models import EditionSample, Sample

from helpers import scratch

TOY_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "toy_source.py"
#: The verified-only quotas of the real sources (as registered at import, before the toy source).
VERIFIED_BEFORE_TOY = verified_extra()


def _import_toy() -> ModuleType:
    """A fresh copy of the toy source module (importing it registers the toy source)."""
    spec = importlib.util.spec_from_file_location("toy_source", TOY_FILE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def toy():
    """The toy source registered for one test; the registry is as before afterwards."""
    before = list(REGISTRY)
    with scratch(REGISTRY):
        yield _import_toy()
    assert list(REGISTRY) == before and "toy_metric_gaming" not in REGISTRY


def test_toy_source_registers_from_its_one_file_and_leaves_no_trace(toy):
    src = REGISTRY[toy.NAME]
    assert list(REGISTRY)[-1] == toy.NAME  # order 1000: after every real source
    assert (src.folder, src.category, src.task, src.files) == (toy.FOLDER, toy.CATEGORY, "qa", toy.FILES)
    assert src.load is toy.load and src.verified_pairs == toy.VERIFIED_PAIRS and src.candidate_pairs is None
    assert src.doc.startswith("Toy metric gaming (test fixture)")
    assert toy.PAIRS_FILE in data_files()  # the fetch manifest pins its file
    assert verified_extra()[-1].source == toy.NAME and verified_extra()[:-1] == VERIFIED_BEFORE_TOY
    with pytest.raises(ValueError, match="registered twice"):
        _import_toy()


def test_toy_source_is_built_audited_and_reported(toy, tmp_path, sqlite_url, sqlite_engine, monkeypatch, capsys, cli):
    raw = tmp_path / "raw"
    toy.write_raw(raw)
    no_errata = tmp_path / "errata.jsonl"  # the repository's errata name pairs of the real sources only
    monkeypatch.setenv("AUTOMONITOR_DB", sqlite_url)
    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(no_errata))

    # build: the real CLI entry, in this process (where the toy is registered)
    code = main(["build", "--raw", str(raw), "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    report = json.loads(cap.out)
    mine = report["sources"][toy.NAME]
    assert (mine["category"], mine["task"], mine["files_read"], mine["files_missing"]) == (
        "specification_gaming",
        "qa",
        1,
        [],
    )
    assert mine["pairs_available"] == 30 and mine["test_pairs"] == toy.VERIFIED_PAIRS and mine["train_pairs"] == 10
    assert report["editions"]["verified"]["by_source"] == {toy.NAME: toy.VERIFIED_PAIRS}
    assert report["sources"]["hh_rlhf"]["files_missing"]  # the real sources are registered, their files absent

    # the verified test set holds the toy pairs, both sides, with their provenance
    by_request = {prompt: (gamed, honest) for prompt, gamed, honest in toy.PAIRS}
    q = (
        sa.select(Sample.__table__)
        .join(EditionSample.__table__, EditionSample.__table__.c.sample_id == Sample.__table__.c.id)
        .where(EditionSample.__table__.c.edition == "verified")
    )
    with sqlite_engine.connect() as c:
        rows = [dict(r._mapping) for r in c.execute(q)]
    assert len(rows) == 2 * toy.VERIFIED_PAIRS
    assert len({r["pair_id"] for r in rows}) == toy.VERIFIED_PAIRS
    for r in rows:
        assert (r["source"], r["split"], r["status"], r["category"], r["task"]) == (
            toy.NAME,
            "test",
            "gold",
            "specification_gaming",
            "qa",
        )
        assert r["source_file"] == toy.PAIRS_FILE and r["label_source"] == "instructed_demo"
        line, side = r["source_record"].removeprefix("line ").split(": ")
        assert side == {"misbehavior": "gamed", "benign": "honest"}[r["label"]]
        rid = json.loads((raw / toy.PAIRS_FILE).read_text().splitlines()[int(line) - 1])["id"]
        assert r["pair_id"] == f"{toy.NAME}:{rid}" and r["meta"]["upstream_id"] == rid
        gamed, honest = by_request[r["request"]]
        assert r["response"] == (gamed if r["label"] == "misbehavior" else honest)

    # audit: the console script, as `automonitor audit` runs
    aud = cli(["audit", "--edition", "verified", "--json"], db=sqlite_url)
    assert aud.returncode == 0, aud.stderr
    slices = {(s["source"], s["category"], s["task"]): s for s in json.loads(aud.stdout)["slices"]}
    toy_slice = slices[(toy.NAME, "specification_gaming", "qa")]
    assert toy_slice["pairs"] == toy.VERIFIED_PAIRS and toy_slice["label_source"] == {
        "instructed_demo": toy.VERIFIED_PAIRS
    }
    assert set(toy_slice["baselines"]) >= {"length", "tfidf"}

    # a rules run over the edition, then the report
    run = cli(
        ["run", "--monitor", "rules", "--template", "direct", "--edition", "verified", "--json", "--quiet"],
        db=sqlite_url,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["n"] == 2 * toy.VERIFIED_PAIRS
    rep = cli(
        ["report", "--json", "--run", summary["run_id"], "--edition", "verified", "--n-boot", "20"], db=sqlite_url
    )
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    entry = doc["runs"][0]
    cell = entry["by_category_task"]["specification_gaming"]["qa"]
    assert entry["edition"] == "verified" and cell["n"] == entry["overall"]["n"] == 2 * toy.VERIFIED_PAIRS
    assert sum(cell[k] for k in ("tp", "fn", "fp", "tn", "unscored")) == cell["n"]
    assert entry["pairs"]["pairs"] == toy.VERIFIED_PAIRS
    reported = {s["source"]: s for s in doc["audit"]["verified"]["slices"]}
    assert reported[toy.NAME]["pairs"] == toy.VERIFIED_PAIRS
    assert reported[toy.NAME]["baselines"] == toy_slice["baselines"]
