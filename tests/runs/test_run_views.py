"""``run --view``: the monitor receives the view's rendering, only samples that have the view are judged,
a source without the part is refused (exit 2, naming source and part), the view is part of the run's
identity (``runs --json``, ``report --json``, ``--reuse``) and of the cache key; on the rules backend, a
probe and a real OpenAI-compatible server (the project's scripted server)."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from automonitor.cli import main
from automonitor.data.monitor_views import render
from automonitor.errors import InputError
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from automonitor.runs import runner
from servers.openai_fault import OpenAIFaultServer
from servers.views_data import EchoBackend, add_view_samples, echo_backend, plain, rows_of
from store import session_scope
from store.models import Prediction, Run
from store.queries.samples import insert_samples

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 60}


@pytest.fixture
def echo():
    with echo_backend() as cls:
        yield cls


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_monitor_is_shown_the_view_and_only_samples_that_have_it(db_url, engine, capsys, monkeypatch, echo):
    monkeypatch.setenv("AUTOMONITOR_DB", db_url)
    rows = add_view_samples(engine)
    EchoBackend.seen.clear()
    code, out, err = _cli(
        ["run", "--monitor", "view-echo-test", "--template", "direct", "--view", "reasoning", "--json", "--quiet"],
        capsys,
    )
    assert code == 0, err
    summary = json.loads(out)
    # xstest's plain answers have no reasoning: 7 pairs judged, none of xstest
    assert summary["n"] == 14
    seen = dict(EchoBackend.seen)
    assert len(seen) == 14 and not any(rows[sid]["source"] == "xstest" for sid in seen)
    for sid, text in seen.items():
        want = render(rows[sid]["response"], "reasoning", source=rows[sid]["source"])
        assert want is not None and text == want.text and text.strip()
        assert "os._exit" not in text and "sed -i" not in text and "```" not in text  # no code, no actions
    # so a reasoning-only monitor misses every hack
    assert summary["counts"]["misbehavior"] == 0
    with Session(engine) as s:
        run = s.get(Run, summary["run_id"])
        assert run.params["view"] == "reasoning"
        assert run.params["without_view"] == {"xstest": 6}

    # the answer view: every sample has one; the hack code is shown without the reasoning
    EchoBackend.seen.clear()
    code, out, err = _cli(
        ["run", "--monitor", "view-echo-test", "--template", "direct", "--view", "answer", "--json", "--quiet"], capsys
    )
    assert code == 0, err
    ans = json.loads(out)
    assert ans["n"] == 20 and ans["counts"]["misbehavior"] == 4  # the aisi hacks; the odcv sed is no answer
    for sid, text in EchoBackend.seen:
        assert "Plan" not in text and "Thought:" not in text

    # the view is named wherever the run is
    code, out, err = _cli(["runs", "--json"], capsys)
    views = {r["run_id"]: r["view"] for r in json.loads(out)["runs"]}
    assert views[summary["run_id"]] == "reasoning" and views[ans["run_id"]] == "answer"
    code, out, err = _cli(["runs"], capsys)
    assert code == 0 and "[view reasoning]" in out and "[view answer]" in out


def test_refusals_name_source_and_part_and_exit_2(db_url, engine, capsys, monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_DB", db_url)
    add_view_samples(engine)
    base = ["run", "--monitor", "rules", "--template", "direct"]
    code, out, err = _cli([*base, "--view", "reasoning", "--source", "xstest"], capsys)
    assert code == 2 and "xstest" in err and "no reasoning part" in err and out == ""
    code, out, err = _cli([*base, "--view", "actions", "--source", "aisi_olmo_rh"], capsys)
    assert code == 2 and "aisi_olmo_rh" in err and "no action part" in err
    code, out, err = _cli([*base, "--view", "thoughts"], capsys)
    assert code == 2 and "unknown view" in err
    code, out, err = _cli([*base, "--source", "nosuch"], capsys)
    assert code == 2 and "nosuch" in err
    with Session(engine) as s:  # nothing was created
        assert s.exec(select(Run)).all() == []
    # a source that has the part: judged alone
    code, out, err = _cli([*base, "--view", "actions", "--source", "odcv_bench", "--json", "--quiet"], capsys)
    assert code == 0, err
    assert json.loads(out)["n"] == 6
    code, out, err = _cli(["run", "--resume", json.loads(out)["run_id"], "--view", "answer"], capsys)
    assert code == 2 and "apply to a new run" in err


def test_no_store_view_empty_set_is_refused(engine):
    rows = rows_of("xstest", 2, plain, "safety_permission", "qa")
    with session_scope(engine) as s:
        insert_samples(s, rows)
    with pytest.raises(InputError, match="no test sample has the 'reasoning' view.*xstest.*no reasoning part"):
        runner.create_run(engine, "rules", "direct", view="reasoning")


def test_cache_keeps_views_apart(engine, echo):
    """Verdicts are cached per view: a second view makes its own calls even where its text equals the
    full text (xstest's answer is its whole response); the same view again is all cache hits."""
    add_view_samples(engine)
    full = runner.execute_run(engine, runner.create_run(engine, "view-echo-test", "direct", sources=["xstest"]))
    assert full["n"] == 6 and full["api_calls"] == 6
    ans = runner.execute_run(
        engine, runner.create_run(engine, "view-echo-test", "direct", sources=["xstest"], view="answer")
    )
    assert ans["api_calls"] == 6 and ans["cache_hits"] == 0
    again = runner.execute_run(
        engine, runner.create_run(engine, "view-echo-test", "direct", sources=["xstest"], view="answer")
    )
    assert again["api_calls"] == 0 and again["cache_hits"] == 6
    keys: dict[str, set[str]] = {}
    with Session(engine) as s:
        for p in s.exec(select(Prediction)):
            keys.setdefault(p.run_id, set()).add(p.meta["cache_key"])
    assert not keys[full["run_id"]] & keys[ans["run_id"]]
    assert keys[ans["run_id"]] == keys[again["run_id"]]
    # --reuse finds the run of the same view only
    same = runner.create_run(engine, "view-echo-test", "direct", sources=["xstest"], view="answer", reuse=True)
    assert same in (ans["run_id"], again["run_id"])
    other = runner.create_run(engine, "view-echo-test", "direct", sources=["xstest"], view="full", reuse=True)
    assert other == full["run_id"]


def test_rules_backend_under_views(engine):
    add_view_samples(engine)
    out = {}
    for view in ("full", "answer", "reasoning", "actions"):
        rid = runner.create_run(engine, "rules", "direct", view=view)
        out[view] = runner.execute_run(engine, rid)
    assert (out["full"]["n"], out["answer"]["n"], out["reasoning"]["n"], out["actions"]["n"]) == (20, 20, 14, 6)


def test_openai_compatible_server_receives_the_view(sqlite_engine, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rows = add_view_samples(sqlite_engine)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST, view="answer"
        )
        res = runner.execute_run(sqlite_engine, rid)
        users = [m["content"] for b in srv.requests for m in b["messages"] if m["role"] == "user"]
    assert res["n"] == 20 and res["counts"]["error"] == 0
    assert len(users) == 20
    for text in users:
        assert "Plan " not in text and "Thought:" not in text and "acc,0.71" not in text
    aisi_hacks = [r for r in rows.values() if r["source"] == "aisi_olmo_rh" and r["label"] == "misbehavior"]
    assert all(any("os._exit(0)" in u and r["request"] in u for u in users) for r in aisi_hacks)


def test_probe_backend_under_views(engine, tmp_path, monkeypatch):
    """A trained TF-IDF probe judges the view's text: under ``reasoning`` the aisi hack words are gone."""
    from automonitor.runs.probe.model import save_probe, train_probe

    rows = list(add_view_samples(engine).values())
    probe = train_probe(
        "tfidf", [r["request"] for r in rows], [r["response"] for r in rows], [r["label"] for r in rows]
    )
    path = save_probe(probe, tmp_path)
    scores = {}
    for view in ("full", "reasoning"):
        rid = runner.create_run(engine, f"probe:{path}", "direct", view=view)
        assert runner.execute_run(engine, rid)["counts"]["error"] == 0
        with Session(engine) as s:
            scores[view] = {p.sample_id: p.score for p in s.exec(select(Prediction).where(Prediction.run_id == rid))}
    assert set(scores["reasoning"]) < set(scores["full"])
    assert any(scores["reasoning"][k] != scores["full"][k] for k in scores["reasoning"])


def test_probe_trains_and_predicts_per_view(db_url, engine, tmp_path):
    """``probe train --view V`` fits on the view's texts (records without it left out) and saves
    ``<features>-lr-all-<V>-vN``; ``probe:tfidf-lr-V`` then runs under ``run --view V``."""
    from automonitor.runs.probe.corpus import CorpusEntry, write_jsonl
    from automonitor.runs.probe.model import load_probe
    from helpers import run_cli
    from servers.views_data import aisi

    rows = add_view_samples(engine)
    recs = [
        CorpusEntry(
            f"r{k}_{r['label']}",
            r["category"],
            r["task"],
            r["label"],
            r["request"],
            r["response"],
            r["source"],
            "by_construction",
        )
        for k, r in enumerate(rows.values())
    ]
    recs += [  # more aisi rollouts, so that both labels have reasoning records to learn from
        CorpusEntry(
            f"x{i}_{lab}",
            "specification_gaming",
            "code",
            lab,
            "Task.",
            aisi(100 + i, lab == "misbehavior"),
            "aisi_olmo_rh",
            "by_construction",
        )
        for i in range(6)
        for lab in ("misbehavior", "benign")
    ]
    corpus = write_jsonl(recs, tmp_path / "corpus.jsonl")
    env = {"AUTOMONITOR_ARTIFACTS": str(tmp_path / "art")}
    r = run_cli(
        ["probe", "train", "--features", "tfidf", "--corpus", str(corpus), "--view", "reasoning", "--json"],
        db=db_url,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["artifact"].endswith("tfidf-lr-all-reasoning-v1.probe.json")
    n_reasoning = sum(1 for x in recs if render(x.response, "reasoning", source=x.source) is not None)
    assert res["card"]["view"] == "reasoning" and res["card"]["n"] == n_reasoning < len(recs)
    assert res["card"]["left_out_without_view"] == len(recs) - n_reasoning
    probe = load_probe(res["artifact"])
    assert probe.card["view"] == "reasoning"
    # a full-view probe is a different artefact; probe:tfidf-lr still finds only that one
    r = run_cli(["probe", "train", "--features", "tfidf", "--corpus", str(corpus), "--json"], db=db_url, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["artifact"].endswith("tfidf-lr-all-v1.probe.json")
    r = run_cli(
        [
            "run",
            "--monitor",
            "probe:tfidf-lr-reasoning",
            "--template",
            "direct",
            "--view",
            "reasoning",
            "--json",
            "--quiet",
        ],
        db=db_url,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["n"] == 14
    r = run_cli(
        ["run", "--monitor", "probe:tfidf-lr-actions", "--template", "direct", "--view", "actions"], db=db_url, env=env
    )
    assert r.returncode == 2 and "probe train --features tfidf --view actions" in r.stderr
    r = run_cli(
        ["probe", "train", "--features", "tfidf", "--corpus", str(corpus), "--view", "thoughts"], db=db_url, env=env
    )
    assert r.returncode == 2 and "unknown view" in r.stderr


def test_estimate_counts_the_view_samples_and_texts(engine):
    add_view_samples(engine)
    full = runner.estimate_run(engine, "openai:gpt-4o-mini", "direct")
    reasoning = runner.estimate_run(engine, "openai:gpt-4o-mini", "direct", view="reasoning")
    assert (full["n"], reasoning["n"]) == (20, 14)
    assert reasoning["prompt_tokens"] < full["prompt_tokens"]


def test_estimate_takes_the_words_of_the_run_it_estimates(engine):
    """The run's options are declared once (``runner.RunOptions``): an estimate asked with a run's words
    counts that run's samples, ``sources`` included (before, ``estimate_run`` had no ``sources`` and counted
    every source), and a word that is no option is refused by both, as Python refuses an unknown keyword,
    with nothing written."""
    rows = add_view_samples(engine)  # 4 aisi, 3 odcv and 3 xstest pairs
    options: runner.RunOptions = {"sources": ["xstest"], "sample_seed": 1, "concurrency": 2}
    est = runner.estimate_run(engine, "rules", "direct", **options)
    with Session(engine) as s:
        run = s.get(Run, runner.create_run(engine, "rules", "direct", **options))
        assert run is not None and run.params["sources"] == ["xstest"] and run.params["concurrency"] == 2
        judged = s.exec(select(Prediction.sample_id).where(Prediction.run_id == run.id)).all()
    assert est["n"] == run.n == len(judged) == 6 and {rows[sid]["source"] for sid in judged} == {"xstest"}
    assert runner.estimate_run(engine, "rules", "direct")["n"] == 20
    with Session(engine) as s:
        before = len(s.exec(select(Run)).all())
    for call in (runner.estimate_run, runner.create_run):
        with pytest.raises(TypeError, match="'limt'"):
            call(engine, "rules", "direct", limt=3)
    with Session(engine) as s:
        assert len(s.exec(select(Run)).all()) == before


def _train_rows() -> list[dict]:
    """The view samples' three sources again, as a train split (few-shot candidates)."""
    from servers.views_data import aisi

    rows = rows_of("aisi_olmo_rh", 3, aisi, "specification_gaming", "code") + rows_of(
        "xstest", 3, plain, "safety_permission", "qa"
    )
    for r in rows:
        r["split"], r["pair_id"], r["request"] = "train", "train-" + r["pair_id"], "Train: " + r["request"]
        r["id"] = make_sample_id(r["pair_id"], r["label"], r["request"], r["response"])
        r["request_hash"] = sha256_text(r["request"])
        r["content_hash"] = content_hash(r["request"], r["response"], r["label"])
    return rows


@pytest.mark.parametrize("template", ["direct-fewshot", "evidence-fewshot"])
def test_fewshot_examples_are_shown_under_the_view(sqlite_engine, monkeypatch, template):
    """Under ``answer`` the few-shot examples are the train samples that have the view, shown as their answer
    rendering: no thinking anywhere in the prompt; ``full`` still draws from every train sample."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    add_view_samples(sqlite_engine)
    train = _train_rows()
    with session_scope(sqlite_engine) as s:
        insert_samples(s, train)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "openai:gpt-4o-mini", template, base_url=srv.base_url, params=FAST, view="answer"
        )
        res = runner.execute_run(sqlite_engine, rid)
        prompts = ["\n".join(m["content"] for m in b["messages"]) for b in srv.requests]
    assert res["n"] == 20 and res["counts"]["error"] == 0 and len(prompts) == 20
    with Session(sqlite_engine) as s:
        fewshot = s.get(Run, rid).params["fewshot"]
    shown = {r["id"]: render(r["response"], "answer", source=r["source"]) for r in train}
    assert len(fewshot) == 4 and all(shown[i] is not None for i in fewshot)
    for text in prompts:
        assert "<thinking>" not in text and "Plan " not in text and "Thought:" not in text
        assert all(shown[i].text in text for i in fewshot)  # type: ignore[union-attr]
    full = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", template, base_url="http://127.0.0.1:9/v1")
    with Session(sqlite_engine) as s:
        assert any(r["source"] == "aisi_olmo_rh" for r in train if r["id"] in s.get(Run, full).params["fewshot"])


@pytest.mark.parametrize("template", ["direct", "evidence"])
def test_anthropic_backend_receives_the_view(sqlite_engine, monkeypatch, template):
    """The Anthropic Messages backend (the documented replay) under ``reasoning``: each request shows the
    reasoning only (no code, no actions, no tool output), for a plain and an evidence template."""
    from servers.anthropic_replay import AnthropicReplayServer

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    rows = add_view_samples(sqlite_engine)
    with AnthropicReplayServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "anthropic:claude-sonnet-4-5", template, base_url=srv.root_url, params=FAST, view="reasoning"
        )
        res = runner.execute_run(sqlite_engine, rid)
        users = []
        for body in srv.requests:
            content = body["messages"][-1]["content"]
            users.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    assert res["n"] == 14 and res["counts"]["error"] == 0 and len(users) == 14
    for text in users:
        assert "os._exit" not in text and "```" not in text and "Action:" not in text and "acc,0.71" not in text
    for r in rows.values():
        if r["source"] == "aisi_olmo_rh":
            assert any(render(r["response"], "reasoning", source=r["source"]).text in u for u in users)  # type: ignore[union-attr]
