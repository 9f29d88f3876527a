"""Fault injection: a loopback OpenAI-compatible server answers 30% of calls with 429 (Retry-After), 500,
a timeout or a truncated JSON body. Every sample still ends with exactly one outcome, no call is
repeated after a success, Retry-After is honoured, rate limits shrink the concurrency (AIMD), and
failures after retries are ``error`` (never ``benign``)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.prompts import PromptBuilder, load_template
from servers.data import add_custom, add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run


def server_key(request: str, response: str, template: str = "direct") -> str:
    import hashlib

    b = PromptBuilder(load_template(template), request_budget=12000, response_budget=16000)
    return hashlib.sha256(b.user_text(request, response)[0].encode()).hexdigest()[:16]


TRANSPORTS = ("direct", "sdk")  # the lean default and the official SDK: the same faults, the same handling


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_thirty_percent_faults_every_sample_one_outcome_no_repeat_after_success(engine, transport):
    rows = add_pairs(engine, 30)  # 60 samples
    with OpenAIFaultServer(fault_rate=0.3, seed=7, timeout_sleep=1.2, retry_after=0.25) as srv:
        rid = runner.create_run(
            engine,
            "openai:test-model",
            "direct",
            base_url=srv.base_url,
            concurrency=8,
            params={
                "timeout": 0.6,
                "backoff_initial": 0.02,
                "backoff_max": 0.3,
                "max_attempts": 6,
                "transport": transport,
            },
        )
        out = runner.execute_run(engine, rid)
        st = srv.stats()
        log = list(srv.log)
    assert sum(out["counts"].values()) == out["n"] == 60
    # every fault kind happened, and the runner counted every request the server saw
    assert {"429", "500", "timeout", "truncated"} <= set(st["faults"])
    assert out["api_calls"] == st["total"] > 60
    with Session(engine) as s:
        ps = list(s.exec(select(Prediction).where(Prediction.run_id == rid)))
        run = s.get(Run, rid)
    assert len(ps) == 60 and len({p.sample_id for p in ps}) == 60
    assert all(p.outcome in ("misbehavior", "benign", "error") for p in ps)
    assert run.api_calls == st["total"] and run.status == "finished"
    # no call after a success: each sample got at most one complete answer, and exactly one if judged
    keys = {r["id"]: server_key(r["request"], r["response"]) for r in rows}
    for p in ps:
        k = keys[p.sample_id]
        if p.outcome == "error":
            assert st["successes"].get(k, 0) == 0 and p.meta["error_kind"] and p.reason
        else:
            assert st["successes"][k] == 1
            last_call = max(a for key, a, _act, _t in log if key == k)
            ok_call = [a for key, a, act, _t in log if key == k and act == "ok"]
            assert ok_call == [last_call]  # the success was the last call for that sample
            assert p.meta["attempts"] == st["calls"][k]
    kinds = Counter(kind for p in ps for kind in p.meta.get("retried_after", []))
    assert {"rate_limit", "server", "timeout", "malformed"} <= set(kinds)
    # Retry-After honoured: the next attempt after a 429 came at least retry_after later
    by_key = defaultdict(list)
    for key, attempt, action, t in log:
        by_key[key].append((attempt, action, t))
    gaps = []
    for calls in by_key.values():
        calls.sort()
        for (a1, act1, t1), (a2, _act2, t2) in zip(calls, calls[1:]):
            if act1 == "429":
                gaps.append(t2 - t1)
    assert gaps and min(gaps) >= 0.25 * 0.95


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rate_limits_shrink_concurrency_and_persistent_failures_are_errors(sqlite_engine, transport):
    engine = sqlite_engine
    items = [(f"[scenario:429,429,ok] q{i}", f"bad {i}", f"good {i}") for i in range(8)]
    items += [
        ("[scenario:500] always failing", "bad x", "good x"),
        ("[scenario:401] bad key", "bad y", "good y"),
        ("[scenario:refuse] judge declines", "bad z", "good z"),
        ("[scenario:garbage] judge rambles", "bad w", "good w"),
        ("[scenario:truncated,ok] once truncated", "bad v", "good v"),
    ]
    rows = add_custom(engine, items)
    with OpenAIFaultServer(retry_after=0.05) as srv:
        rid = runner.create_run(
            engine,
            "openai:test-model",
            "direct",
            base_url=srv.base_url,
            concurrency=8,
            params={
                "backoff_initial": 0.01,
                "backoff_max": 0.05,
                "max_attempts": 3,
                "timeout": 5,
                "transport": transport,
            },
        )
        out = runner.execute_run(engine, rid)
        st = srv.stats()
    with Session(engine) as s:
        ps = {p.sample_id: p for p in s.exec(select(Prediction).where(Prediction.run_id == rid))}
        run = s.get(Run, rid)
    by_req = defaultdict(list)
    for r in rows:
        by_req[r["request"].split("]")[0] + "]"].append(ps[r["id"]])
    assert all(p.outcome in ("misbehavior", "benign") for p in by_req["[scenario:429,429,ok]"])
    assert all(p.meta["retried_after"] == ["rate_limit", "rate_limit"] for p in by_req["[scenario:429,429,ok]"])
    for p in by_req["[scenario:500]"]:
        assert p.outcome == "error" and p.meta["attempts"] == 3 and "500" in p.reason
    for p in by_req["[scenario:401]"]:  # a run-wide failure (bad key): left pending, the run fails naming it
        assert p.outcome is None
    assert run.status == "failed" and "HTTP 401" in run.error and "OPENAI_API_KEY" in run.error
    for p in by_req["[scenario:refuse]"]:
        assert p.outcome == "refusal" and "can't" in p.raw and p.reason
    for p in by_req["[scenario:garbage]"]:
        assert p.outcome == "invalid" and p.raw == "The weather is nice today." and p.reason
    for p in by_req["[scenario:truncated,ok]"]:
        assert p.outcome in ("misbehavior", "benign") and p.meta["retried_after"] == ["malformed"]
    assert out["counts"]["benign"] + out["counts"]["misbehavior"] == 16 + 2
    assert out["api_calls"] == st["total"] == 16 * 3 + 2 * 3 + 2 * 1 + 2 + 2 + 2 * 2
    lim = run.params["last_execution"]["limiter"]
    assert lim["decreases"] >= 1 and lim["min_limit"] < 8
