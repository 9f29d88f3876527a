"""The runner on real SQLite and PostgreSQL stores: pending predictions, one outcome per sample, the
content-addressed cache (zero API calls on rerun), validation without side effects, few-shot examples
from the train split only, cancel/resume, leases, estimates, detached launch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.cache import sample_hash
from automonitor.runs.runner.limiter import AIMDLimiter
from automonitor.errors import InputError, NotFound
from automonitor.runs.monitors.rules import judge_rules
from automonitor.runs.prompts import load_template
from automonitor.vocab import OUTCOMES
from store import session_scope
from store.models import Prediction, Run, Sample
from servers.data import add_custom, add_pairs
from servers.openai_fault import OpenAIFaultServer

FAST = {"backoff_initial": 0.02, "backoff_max": 0.2, "timeout": 5}

#: the keys of `automonitor run --json`, in order (CONTRACT's, then the ones added)
RUN_JSON_KEYS = [
    "run_id",
    "n",
    "counts",
    "api_calls",
    "cache_hits",
    "api_calls_this_process",
    "cache_hits_this_process",
]


def preds(engine, run_id):
    with Session(engine) as s:
        return list(s.exec(select(Prediction).where(Prediction.run_id == run_id).order_by(Prediction.id)))


def n_runs(engine):
    with engine.connect() as c:
        return c.execute(sa.text("select count(*) from run")).scalar(), c.execute(
            sa.text("select count(*) from prediction")
        ).scalar()


def test_rules_run_end_to_end(engine):
    rows = add_pairs(engine, 9)
    rid = runner.create_run(engine, "rules", "evidence")
    pending = preds(engine, rid)
    assert len(pending) == 18 and all(p.outcome is None for p in pending)
    with Session(engine) as s:
        run = s.get(Run, rid)
        assert (run.status, run.n, run.monitor, run.template) == ("pending", 18, "rules:rules-v1", "evidence")
        assert run.template_hash == load_template("evidence").sha256
    seen = []
    out = runner.execute_run(engine, rid, progress=lambda d, t: seen.append((d, t)))
    assert set(out) == set(RUN_JSON_KEYS)
    assert set(out["counts"]) == set(OUTCOMES)
    assert sum(out["counts"].values()) == out["n"] == 18
    assert seen[-1] == (18, 18)
    by_id = {r["id"]: r for r in rows}
    for p in preds(engine, rid):
        expect = judge_rules(by_id[p.sample_id]["request"], by_id[p.sample_id]["response"])
        assert p.outcome == expect.outcome and p.score == pytest.approx(expect.score)
        assert p.judged_at is not None and p.meta["cache_key"]
    info = runner.run_info(engine, rid)
    assert info["status"] == "finished" and info["counts"]["pending"] == 0 and info["duration_s"] is not None


def test_rerun_makes_zero_api_calls_and_errors_are_not_cached(engine):
    add_pairs(engine, 4)
    add_custom(engine, [("[scenario:500] q", "bad", "good")])
    with OpenAIFaultServer() as srv:
        params = {**FAST, "max_attempts": 2}
        r1 = runner.create_run(engine, "openai:test-model", "direct", base_url=srv.base_url, params=params)
        s1 = runner.execute_run(engine, r1)
        calls_first = srv.stats()["total"]
        assert s1["api_calls"] == calls_first == 8 + 2 * 2  # the two scenario samples fail twice each
        assert s1["counts"]["error"] == 2 and s1["cache_hits"] == 0
        # a new run of the same configuration: every verdict comes from the cache, errors are retried
        r2 = runner.create_run(engine, "openai:test-model", "direct", base_url=srv.base_url, params=params)
        s2 = runner.execute_run(engine, r2)
        assert s2["cache_hits"] == 8 and s2["api_calls"] == 4 == srv.stats()["total"] - calls_first
        first = {p.sample_id: (p.outcome, p.score) for p in preds(engine, r1)}
        second = {p.sample_id: (p.outcome, p.score) for p in preds(engine, r2)}
        assert first == second
        assert sum(p.cached for p in preds(engine, r2)) == 8
        # resuming a finished run does nothing at all
        before = srv.stats()["total"]
        s3 = runner.execute_run(engine, r2)
        assert (s3["api_calls_this_process"], s3["cache_hits_this_process"], srv.stats()["total"]) == (0, 0, before)
        assert (s3["api_calls"], s3["cache_hits"]) == (s2["api_calls"], s2["cache_hits"])  # the run's, unchanged
    with engine.connect() as c:
        outcomes = [r[0] for r in c.execute(sa.text("select outcome from cache_entry"))]
    assert len(outcomes) == 8 and "error" not in outcomes


def test_cache_key_covers_model_template_url_and_params():
    base = dict(backend="openai", model="m", base_url="http://h/v1", template_hash="t", sample_h="s", params={"a": 1})
    k = runner.cache_key(**base)
    assert runner.cache_key(**{**base, "base_url": "http://h/v1/"}) == k
    for change in (
        {"model": "m2"},
        {"base_url": "http://x/v1"},
        {"template_hash": "t2"},
        {"sample_h": "s2"},
        {"params": {"a": 2}},
        {"backend": "anthropic"},
    ):
        assert runner.cache_key(**{**base, **change}) != k
    assert sample_hash("q ", "r") == sample_hash("q", " r") != sample_hash("q", "r2")


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(monitor="nope", template="direct"), "monitor"),
        (dict(monitor="rules", template="fancy"), "template"),
        (dict(monitor="rules", template="direct", limit=0), "limit"),
        (dict(monitor="rules", template="direct", concurrency=0), "concurrency"),
        (dict(monitor="openai:gpt-4o-mini", template="direct", base_url="https://api.example.com/v1"), "monitor"),
        (dict(monitor="llamacpp:/no/such/model.gguf", template="direct"), "monitor"),
        (dict(monitor="rules", template="direct", base_url="http://127.0.0.1:1/v1"), "base-url"),
        (dict(monitor="openai", template="direct", params={"api_key": "sk-x"}), "param"),
    ],
)
def test_bad_input_raises_and_writes_nothing(engine, monkeypatch, kwargs, field):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 3, train_pairs=0)
    before = n_runs(engine)
    with pytest.raises(InputError) as e:
        runner.create_run(engine, **kwargs)
    assert e.value.field == field
    assert n_runs(engine) == before


def test_empty_store_and_missing_train_split(engine):
    with pytest.raises(InputError, match="no test samples"):
        runner.create_run(engine, "rules", "direct")
    add_pairs(engine, 3, train_pairs=0)
    with pytest.raises(InputError, match="train split"):
        runner.create_run(engine, "rules", "direct-fewshot")
    assert n_runs(engine) == (0, 0)


def test_fewshot_examples_come_only_from_train_balanced_and_deterministic(engine):
    add_pairs(engine, 6, train_pairs=8)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:m", "evidence-fewshot", base_url=srv.base_url, params=FAST, limit=2)
        again = runner.create_run(engine, "openai:m", "evidence-fewshot", base_url=srv.base_url, params=FAST, limit=2)
        runner.execute_run(engine, rid)
        system = srv.requests[0]["messages"][0]["content"]
    with Session(engine) as s:
        ex_ids = s.get(Run, rid).params["fewshot"]
        assert ex_ids == s.get(Run, again).params["fewshot"]
        ex = [s.get(Sample, i) for i in ex_ids]
        test_texts = [r.response for r in s.exec(select(Sample).where(Sample.split == "test"))]
    assert len(ex) == 4 and {e.split for e in ex} == {"train"}
    assert sorted(e.label for e in ex) == ["benign", "benign", "misbehavior", "misbehavior"]
    for e in ex:
        assert e.response in system
    assert not any(t in system for t in test_texts)


def test_limit_takes_a_stratified_subset(engine):
    add_pairs(engine, 18)
    rid = runner.create_run(engine, "rules", "direct", limit=18, sample_seed=4)
    with Session(engine) as s:
        run = s.get(Run, rid)
        assert run.n == 18 and run.params["sample_seed"] == 4
        assert len(run.params["strata"]) == 18  # all 3 x 3 x 2 cells
    again = runner.create_run(engine, "rules", "direct", limit=18, sample_seed=4)
    assert {p.sample_id for p in preds(engine, rid)} == {p.sample_id for p in preds(engine, again)}


def test_cancel_then_resume_judges_each_sample_once(sqlite_engine):
    engine = sqlite_engine
    add_pairs(engine, 10)
    with OpenAIFaultServer(latency=0.15) as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=2, params=FAST)
        t = threading.Thread(target=lambda: runner.execute_run(engine, rid))
        t.start()
        deadline = time.time() + 20
        while time.time() < deadline and sum(p.outcome is not None for p in preds(engine, rid)) < 4:
            time.sleep(0.05)
        runner.cancel_run(engine, rid)
        t.join(30)
        assert not t.is_alive()
        ps = preds(engine, rid)
        judged = {p.sample_id for p in ps if p.outcome is not None}
        assert 4 <= len(judged) < 20
        assert runner.run_info(engine, rid)["status"] == "cancelled"
        out = runner.execute_run(engine, rid)
        assert sum(out["counts"].values()) == 20 and out["api_calls_this_process"] == 20 - len(judged)
        assert out["api_calls"] == srv.stats()["total"] == 20  # the whole run's, as its counts are
        assert runner.run_info(engine, rid)["status"] == "finished"
        assert max(srv.stats()["successes"].values()) == 1 and srv.stats()["total"] == 20


def test_should_cancel_callback_stops_and_leaves_pending(sqlite_engine):
    add_pairs(sqlite_engine, 5)
    rid = runner.create_run(sqlite_engine, "rules", "direct", concurrency=1)
    done = []
    runner.execute_run(
        sqlite_engine, rid, progress=lambda d, t: done.append(d), should_cancel=lambda: bool(done) and done[-1] >= 3
    )
    info = runner.run_info(sqlite_engine, rid)
    assert info["status"] == "cancelled" and info["counts"]["pending"] == 7
    with Session(sqlite_engine) as s:
        first = s.get(Run, rid).api_calls
    out = runner.execute_run(sqlite_engine, rid)
    assert out["api_calls_this_process"] == 7 and out["api_calls"] == first + 7 >= 10  # the resume's, the run's


def test_live_lease_blocks_a_second_executor_and_dead_lease_is_taken_over(sqlite_engine):
    add_pairs(sqlite_engine, 2)
    rid = runner.create_run(sqlite_engine, "rules", "direct")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with session_scope(sqlite_engine) as s:
            run = s.get(Run, rid)
            run.params = {
                **run.params,
                "lease": {"pid": sleeper.pid, "host": os.uname().nodename, "heartbeat": time.time()},
            }
        with pytest.raises(InputError, match="being executed"):
            runner.execute_run(sqlite_engine, rid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sum(runner.execute_run(sqlite_engine, rid)["counts"].values()) == 4


def test_changed_template_refuses_resume_and_unknown_run(sqlite_engine):
    add_pairs(sqlite_engine, 2)
    rid = runner.create_run(sqlite_engine, "rules", "direct")
    with session_scope(sqlite_engine) as s:
        s.get(Run, rid).template_hash = "0" * 64
    with pytest.raises(InputError, match="changed"):
        runner.execute_run(sqlite_engine, rid)
    # the batch path refuses it with the same message (one check serves both executors)
    from automonitor.runs import batch

    bid = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct", base_url="http://127.0.0.1:9/v1")
    batch.enable(sqlite_engine, bid)
    with session_scope(sqlite_engine) as s:
        s.get(Run, bid).template_hash = "0" * 64
    with pytest.raises(InputError, match=r"changed since run .* \(hash [0-9a-f]{12} != 0{12}\); start a new run"):
        runner.execute_run(sqlite_engine, bid)
    with pytest.raises(NotFound):
        runner.execute_run(sqlite_engine, "run_nope")
    with pytest.raises(NotFound):
        runner.cancel_run(sqlite_engine, "run_nope")


def test_estimate_run(sqlite_engine):
    add_pairs(sqlite_engine, 9)
    e = runner.estimate_run(sqlite_engine, "openai:gpt-4o-mini", "evidence", limit=10)
    assert e["n"] == 10 and e["prompt_tokens"] > 10 * 200 and e["max_output_tokens"] == 10 * 600
    assert e["est_cost_usd"] == pytest.approx(
        (e["prompt_tokens"] * 0.15 + e["max_output_tokens"] * 0.60) / 1e6, rel=1e-3
    )
    assert runner.estimate_run(sqlite_engine, "llamacpp", "direct")["est_cost_usd"] == 0.0
    assert runner.estimate_run(sqlite_engine, "rules", "direct")["prompt_tokens"] == 0
    unknown = runner.estimate_run(sqlite_engine, "openai:my-local-model", "direct")
    assert unknown["est_cost_usd"] is None and unknown["price_known"] is False
    assert n_runs(sqlite_engine) == (0, 0)


def test_estimate_counts_the_fewshot_examples_the_run_shows(sqlite_engine):
    """The estimate's few-shot examples are the run's: ``fewshot_k`` changes the prompt tokens as it changes the
    examples create_run stores (4 by default, as the params leave it out)."""
    add_pairs(sqlite_engine, 4, train_pairs=8)
    tokens = {}
    for k in (None, 2, 4, 8):
        params = None if k is None else {"fewshot_k": k}
        e = runner.estimate_run(sqlite_engine, "openai:gpt-4o-mini", "direct-fewshot", params=params)
        tokens[k] = e["prompt_tokens"]
    assert tokens[None] == tokens[4]
    assert tokens[2] < tokens[4] < tokens[8]
    assert runner.estimate_run(sqlite_engine, "openai:gpt-4o-mini", "direct")["prompt_tokens"] < tokens[2]


def test_launch_detached_finishes_the_run(sqlite_url, sqlite_engine):

    engine = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    add_pairs(engine, 3)
    rid = runner.create_run(engine, "rules", "direct")
    pid = runner.launch_detached(sqlite_url, rid)
    assert os.getsid(pid) == pid  # its own session: survives the caller
    deadline = time.time() + 60
    while time.time() < deadline and runner.run_info(engine, rid)["status"] != "finished":
        time.sleep(0.2)
    assert runner.run_info(engine, rid)["status"] == "finished"
    os.waitpid(pid, 0)
    with Session(engine) as s:
        log = s.get(Run, rid).params["detached"]["log"]
    assert json.loads(_last_json(log))["n"] == 6


def _last_json(path: str) -> str:
    text = open(path).read()
    return text[text.index("{") : text.rindex("}") + 1]


def test_aimd_limiter_halves_and_recovers():
    import asyncio

    lim = AIMDLimiter(8, cooldown=0.0)
    lim.on_rate_limit()
    assert lim.limit == 4
    lim.on_rate_limit()
    lim.on_rate_limit()
    lim.on_rate_limit()
    assert lim.limit == 1  # floor
    for _ in range(200):
        lim.on_success()
    assert lim.limit == 8

    async def main():
        lim2 = AIMDLimiter(3)
        peak = 0

        async def task():
            nonlocal peak
            async with lim2:
                peak = max(peak, lim2.in_flight)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(task() for _ in range(20)))
        return peak, lim2.in_flight

    assert asyncio.run(main()) == (3, 0)


# ------------------------------------------------------------------------------------------- CLI


def test_cli_run_runs_and_bad_input(cli, sqlite_url, sqlite_engine):
    db_url = sqlite_url

    engine = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    add_pairs(engine, 3)
    engine.dispose()
    r = cli(["run", "--monitor", "rules", "--template", "direct", "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out) == RUN_JSON_KEYS
    assert list(out["counts"]) == ["misbehavior", "benign", "invalid", "refusal", "error"]
    assert out["n"] == 6 and sum(out["counts"].values()) == 6
    r2 = cli(["run", "--monitor", "rules", "--template", "direct", "--json"], db=db_url)
    assert json.loads(r2.stdout)["cache_hits"] == 6 and json.loads(r2.stdout)["api_calls"] == 0
    r3 = cli(["run", "--resume", out["run_id"], "--json"], db=db_url)
    assert r3.returncode == 0 and json.loads(r3.stdout)["counts"] == out["counts"]
    resumed = json.loads(r3.stdout)  # nothing pending: the run's calls and hits, none of this process
    assert (resumed["api_calls"], resumed["cache_hits"]) == (out["api_calls"], out["cache_hits"])
    assert (resumed["api_calls_this_process"], resumed["cache_hits_this_process"]) == (0, 0)
    listing = json.loads(cli(["runs", "--json"], db=db_url).stdout)["runs"]
    assert len(listing) == 2
    assert {
        k for k in ("run_id", "monitor", "template", "status", "n", "counts", "tokens_in", "cost_usd", "duration_s")
    } <= set(listing[0])
    assert {r["status"] for r in listing} == {"finished"}
    assert {r["run_id"]: r["api_calls"] for r in listing}[out["run_id"]] == resumed["api_calls"]  # one scope
    human = cli(["runs"], db=db_url)
    assert human.returncode == 0 and out["run_id"] in human.stdout
    for args, needle in (
        (["run", "--monitor", "bogus", "--template", "direct"], "monitor"),
        (["run", "--monitor", "rules", "--template", "direct", "--limit", "0"], "limit"),
        (["run", "--monitor", "rules"], "template"),
        (["run", "--monitor", "rules", "--template", "direct", "--param", "oops"], "param"),
        (["run", "--resume", "run_missing"], "run_missing"),
    ):
        bad = cli(args, db=db_url)
        assert bad.returncode == 2, (args, bad.stderr)
        assert needle in bad.stderr and bad.stdout == ""
    assert len(json.loads(cli(["runs", "--json"], db=db_url).stdout)["runs"]) == 2


def test_reuse_returns_an_identical_run_and_only_that(sqlite_engine):
    add_pairs(sqlite_engine, 6)
    first = runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1)
    runner.execute_run(sqlite_engine, first)
    assert runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1, reuse=True) == first
    for kw in (
        dict(limit=6, sample_seed=2),
        dict(limit=8, sample_seed=1),
        dict(limit=6, sample_seed=1, params={"threshold": 0.9}),
    ):
        assert runner.create_run(sqlite_engine, "rules", "direct", reuse=True, **kw) != first
    assert runner.create_run(sqlite_engine, "rules", "evidence", limit=6, sample_seed=1, reuse=True) != first
    assert runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1) != first  # no reuse asked


def test_two_reuse_creates_at_once_make_one_run(engine, monkeypatch):
    """Two ``run --reuse`` of a new configuration started together: the second waits for the first's
    run and reuses it (the look-up and the insert are one serialised step), not a duplicate run that
    judges every sample again. The look-up is slowed so that both look before either inserts."""
    from store.queries import runs as run_queries

    add_pairs(engine, 6)
    find = run_queries.find_equivalent_run

    def slow_find(*a, **kw):
        found = find(*a, **kw)
        time.sleep(0.5)
        return found

    monkeypatch.setattr(run_queries, "find_equivalent_run", slow_find)
    ids: list[str] = []
    errors: list[BaseException] = []

    def create():
        try:
            ids.append(runner.create_run(engine, "rules", "direct", limit=6, sample_seed=3, reuse=True))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(ids) == 2 and ids[0] == ids[1]
    assert n_runs(engine)[0] == 1


def test_reuse_skips_a_run_made_with_another_backend_configuration(sqlite_engine):
    """A run recorded with other answer-changing backend settings (e.g. before the local model was
    calibrated) is not reused, even when monitor, template, parameters and samples are the same."""
    add_pairs(sqlite_engine, 6)
    first = runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1)
    assert runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1, reuse=True) == first
    with session_scope(sqlite_engine) as s:
        run = s.get(Run, first)
        run.params = {**run.params, "config": {"scoring": "an-older-version"}}
    again = runner.create_run(sqlite_engine, "rules", "direct", limit=6, sample_seed=1, reuse=True)
    assert again != first
    with session_scope(sqlite_engine) as s:
        assert s.get(Run, again).params["config"] != {"scoring": "an-older-version"}


@pytest.mark.parametrize("view", ["full", "answer"])
def test_cache_keys_equal_cache_key_for_every_repeat_and_view(view, monkeypatch):
    """``CacheKeys`` renders the constant part of a key once per run; its keys are :func:`cache_key`'s
    (secrets redacted, trailing slash dropped, repeat and view in the parameters)."""
    from automonitor.runs.cache import CacheKeys
    from automonitor.runs.monitors import create_backend
    from automonitor.runs.prompts import PromptBuilder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    b = create_backend(
        "openai:gpt-4o-mini",
        base_url="http://u:secret@h/v1/?key=k2",
        params={"temperature": 0},
        prompt=PromptBuilder(load_template("direct")),
    )
    keys = CacheKeys(b, "t-hash", view)
    params = {**b.cache_params(), "prompt": b.prompt.fingerprint(), **({} if view == "full" else {"view": view})}
    texts = [{"request": "q", "response": "r"}, {"request": 'a "quote" \u2063 \\', "response": "é\n"}]
    for text in texts:
        for rep in (0, 1, 3, 0):
            want = runner.cache_key(
                "openai",
                b.model,
                b.base_url,
                "t-hash",
                sample_hash(text["request"], text["response"]),
                params if not rep else {**params, "repeat": rep},
            )
            assert keys(text, rep) == want
    assert len({keys(texts[0], r) for r in (0, 1, 3)}) == 3
    b.model = "gpt-4o"  # a changed backend identity is never served a stale frame
    assert keys(texts[0]) == runner.cache_key("openai", "gpt-4o", b.base_url, "t-hash", sample_hash("q", "r"), params)


@pytest.mark.parametrize("bad", ["abc", 0, -1, 2.5, "2.5", True, None])
def test_fewshot_k_that_is_no_whole_number_of_at_least_one_is_refused(sqlite_engine, bad):
    """``--param fewshot_k`` of a few-shot template is a whole number >= 1 (a digit string from the CLI too);
    anything else is an InputError naming the field, by the run and its estimate alike (``abc`` raised a bare
    ValueError, exit 1; 0 and -1 ran a few-shot template with no example; 2.5 showed 2). ``fewshot_seed`` too."""
    add_pairs(sqlite_engine, 4, train_pairs=8)
    with pytest.raises(InputError) as exc:
        runner.create_run(sqlite_engine, "rules", "direct-fewshot", params={"fewshot_k": bad})
    assert exc.value.field == "fewshot_k"
    with pytest.raises(InputError) as exc:
        runner.estimate_run(sqlite_engine, "openai:gpt-4o-mini", "direct-fewshot", params={"fewshot_k": bad})
    assert exc.value.field == "fewshot_k"
    with pytest.raises(InputError) as exc:
        runner.create_run(sqlite_engine, "rules", "direct-fewshot", params={"fewshot_seed": "x1"})
    assert exc.value.field == "fewshot_seed"
    assert n_runs(sqlite_engine) == (0, 0)
    rid = runner.create_run(sqlite_engine, "rules", "direct-fewshot", params={"fewshot_k": "3", "fewshot_seed": 1})
    with session_scope(sqlite_engine) as s:
        assert len(s.get(Run, rid).params["fewshot"]) == 3
