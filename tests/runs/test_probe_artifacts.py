"""Probe artefacts cannot run code: a crafted pickle is never executed (no code path unpickles an
artefact: a monitor refuses a legacy ``.joblib``, and ``probe migrate`` is gone), and an altered or foreign
artefact is refused with exit 2 naming it."""

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
    for spec, says in ((f"probe:{path}", "legacy joblib"), ("probe:tfidf-lr", "no trained tfidf-lr artefact")):
        r = run_cli(
            ["run", "--monitor", spec, "--template", "direct"],
            db=sqlite_url,
            env={"AUTOMONITOR_ARTIFACTS": str(tmp_path / "art")},
        )
        assert r.returncode == 2 and says in r.stderr, (spec, r.stdout, r.stderr)
        assert not marker.exists(), f"the payload ran via {spec}"
    with pytest.raises(InputError, match="legacy joblib"):
        probes.load_probe(path)
    assert not marker.exists()


@pytest.mark.parametrize("with_card", [True, False])
def test_probe_migrate_is_gone_and_never_unpickles(tmp_path, sqlite_url, with_card):
    """The pickle migration was removed (0.3): ``probe migrate`` is an unknown command (exit 2) and the
    payload never runs."""
    path, marker = _evil(tmp_path, with_card=with_card)
    r = run_cli(["probe", "migrate", str(path)], db=sqlite_url)
    assert r.returncode == 2 and "No such command" in r.stderr, r.stderr
    assert not marker.exists(), "migrate ran the payload"
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
