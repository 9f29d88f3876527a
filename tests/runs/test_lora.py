"""The LoRA path end to end on the packaged Gemma 3 270M (slow: de-quantising the GGUF the first time takes
minutes; the converted model is cached in ~/.cache/automonitor/hf or $AUTOMONITOR_CACHE_DIR/hf).

The suite's cache home is new for every run (``tests/conftest.py``), so the conversion is kept once per
machine as well (:func:`converted_base`): keyed by the GGUF's SHA-256, the converter's source and the
transformers/gguf/torch versions, made by :func:`automonitor.runs.probe.lora._convert_gguf` itself the first
time and linked into the run's cache home after that."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from importlib.metadata import version
from pathlib import Path

import pytest

from test_probes import fill_store, made_up


def _conversion_key(gguf: Path) -> str:
    """Hex digest naming one conversion: the GGUF's bytes, the converter's source and the versions of the
    packages that de-quantise and save it (a change to any of them converts again)."""
    from automonitor.runs.probe import lora

    h = hashlib.sha256()
    with gguf.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    h.update(inspect.getsource(lora._convert_gguf).encode())
    for dist in ("transformers", "gguf", "torch", "safetensors"):
        h.update(f"{dist}={version(dist)};".encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def converted_base() -> Path:
    """The packaged GGUF de-quantised into a HF folder once per machine (``$XDG_CACHE_HOME`` or
    ``~/.cache``, ``automonitor-tests/hf/<stem>-<key>``) by the project's own converter, and linked to where
    :func:`automonitor.runs.probe.lora.load_base` looks for it in this run's cache home."""
    from automonitor.runs.probe import lora

    folder, gguf = lora.resolve_base("gemma3-270m")
    assert gguf is not None
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    kept = home / "automonitor-tests" / "hf" / f"{Path(gguf).stem}-{_conversion_key(folder / gguf)[:16]}"
    if not (kept / "config.json").is_file():
        lora._convert_gguf(folder, gguf, kept)
    target = lora.hf_cache_dir(gguf)
    if not (target / "config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.symlink_to(kept, target_is_directory=True)
        except FileExistsError:  # another worker linked it first
            pass
    assert (target / "config.json").is_file()
    return kept


@pytest.mark.slow
def test_lora_trains_saves_adapter_and_scores_through_runner(sqlite_engine, tmp_path, converted_base):
    from automonitor.runs.probe import lora
    from automonitor.runs import runner
    from store import session_scope
    from sqlmodel import select

    from store.models import Prediction

    recs = made_up(4, 31)
    res = lora.train_lora(
        recs,
        lora.LoraHyperparameters(steps=2, batch_size=2, max_length=256),
        base="gemma3-270m",
        out=tmp_path / "adapter",
        slices=["specification_gaming/code"],
    )
    ad = tmp_path / "adapter"
    assert (ad / "adapter_config.json").is_file() and (ad / "adapter_model.safetensors").is_file()
    card = json.loads((ad / "automonitor_lora.json").read_text())
    assert card["records"] == 8 and card["hyperparameters"]["steps"] == 2
    assert card["train_loss"] is not None and card["train_loss"] > 0
    assert res["adapter"] == str(ad)
    adapter_cfg = json.loads((ad / "adapter_config.json").read_text())
    assert adapter_cfg["r"] == 8 and set(adapter_cfg["target_modules"]) == {"q_proj", "v_proj"}

    fill_store(sqlite_engine, [], made_up(2, 32, prefix="te"))
    run_id = runner.create_run(sqlite_engine, f"lora:{ad}", "direct")
    summ = runner.execute_run(sqlite_engine, run_id)
    assert summ["counts"]["misbehavior"] + summ["counts"]["benign"] == 4
    with session_scope(sqlite_engine) as s:
        preds = s.exec(select(Prediction).where(Prediction.run_id == run_id)).all()
        assert all(p.score is not None and 0.0 <= p.score <= 1.0 for p in preds)
        assert all("logit_yes" in p.meta for p in preds)
        assert len({round(p.score, 6) for p in preds}) > 1  # scores depend on the sample


def test_lora_monitor_rejects_a_folder_that_is_not_an_adapter(sqlite_engine, tmp_path):
    from automonitor.runs import runner
    from automonitor.errors import InputError

    fill_store(sqlite_engine, [], made_up(1, 33, prefix="te"))
    with pytest.raises(InputError, match="not a LoRA adapter folder"):
        runner.create_run(sqlite_engine, f"lora:{tmp_path}", "direct")


def test_the_converted_base_lives_in_the_one_cache_home(monkeypatch, tmp_path):
    """The de-quantised GGUF base goes where every other on-disk cache goes (``$AUTOMONITOR_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/automonitor``), not under a variable of its own."""
    from automonitor.runs.probe import lora

    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path / "c"))
    assert lora.hf_cache_dir("gemma-3-270m-q4_k_m.gguf") == tmp_path / "c" / "hf" / "gemma-3-270m-q4_k_m"
    monkeypatch.delenv("AUTOMONITOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert lora.hf_cache_dir("m.gguf") == tmp_path / "x" / "automonitor" / "hf" / "m"
