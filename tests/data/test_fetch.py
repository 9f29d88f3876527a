"""``automonitor fetch-sources`` against a real local HTTP mirror of the raw layout, and the manifest."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from automonitor.data.fetch import DEFAULT_MANIFEST, load_manifest
from automonitor.data.sources import data_files

MAKE_MANIFEST = Path(__file__).resolve().parents[2] / "scripts" / "make_manifest.py"


def _origins() -> dict[str, dict[str, str]]:
    """``ORIGINS`` of ``scripts/make_manifest.py`` (the maintainer's tool that writes the manifest)."""
    spec = importlib.util.spec_from_file_location("make_manifest", MAKE_MANIFEST)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ORIGINS


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def serve():
    """``serve(directory) -> base URL``: a real HTTP server on a free loopback port, in a thread."""
    servers = []

    def start(directory: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_manifest_pins_every_file_the_build_reads(raw_dir):
    doc = load_manifest()
    files = {f["path"]: (s, f) for s in doc["sources"] for f in s["files"]}
    assert set(data_files()) <= set(files)
    origins = _origins()
    for path, (src, f) in files.items():
        folder = path.split("/", 1)[0]
        o = origins[folder]
        assert src["folder"] == folder and src["commit"] == o["commit"] and src["license"]
        assert src["repo"] == f"https://github.com/{o['repo']}"
        assert f["url"] == f"https://raw.githubusercontent.com/{o['repo']}/{o['commit']}/{f['upstream_path']}"
        assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
        assert f["sha256"] == _sha(raw_dir / path) and f["size"] == (raw_dir / path).stat().st_size, path
    # the documented folder -> upstream path mappings
    assert (
        files["school_of_reward_hacks/sneaky_dialogues.jsonl"][1]["upstream_path"] == "datasets/sneaky_dialogues.jsonl"
    )
    assert files["hh_rlhf/harmless-base/test.jsonl.gz"][1]["upstream_path"] == "harmless-base/test.jsonl.gz"


def test_fetch_from_mirror_verifies_skips_and_feeds_the_build(cli, serve, raw_dir, raw_loaded, tmp_path):
    from automonitor.data.build import load_all

    url = serve(raw_dir)
    dest = tmp_path / "raw"
    db = f"sqlite:///{tmp_path / 'store.db'}"
    res = cli(["fetch-sources", "--dest", str(dest), "--mirror", url, "--json"], db=db)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    manifest = load_manifest()
    paths = [f["path"] for s in manifest["sources"] for f in s["files"]]
    assert sorted(doc["downloaded"]) == sorted(paths) and doc["failed"] == [] and doc["skipped"] == []
    assert doc["bytes"] == sum(f["size"] for s in manifest["sources"] for f in s["files"])
    for p in paths:
        assert _sha(dest / p) == _sha(raw_dir / p)
    assert not list(dest.rglob("*.part"))
    # second run: everything already present with the right hash
    again = json.loads(cli(["fetch-sources", "--dest", str(dest), "--mirror", url, "--json"], db=db).stdout)
    assert again["downloaded"] == [] and sorted(again["skipped"]) == sorted(paths)
    # the fetched dir holds every file the build reads: same pairs as from the original raw dir
    got, ref = load_all(dest), raw_loaded  # the original raw dir as the worker read it once (load_all)
    assert {k: [p.pair_id for p in v.pairs] for k, v in got.items()} == {
        k: [p.pair_id for p in v.pairs] for k, v in ref.items()
    }
    assert all(not v.missing for v in got.values())


def test_corrupted_file_is_rejected_and_removed(cli, serve, raw_dir, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(raw_dir / "school_of_reward_hacks", mirror / "school_of_reward_hacks")
    bad = mirror / "school_of_reward_hacks/sneaky_dialogues.jsonl"
    data = bytearray(bad.read_bytes())
    data[100] ^= 0x01  # one flipped bit
    bad.write_bytes(bytes(data))
    url = serve(mirror)
    dest = tmp_path / "dest"
    db = f"sqlite:///{tmp_path / 'store.db'}"
    res = cli(
        ["fetch-sources", "--dest", str(dest), "--mirror", url, "--source", "school_of_reward_hacks", "--json"], db=db
    )
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert [f["path"] for f in doc["failed"]] == ["school_of_reward_hacks/sneaky_dialogues.jsonl"]
    assert "sha256 mismatch" in doc["failed"][0]["error"]
    assert "school_of_reward_hacks/sneaky_dialogues.jsonl" in res.stderr and "sha256 mismatch" in res.stderr
    assert not (dest / "school_of_reward_hacks/sneaky_dialogues.jsonl").exists()
    assert not list(dest.rglob("*.part"))
    assert doc["downloaded"] == ["school_of_reward_hacks/straightforward_dialogues.jsonl"]
    # a present file with a wrong hash is downloaded again and replaced
    good = dest / "school_of_reward_hacks/straightforward_dialogues.jsonl"
    good.write_text("tampered\n")
    shutil.copy(raw_dir / "school_of_reward_hacks/sneaky_dialogues.jsonl", bad)  # mirror fixed
    res = cli(
        ["fetch-sources", "--dest", str(dest), "--mirror", url, "--source", "school_of_reward_hacks", "--json"], db=db
    )
    assert res.returncode == 0, res.stderr
    assert sorted(json.loads(res.stdout)["downloaded"]) == [
        "school_of_reward_hacks/sneaky_dialogues.jsonl",
        "school_of_reward_hacks/straightforward_dialogues.jsonl",
    ]
    assert _sha(good) == _sha(raw_dir / "school_of_reward_hacks/straightforward_dialogues.jsonl")


def test_missing_file_on_mirror_and_bad_options(cli, serve, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    url = serve(empty)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    dest = tmp_path / "dest"
    res = cli(["fetch-sources", "--dest", str(dest), "--mirror", url, "--source", "hh_rlhf"], db=db)
    assert res.returncode == 1 and "404" in res.stderr and "hh_rlhf/harmless-base/test.jsonl.gz" in res.stderr
    assert not list(dest.rglob("*.gz*"))
    res = cli(["fetch-sources", "--dest", str(dest), "--source", "nope"], db=db)
    assert res.returncode == 2 and "nope" in res.stderr
    res = cli(["fetch-sources", "--dest", str(dest), "--manifest", str(tmp_path / "none.json")], db=db)
    assert res.returncode == 2 and "manifest not found" in res.stderr
    assert DEFAULT_MANIFEST.is_file()
