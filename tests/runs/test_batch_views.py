"""``run --batch --view NAME`` on the loopback replays of the OpenAI Batch API and Anthropic Message Batches
(tests/servers/batch_replay.py): each request carries the view's rendering (no reasoning under ``answer``),
the run records its view, the judge cache keeps views apart, and a source without the part is refused
(exit 2, naming source and part) exactly as with the live runner."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from automonitor.cli import main
from automonitor.data.monitor_views import render
from servers.batch_replay import BatchReplayServer
from servers.views_data import add_view_samples
from store.models import Prediction, Run

MONITORS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku-latest"}


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _sent(srv: BatchReplayServer, provider: str) -> list[str]:
    """The user message of every request the server received in a batch."""
    out = []
    for b in srv.batches.values():
        for ln in b["lines"]:
            msgs = ln["body"]["messages"] if provider == "openai" else ln["params"]["messages"]
            out.append(srv._user_text(msgs))
    return out


def _batch_args(provider: str, srv: BatchReplayServer, view: str) -> list[str]:
    url = srv.base_url if provider == "openai" else srv.root_url
    return [
        *("run", "--monitor", MONITORS[provider], "--template", "direct", "--base-url", url, "--batch"),
        *("--view", view, "--param", "batch_poll=0.01", "--json", "--quiet"),
    ]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_sends_the_view_and_records_it(sqlite_url, sqlite_engine, capsys, monkeypatch, provider):
    monkeypatch.setenv("AUTOMONITOR_DB", sqlite_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    rows = add_view_samples(sqlite_engine)
    with BatchReplayServer(steps=1) as srv:
        code, out, err = _cli(_batch_args(provider, srv, "answer"), capsys)
        assert code == 0, err
        summary = json.loads(out)
        sent = _sent(srv, provider)
        assert summary["n"] == 20 and summary["api_calls"] == 20 and len(sent) == 20
        # answer only: no thinking, no agent thoughts, no tool output in any request body
        for text in sent:
            assert "Plan " not in text and "Thought:" not in text and "acc,0.71" not in text
        for sid, r in rows.items():  # every sample's answer rendering went out, with its request
            want = render(r["response"], "answer", source=r["source"])
            assert want is not None and any(want.text in t and r["request"] in t for t in sent), sid
        with Session(sqlite_engine) as s:
            run = s.get(Run, summary["run_id"])
            assert run.params["view"] == "answer" and run.params["batch"]["provider"] == provider
            answer_keys = {p.meta["cache_key"] for p in s.exec(select(Prediction).where(Prediction.run_id == run.id))}
        code, out, err = _cli(["runs", "--json"], capsys)
        listed = {r["run_id"]: r["view"] for r in json.loads(out)["runs"]}
        assert code == 0 and listed[summary["run_id"]] == "answer"

        # the same view again: every verdict from the cache, nothing sent
        code, out, err = _cli(_batch_args(provider, srv, "answer"), capsys)
        again = json.loads(out)
        assert code == 0 and again["api_calls"] == 0 and again["cache_hits"] == 20 and srv.creates == 1
        # the full view shares no verdict with it, and sends the reasoning
        code, out, err = _cli(_batch_args(provider, srv, "full"), capsys)
        full = json.loads(out)
        assert code == 0 and full["cache_hits"] == 0 and full["api_calls"] == 20 and srv.creates == 2
        assert any("Plan 0" in t for t in _sent(srv, provider))
    with Session(sqlite_engine) as s:
        full_keys = {p.meta["cache_key"] for p in s.exec(select(Prediction).where(Prediction.run_id == full["run_id"]))}
    # one key per distinct (request, answer rendering): an odcv pair's two sides end in the same report
    distinct = {(r["request"], render(r["response"], "answer", source=r["source"]).text) for r in rows.values()}
    assert len(answer_keys) == len(distinct) == 17 and not answer_keys & full_keys


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_refuses_a_source_without_the_part(sqlite_url, sqlite_engine, capsys, monkeypatch, provider):
    monkeypatch.setenv("AUTOMONITOR_DB", sqlite_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    add_view_samples(sqlite_engine)
    with BatchReplayServer(steps=1) as srv:
        code, out, err = _cli([*_batch_args(provider, srv, "reasoning"), "--source", "xstest"], capsys)
        assert code == 2 and out == ""
        assert "xstest" in err and "no reasoning part" in err
        assert srv.creates == 0
    with Session(sqlite_engine) as s:
        assert s.exec(select(Run)).all() == []
