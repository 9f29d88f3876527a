"""Prices by exact model id: no prefix guessing (``claude-opus-4-5`` is not ``claude-opus-4``,
``gpt-5-pro`` not ``gpt-5``), dated snapshots only where mapped, an unknown price reported as unknown (never
a confident number), and ``--param price_in=... --param price_out=...`` to set one; a real run against the
OpenAI-compatible loopback server records it."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.errors import InputError
from automonitor.runs.monitors import create_backend, pricing
from automonitor.runs.prompts import PromptBuilder, load_template
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10}


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-5",
        "claude-opus-4-5-20251101",
        "gpt-5-pro",
        "gpt-5-codex",
        "gpt-4o-mini-audio-preview",
        "gpt-4o-2024-05-13",  # an older gpt-4o snapshot with another price: not mapped, so unknown
        "gemini-2.5-flash-image",
        "o4-mini-deep-research",
        "claude-sonnet-4-5",
        "my-local-model",
    ],
)
def test_ids_that_only_share_a_prefix_are_unknown(model):
    pr = pricing.lookup(model)
    assert not pr.known and (pr.input, pr.output) == (0.0, 0.0) and pr.source == "unknown"


@pytest.mark.parametrize(
    "model,price,entry",
    [
        ("gpt-5", (1.25, 10.0), "gpt-5"),
        ("gpt-5-2025-08-07", (1.25, 10.0), "gpt-5"),
        ("openai/gpt-4o-mini", (0.15, 0.60), "gpt-4o-mini"),
        ("GPT-4o-mini-2024-07-18", (0.15, 0.60), "gpt-4o-mini"),
        ("claude-opus-4-20250514", (15.0, 75.0), "claude-opus-4-20250514"),
        ("claude-3-5-haiku-latest", (0.80, 4.0), "claude-3-5-haiku-20241022"),
        ("deepseek-reasoner", (0.55, 2.19), "deepseek-reasoner"),
    ],
)
def test_exact_ids_and_mapped_snapshots_are_priced(model, price, entry):
    pr = pricing.lookup(model)
    assert pr.known and (pr.input, pr.output) == price and pr.model_id == entry


def test_price_file_states_source_and_date_and_every_snapshot_resolves():
    t = pricing.price_table()
    assert "pricing" in t["source"] and t["date"] and t["unit"] == "per 1M tokens"
    assert all(v in t["models"] for v in t["snapshots"].values())


def test_estimate_says_unknown_and_price_params_set_it(sqlite_engine):
    add_pairs(sqlite_engine, 3)
    e = runner.estimate_run(sqlite_engine, "openai:gpt-5-pro", "direct")
    assert e["price_known"] is False and e["est_cost_usd"] is None
    e = runner.estimate_run(sqlite_engine, "openai:gpt-5-pro", "direct", params={"price_in": 15, "price_out": 120})
    assert e["price_known"] is True and e["price_source"] == "param"
    assert e["est_cost_usd"] == pytest.approx((e["prompt_tokens"] * 15 + e["max_output_tokens"] * 120) / 1e6, rel=1e-6)
    with pytest.raises(InputError, match="both --param price_in"):
        runner.estimate_run(sqlite_engine, "openai:gpt-5-pro", "direct", params={"price_in": 15})
    with pytest.raises(InputError, match="price_out"):
        runner.estimate_run(sqlite_engine, "openai:gpt-5-pro", "direct", params={"price_in": 1, "price_out": -1})


def test_backend_price_param_is_typed():
    prompt = PromptBuilder(load_template("direct"))
    b = create_backend(
        "openai:gpt-5-pro",
        base_url="http://127.0.0.1:9/v1",
        params={"price_in": "2.5", "price_out": "20"},
        prompt=prompt,
    )
    pr = b.price_info()
    assert (pr.input, pr.output) == (2.5, 20.0) and pr.source == "param"
    with pytest.raises(InputError, match="price_in"):
        create_backend(
            "openai:gpt-5-pro", base_url="http://127.0.0.1:9/v1", params={"price_in": "cheap"}, prompt=prompt
        )


def test_run_with_unknown_price_shows_unknown_and_price_params_cost_it(sqlite_engine, sqlite_url):
    add_pairs(sqlite_engine, 2)
    with OpenAIFaultServer() as srv:
        unknown = runner.create_run(sqlite_engine, "openai:gpt-5-pro", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(sqlite_engine, unknown)
        priced = runner.create_run(
            sqlite_engine,
            "openai:gpt-5-pro",
            "direct",
            base_url=srv.base_url,
            params={**FAST, "price_in": 10.0, "price_out": 100.0, "max_tokens": 5},
        )
        runner.execute_run(sqlite_engine, priced)
    with Session(sqlite_engine) as s:
        preds = s.exec(select(Prediction).where(Prediction.run_id == priced)).all()
        assert preds and all(p.tokens_in > 0 for p in preds)
        for p in preds:
            assert p.cost_usd == pytest.approx((p.tokens_in * 10.0 + p.tokens_out * 100.0) / 1e6)
    r = run_cli(["runs", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {x["run_id"]: x for x in (doc["runs"] if isinstance(doc, dict) else doc)}
    assert rows[unknown]["price_known"] is False and rows[priced]["price_known"] is True
    assert rows[priced]["cost_usd"] > 0
    table = run_cli(["runs"], db=sqlite_url).stdout
    line = next(ln for ln in table.splitlines() if unknown in ln)
    assert "unknown" in line
