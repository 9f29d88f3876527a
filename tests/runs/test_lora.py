"""The LoRA path end to end on the packaged Gemma 3 270M (slow: de-quantising the GGUF the first time takes
minutes; the converted model is cached in ~/.cache/automonitor/hf or $AUTOMONITOR_CACHE_DIR/hf)."""

from __future__ import annotations

import json

import pytest

from test_probes import fill_store, made_up


@pytest.mark.slow
def test_lora_trains_saves_adapter_and_scores_through_runner(sqlite_engine, tmp_path):
    from automonitor.runs.probe import lora
    from automonitor.runs import runner
    from store import session_scope
    from sqlmodel import select

    from store.models import Prediction

    recs = made_up(4, 31)
    res = lora.train_lora(
        recs,
        base="gemma3-270m",
        out=tmp_path / "adapter",
        steps=2,
        batch_size=2,
        max_length=256,
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
