"""Probe artefacts cannot run code: a crafted pickle is never executed (neither by a monitor
nor by ``probe migrate``), an altered or foreign artefact is refused with exit 2 naming it, and a legacy
artefact written by the old joblib code (tests/fixtures/probes, made before the change) migrates once
and then predicts exactly what it predicted before."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import joblib
import numpy as np
import pytest

from automonitor.runs.probe import model as probes
from automonitor.errors import InputError
from helpers import run_cli
from test_probes import fill_store, made_up

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


class _Payload:
    """Pickles into ``os.system("touch MARKER")``: what an attacker's artefact would do on load."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def _evil(tmp_path: Path, *, with_card: bool) -> tuple[Path, Path]:
    """A joblib artefact shaped like a real one whose features unpickle into a shell command; with
    ``with_card`` also a model card recording the file's true sha256 (an attacker who writes both)."""
    marker = tmp_path / "PWNED"
    d = tmp_path / "art" / "probes"
    d.mkdir(parents=True)
    path = d / "tfidf-lr-all-v1.joblib"
    joblib.dump(
        {"format": "automonitor-probe", "card": {"features": "tfidf"}, "features": _Payload(marker), "clf": None}, path
    )
    if with_card:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        (d / "tfidf-lr-all-v1.card.json").write_text(json.dumps({"sha256": sha}))
    return path, marker


def _trained(directory: Path) -> Path:
    recs = made_up(20, 5)
    p = probes.train_probe("tfidf", [r.request for r in recs], [r.response for r in recs], [r.label for r in recs])
    return probes.save_probe(p, directory)


def test_crafted_pickle_never_runs_when_a_monitor_loads_it(tmp_path, sqlite_url, sqlite_engine):
    fill_store(sqlite_engine, made_up(5, 1, prefix="tr"), made_up(5, 2, prefix="te"))
    path, marker = _evil(tmp_path, with_card=True)
    for spec in (f"probe:{path}", "probe:tfidf-lr"):
        r = run_cli(
            ["run", "--monitor", spec, "--template", "direct"],
            db=sqlite_url,
            env={"AUTOMONITOR_ARTIFACTS": str(tmp_path / "art")},
        )
        assert r.returncode == 2, (spec, r.stdout, r.stderr)
        assert not marker.exists(), f"the payload ran via {spec}"
    assert "probe migrate" in r.stderr
    with pytest.raises(InputError, match="legacy joblib"):
        probes.load_probe(path)
    assert not marker.exists()


@pytest.mark.parametrize("with_card", [True, False])
def test_crafted_pickle_never_runs_in_migrate(tmp_path, sqlite_url, with_card):
    path, marker = _evil(tmp_path, with_card=with_card)
    r = run_cli(["probe", "migrate", str(path)], db=sqlite_url)
    assert r.returncode == 2, r.stderr
    assert not marker.exists(), "migrate ran the payload"
    assert "tfidf-lr-all-v1.joblib" in r.stderr
    assert ("posix.system" in r.stderr or "os.system" in r.stderr) if with_card else "no model card" in r.stderr
    assert not path.with_name("tfidf-lr-all-v1.probe.json").exists()


def test_altered_artifact_is_refused_naming_it(tmp_path, sqlite_url, sqlite_engine):
    d = tmp_path / "art" / "probes"
    path = _trained(d)
    probes.load_probe(path)  # intact: loads
    doc = json.loads(path.read_bytes())
    doc["head"]["intercept"] += 5.0  # a silent edit that flips verdicts
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="recorded at training") as ei:
        probes.load_probe(path)
    assert ei.value.file == str(path)
    fill_store(sqlite_engine, made_up(5, 1, prefix="tr"), made_up(5, 2, prefix="te"))
    r = run_cli(
        ["run", "--monitor", "probe:tfidf-lr", "--template", "direct"],
        db=sqlite_url,
        env={"AUTOMONITOR_ARTIFACTS": str(tmp_path / "art")},
    )
    assert r.returncode == 2 and path.name in r.stderr and "altered" in r.stderr, r.stderr


def test_foreign_artifact_without_card_is_refused(tmp_path):
    path = _trained(tmp_path)
    foreign = tmp_path / "elsewhere" / "mine.probe.json"
    foreign.parent.mkdir()
    shutil.copy(path, foreign)
    with pytest.raises(InputError, match="no model card") as ei:
        probes.load_probe(foreign)
    assert ei.value.file == str(foreign)


def test_saved_artifact_is_plain_json_and_round_trips_exactly(tmp_path):
    recs = made_up(20, 5)
    p = probes.train_probe("tfidf", [r.request for r in recs], [r.response for r in recs], [r.label for r in recs])
    path = probes.save_probe(p, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == "automonitor-probe-json" and [b["name"] for b in doc["features"]["blocks"]] == [
        "resp_word",
        "resp_char",
        "req_word",
    ]
    assert json.loads(probes.card_path(path).read_text())["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    test = made_up(10, 6)
    a = p.predict_proba([r.request for r in test], [r.response for r in test])
    b = probes.load_probe(path).predict_proba([r.request for r in test], [r.response for r in test])
    np.testing.assert_array_equal(a, b)


def test_legacy_artifact_of_todays_code_migrates_and_predicts_the_same(tmp_path, sqlite_url):
    d = tmp_path / "probes"
    shutil.copytree(FIXTURE, d)
    expected = json.loads((d / "expected.json").read_text())
    # before migrating, a monitor refuses it and says how to convert it
    with pytest.raises(InputError, match="probe migrate"):
        probes.resolve_artifact("tfidf-lr", d)
    r = run_cli(["probe", "migrate", "--dir", str(d), "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    (res,) = json.loads(r.stdout)
    assert res["status"] == "migrated" and res["artifact"].endswith("tfidf-lr-all-v1.probe.json")
    new = probes.resolve_artifact("tfidf-lr", d)
    assert new.name == "tfidf-lr-all-v1.probe.json"
    probe = probes.load_probe(new)
    got = probe.predict_proba(expected["requests"], expected["responses"])
    np.testing.assert_allclose(got, expected["p_misbehavior"], rtol=0, atol=1e-12)
    card = json.loads(probes.card_path(new).read_text())
    assert card["migrated_from"]["artifact"] == "tfidf-lr-all-v1.joblib" and card["n"] == 40
    # a second migrate is a no-op; a newly trained probe gets the next version number
    r = run_cli(["probe", "migrate", "--dir", str(d), "--json"], db=sqlite_url)
    assert r.returncode == 0 and json.loads(r.stdout)[0]["status"] == "already migrated"
    assert _trained(d).name == "tfidf-lr-all-v2.probe.json"


def test_altered_legacy_artifact_is_not_migrated(tmp_path, sqlite_url):
    d = tmp_path / "probes"
    shutil.copytree(FIXTURE, d)
    legacy = d / "tfidf-lr-all-v1.joblib"
    data = bytearray(legacy.read_bytes())
    data[-20] ^= 0x01
    legacy.write_bytes(bytes(data))
    r = run_cli(["probe", "migrate", "--dir", str(d)], db=sqlite_url)
    assert r.returncode == 2 and "tfidf-lr-all-v1.joblib" in r.stderr and "recorded at training" in r.stderr
    assert not (d / "tfidf-lr-all-v1.probe.json").exists()
