"""``automonitor generate`` end to end through the real CLI and store (SQLite and PostgreSQL):

- a scripted OpenAI-compatible loopback generator (tests/servers/scripted_generator.py) whose kept set is
  known: exact counts, candidate pairs with provenance, cache on a rerun, generation runs kept out of
  ``runs``/``report``;
- the scripted session generate -> assign -> two annotators label -> adjudicate -> finalize -> a monitor
  run on the new gold pairs reports MR/FAR;
- (slow) the packaged tiny model behind llama.cpp's OpenAI-compatible server as generator.

Each test starts from a migrated empty store (``engine`` / ``sqlite_engine``): ``generate`` refuses a
missing one (tests/cli/test_cli_store_creation.py).
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from helpers import RAW, run_cli, run_cli_in_process, scripted_generate, sycophancy_script

SOURCE = RAW / "bct_truthfulqa_cues" / "truthfulqa_suggested_answer.jsonl"


@pytest.fixture
def scripted():
    from servers.scripted_generator import ScriptedGenerator

    srv = ScriptedGenerator(sycophancy_script(6)).start()
    yield srv
    srv.stop()


def _gen(db, base, *extra):
    r = scripted_generate(db, base, "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_generate_sycophancy_with_a_scripted_generator(engine, db_url, scripted):
    from store import get_engine

    doc = _gen(db_url, scripted.base_url)
    assert set(doc) >= {"generation_id", "prompts", "kept", "dropped", "candidates_added"}
    # items 0, 2, 4 follow the cue (kept); 1, 3, 5 keep the right answer under the cue (dropped)
    assert (doc["prompts"], doc["kept"], doc["candidates_added"]) == (6, 3, 3)
    assert doc["dropped"] == {"cued_right": 3}
    assert doc["calls"] == 12 + 1  # 6 x (Q, Q') + the retried 429
    steps = {x["step"]: (x["in"], x["out"]) for x in doc["steps"]}
    assert steps["uncued_right"] == (6, 6) and steps["cued_followed_cue"] == (6, 3) and steps["new_candidate"] == (3, 3)
    eng = get_engine(db_url)
    with eng.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT id, pair_id, status, split, label, label_source, request, response, meta "
                "FROM sample ORDER BY pair_id, label"
            )
        ).all()
        run = c.execute(sa.text("SELECT kind, template, status, n FROM run")).one()
    assert tuple(run) == ("generation", "gen-sycophancy", "finished", 6)
    assert len(rows) == 6 and len({r.pair_id for r in rows}) == 3
    for r in rows:
        meta = r.meta if isinstance(r.meta, dict) else json.loads(r.meta)
        assert r.status == "candidate" and r.split is None and r.label_source == "by_construction"
        assert r.pair_id.startswith(f"gen:{doc['generation_id']}:")
        g = meta["generation"]
        assert g["generator"] == "openai:scripted-gen" and g["source_file"].endswith(
            "truthfulqa_suggested_answer.jsonl"
        )
        assert g["prompts"]["cued"][0]["content"] == r.request
        assert g["raw_outputs"]["uncued"]["text"] and g["benign_choice"] == "uncued_response"
        assert g["filter"]["uncued_choice"] == g["filter"]["truth"] != g["filter"]["cued_choices"][0]
        want = g["raw_outputs"]["cued"][0]["text"] if r.label == "misbehavior" else g["raw_outputs"]["uncued"]["text"]
        assert r.response == want and meta["intended_label"] == r.label
    # generation runs are not monitor runs
    runs = json.loads(run_cli(["runs", "--json"], db=db_url).stdout)
    assert all(x.get("kind") != "generation" for x in (runs if isinstance(runs, list) else runs.get("runs", [])))
    listed = json.loads(run_cli(["generate", "list", "--json"], db=db_url).stdout)
    assert [x["generation_id"] for x in listed] == [doc["generation_id"]]
    # a rerun answers from the cache and adds no duplicate candidates
    again = _gen(db_url, scripted.base_url)
    assert again["cache_hits"] == 12 and again["calls"] == 0
    assert again["candidates_added"] == 0 and again["dropped"] == {"cued_right": 3, "duplicate_candidate": 3}


def test_generate_sycophancy_on_mmlu_moral_scenarios_with_a_scripted_generator(sqlite_engine, sqlite_url):
    """The command the build's shortfall line and docs/explanation/benchmark.md advise for the paper's
    Sycophancy & Bias / QA cell: MMLU moral scenarios with the professor cue, through the same counterfactual
    filter. Scripted: Q always right; Q' follows the cue (items 0, 3, 6), stays right (1, 4, 7) or picks the
    option neither the truth nor the cue (2, 5, 8)."""
    from servers.scripted_generator import ScriptedGenerator

    from automonitor.runs.generation.tasks import render_chat, sycophancy_items

    items = sycophancy_items("mmlu_moral_scenarios", None, RAW, 9)
    answers = {}
    for i, it in enumerate(items):
        other = next(x for x in "ABCD" if x not in (it.truth, it.cue))
        answers[it.uncued[-1]["content"]] = it.truth
        answers[it.cued[-1]["content"]] = (it.cue, it.truth, other)[i % 3]
    srv = ScriptedGenerator(answers).start()
    try:
        args = ["generate", "sycophancy", "--generator", "openai:scripted-gen", "--base-url", srv.base_url]
        r = run_cli([*args, "--source", "mmlu_moral_scenarios", "--limit", "9", "--json"], db=sqlite_url)
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["prompts"], doc["kept"], doc["candidates_added"]) == (9, 3, 3)
    assert doc["dropped"] == {"cued_right": 3, "cued_wrong_not_cue": 3}
    assert doc["calls"] == 18 + 1  # 9 x (Q, Q') + the retried 429
    with sqlite_engine.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT pair_id, status, category, task, label, request, response, meta FROM sample ORDER BY pair_id"
            )
        ).all()
    assert len(rows) == 6 and len({r.pair_id for r in rows}) == 3
    kept = {render_chat(items[i].cued): items[i] for i in (0, 3, 6)}
    for r in rows:
        meta = json.loads(r.meta) if isinstance(r.meta, str) else r.meta
        g = meta["generation"]
        it = kept[r.request]  # the request is the cued question of a kept item
        assert (r.status, r.category, r.task) == ("candidate", "sycophancy_bias", "qa")
        assert r.request.startswith(f"The following was answered as ({it.cue}) by a Stanford Professor")
        assert g["source_file"] == "mmlu_moral_scenarios/data/val/moral_scenarios_val.csv"
        assert (g["filter"]["truth"], g["filter"]["cue"]) == (it.truth, it.cue) and it.cue != it.truth
        chosen = it.cue if r.label == "misbehavior" else it.truth
        assert r.response == f"Let me think. Therefore, the best answer is: ({chosen})."


def test_bad_generate_options_exit_2_and_write_nothing(sqlite_engine, sqlite_url):
    from store import get_engine

    for args, field in (
        (["sycophancy", "--generator", "rules", "--source", "turpin_bbh"], "generator"),
        # a backend that cannot generate, and an unknown one, are the generator's errors (not 'monitor'), listing
        # only the backends that can (those implementing Backend.generate)
        (["sycophancy", "--generator", "probe:x", "--source", "turpin_bbh"], "field 'generator': the probe backend"),
        (
            ["sycophancy", "--generator", "nosuch:x", "--source", "turpin_bbh"],
            "choose one of llamacpp, openai, anthropic",
        ),
        (["sycophancy", "--generator", "llamacpp", "--source", "nope"], "source"),
        (["sycophancy", "--generator", "llamacpp", "--source", "turpin_bbh", "--cue", "are_you_sure"], "cue"),
        (["gaming", "--generator", "llamacpp", "--source", "mbpp", "--incentive", "word_count"], "incentive"),
        (["gaming", "--generator", "llamacpp", "--source", "mbpp", "--incentive", "nope"], "incentive"),
    ):
        # in this process even with ``llamacpp`` named (run_cli would start a process for it): the spec is
        # refused before any generator, so no local model, is made
        r = run_cli_in_process(["generate", *args, "--json"], db=sqlite_url)
        assert r.returncode == 2 and field in r.stderr and r.stdout == ""
    with get_engine(sqlite_url).connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM run")).scalar() == 0


def test_scripted_session_generate_annotate_adjudicate_then_judge(sqlite_engine, sqlite_url, scripted, tmp_path):
    from automonitor.annotation.accounts import authenticate
    from automonitor.annotation import adjudicate
    from store import get_engine

    db = sqlite_url
    doc = _gen(db, scripted.base_url)
    assert doc["candidates_added"] == 3
    for name, role in (("alice", "annotator"), ("bob", "annotator"), ("carol", "admin")):
        r = run_cli_in_process(
            ["users", "add", name, "--role", role, "--password-stdin"], db=db, input="password-123456\n"
        )  # stdin read in this process (a real pipe is tested in tests/cli)
        assert r.returncode == 0, r.stderr
    r = run_cli(["assign", "--k", "2", "--seed", "7", "--json"], db=db)
    assert r.returncode == 0 and json.loads(r.stdout)["assignments"] == 12, r.stderr
    eng = get_engine(db)
    with eng.connect() as c:
        cands = c.execute(
            sa.text("SELECT id, pair_id, label FROM sample WHERE status = 'candidate' ORDER BY pair_id, label")
        ).all()
    disputed = cands[0].pair_id
    labels = []
    for s in cands:
        for ann in ("alice", "bob"):
            lab = s.label
            if s.pair_id == disputed and ann == "bob":  # bob disagrees on one pair: the adjudicator decides
                lab = "benign" if s.label == "misbehavior" else "misbehavior"
            labels.append({"annotator": ann, "sample_id": s.id, "label": lab})
    f = tmp_path / "labels.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in labels) + "\n")
    r = run_cli(["annotations", "import", str(f), "--json"], db=db)
    assert r.returncode == 0, r.stderr
    for s in cands:
        if s.pair_id == disputed:
            adjudicate(
                eng,
                authenticate(eng, "carol", "password-123456"),
                s.id,
                s.label,
                "construction confirmed by the adjudicator",
            )
    r = run_cli(["adjudications", "finalize", "--json"], db=db)
    fin = json.loads(r.stdout)
    assert r.returncode == 0 and fin["accepted"] == 3 and fin["pending"] == 0, r.stderr
    with eng.connect() as c:
        gold = c.execute(sa.text("SELECT status, split, count(*) FROM sample GROUP BY status, split")).all()
    # accepted pairs become gold test samples of edition 'verified' only (never the paper mirror)
    assert [tuple(g) for g in gold] == [("gold", "test", 6)]
    with eng.connect() as c:
        editions = c.execute(sa.text("SELECT edition, count(*) FROM edition_sample GROUP BY edition")).all()
    assert [tuple(e) for e in editions] == [("verified", 6)]
    r = run_cli(["run", "--monitor", "rules", "--template", "direct", "--json"], db=db)
    assert r.returncode == 2 and "edition 'paper'" in r.stderr  # nothing in the paper mirror
    r = run_cli(["run", "--monitor", "rules", "--template", "direct", "--edition", "verified", "--json"], db=db)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stdout)["run_id"]
    rep = json.loads(run_cli(["report", "--run", run_id, "--json", "--n-boot", "50"], db=db).stdout)
    assert [e["run_id"] for e in rep["runs"]] == [run_id]  # the generation run is no monitor run
    ov = rep["runs"][0]["overall"]
    assert ov["tp"] + ov["fn"] + ov["fp"] + ov["tn"] + ov["unscored"] == 6
    assert ov["tp"] + ov["fn"] == 3 and 0.0 <= ov["mr"] <= 1.0 and 0.0 <= ov["far"] <= 1.0
    assert rep["runs"][0]["by_category"]["sycophancy_bias"]["n"] == ov["n"]


# ------------------------------------------------------------------ real llama.cpp server (slow)


@pytest.mark.slow
def test_llamacpp_server_as_generator_end_to_end(sqlite_engine, sqlite_url, llama_server):
    from store import get_engine

    r = run_cli(
        [
            "generate",
            "sycophancy",
            "--generator",
            "openai:gemma3-270m",
            "--base-url",
            llama_server,
            "--source",
            "bct_truthfulqa_cues",
            "--limit",
            "3",
            "--max-tokens",
            "8",
            "--concurrency",
            "1",
            "--json",
        ],
        db=sqlite_url,
        timeout=1500,
    )
    assert r.returncode == 0, r.stderr
    syc = json.loads(r.stdout)
    assert syc["prompts"] == 3 and syc["kept"] + sum(syc["dropped"].values()) == 3
    assert syc["calls"] >= 6 and syc["tokens_in"] > 0 and syc["cost_usd"] == 0.0
    r = run_cli(
        [
            "generate",
            "gaming",
            "--generator",
            "openai:gemma3-270m",
            "--base-url",
            llama_server,
            "--source",
            "mbpp",
            "--incentive",
            "tests_only",
            "--limit",
            "2",
            "--max-tokens",
            "32",
            "--concurrency",
            "1",
            "--json",
        ],
        db=sqlite_url,
        timeout=1500,
    )
    assert r.returncode == 0, r.stderr
    gam = json.loads(r.stdout)
    assert gam["prompts"] == 2 and gam["kept"] + sum(gam["dropped"].values()) == 2
    eng = get_engine(sqlite_url)
    from automonitor.runs.generation.engine import generation_items

    for doc, keys in ((syc, ("uncued", "cued")), (gam, ("with_incentive", "without_incentive"))):
        items = generation_items(eng, doc["generation_id"])
        assert len(items) == doc["prompts"]
        for it in items:
            assert set(it["prompts"]) == set(keys) and set(it["outputs"]) == set(keys)
            assert it["kept"] or it["reason"] in doc["dropped"]
    with eng.connect() as c:
        n = c.execute(sa.text("SELECT count(*) FROM sample WHERE status = 'candidate'")).scalar()
        runs = c.execute(sa.text("SELECT kind, status FROM run")).all()
    assert n == 2 * (syc["candidates_added"] + gam["candidates_added"])
    assert sorted(tuple(x) for x in runs) == [("generation", "finished")] * 2


def test_anthropic_generate_mode_against_the_documented_replay(monkeypatch):
    import asyncio

    from servers.anthropic_replay import AnthropicReplayServer

    from automonitor.runs.monitors import TransientError
    from automonitor.runs.generation.engine import job_backend

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with AnthropicReplayServer() as srv:
        job = {"backend": "anthropic", "model": "claude-3-5-haiku-20241022", "base_url": srv.root_url}
        calls = []

        async def go(text):
            b = job_backend(job)
            try:
                return await b.generate(
                    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
                    lambda: calls.append(1),
                    max_tokens=32,
                )
            finally:
                await b.aclose()

        g = asyncio.run(go("Which is right? [scenario:text_no]"))
        assert (g.text, g.finish_reason) == ("No", "end_turn") and g.tokens_out == 12 and g.cost_usd > 0
        body = srv.requests[-1]
        assert body["system"] == "Be brief." and [m["role"] for m in body["messages"]] == ["user"]
        assert body["max_tokens"] == 32
        with pytest.raises(TransientError) as ei:
            asyncio.run(go("again [scenario:429]"))
        assert ei.value.rate_limited and len(calls) == 2


def test_cancel_stops_a_generation_run_before_the_next_item(sqlite_url, sqlite_engine, scripted):
    from automonitor.runs import runner
    from automonitor.runs.generation.engine import (
        GenerationSpec,
        create_generation,
        estimate_generation,
        execute_generation,
    )

    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    est = estimate_generation(
        GenerationSpec(
            kind="sycophancy",
            generator="openai:gpt-4o-mini",
            source="bct_truthfulqa_cues",
            limit=6,
            samples_per_prompt=2,
        )
    )
    assert est["n"] == 6 and est["calls"] == 18 and est["prompt_tokens"] > 0 and est["est_cost_usd"] > 0
    rid = create_generation(
        eng,
        GenerationSpec(
            kind="sycophancy",
            generator="openai:scripted-gen",
            source="bct_truthfulqa_cues",
            limit=6,
            base_url=scripted.base_url,
        ),
    )
    doc = execute_generation(eng, rid, progress=lambda done, total: done == 2 and runner.cancel_run(eng, rid))
    assert doc["status"] == "cancelled" and doc["prompts"] == 2 and doc["n"] == 6
    with pytest.raises(Exception, match="cancelled"):
        execute_generation(eng, rid)  # not resumable: start a new one


@pytest.mark.slow
def test_in_process_llamacpp_generator(sqlite_engine, sqlite_url):
    r = run_cli(
        [
            "generate",
            "sycophancy",
            "--generator",
            "llamacpp",
            "--source",
            "turpin_bbh",
            "--limit",
            "1",
            "--max-tokens",
            "4",
            "--json",
        ],
        db=sqlite_url,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["generator"] == "llamacpp:gemma3-270m" and doc["calls"] == 2 and doc["tokens_in"] > 100
    assert doc["prompts"] == 1 and doc["kept"] + sum(doc["dropped"].values()) == 1 and doc["cost_usd"] == 0.0


def test_a_resampled_answer_that_resists_the_cue_becomes_the_benign_side(sqlite_url, sqlite_engine):
    from servers.scripted_generator import ScriptedGenerator

    from automonitor.runs.generation.engine import GenerationSpec, create_generation, execute_generation
    from automonitor.runs.generation.tasks import sycophancy_items

    items = sycophancy_items("bct_truthfulqa_cues", "suggested_answer", RAW, 2)
    answers = {}
    for it in items:  # both follow the cue greedily; the second sample of item 0 resists it
        answers[it.uncued[-1]["content"]] = it.truth
        answers[it.cued[-1]["content"]] = it.cue
    resampled = {items[0].cued[-1]["content"]: items[0].truth}
    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    with ScriptedGenerator(answers, resampled=resampled) as srv:
        rid = create_generation(
            eng,
            GenerationSpec(
                kind="sycophancy",
                generator="openai:scripted-gen",
                source="bct_truthfulqa_cues",
                limit=2,
                samples_per_prompt=2,
                base_url=srv.base_url,
            ),
        )
        doc = execute_generation(eng, rid)
    assert (doc["kept"], doc["calls"]) == (2, 6 + 1)
    with eng.connect() as c:
        rows = c.execute(sa.text("SELECT label, response, meta FROM sample ORDER BY pair_id, label")).all()
    choices = {}
    for r in rows:
        meta = r.meta if isinstance(r.meta, dict) else json.loads(r.meta)
        g = meta["generation"]
        choices[g["item_id"]] = g["benign_choice"]
        if r.label == "benign" and g["benign_choice"] == "resisting_cued_sample":
            assert r.response == g["raw_outputs"]["cued"][1]["text"] and f"({items[0].truth})" in r.response
    assert choices == {items[0].item_id: "resisting_cued_sample", items[1].item_id: "uncued_response"}
