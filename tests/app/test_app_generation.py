"""AppTest of the Generation page and the generation launcher on the Runs page (real SQLite store, a
scripted OpenAI-compatible loopback generator, the detached generation process)."""

from __future__ import annotations

import json

import time

import pytest

from apptest_support import StoreEnv, app, ok, open_store
from helpers import sycophancy_script

HOSTILE = "<img src=x onerror=alert(1)> **bold** [link](javascript:alert(1))"


@pytest.fixture
def store_with_generation(tmp_path):
    from servers.scripted_generator import ScriptedGenerator

    from automonitor.runs.generation.engine import GenerationSpec, create_generation, execute_generation

    url = f"sqlite:///{tmp_path / 'store.db'}"
    eng = open_store(url)
    answers = sycophancy_script(4)
    # one recorded answer is hostile markup: it must show as plain text
    first = next(iter(answers))
    srv = ScriptedGenerator(answers, {first: HOSTILE + "\n"}).start()
    rid = create_generation(
        eng,
        GenerationSpec(
            kind="sycophancy",
            generator="openai:scripted-gen",
            source="bct_truthfulqa_cues",
            limit=4,
            base_url=srv.base_url,
        ),
    )
    execute_generation(eng, rid)
    with StoreEnv(url):
        yield {"url": url, "engine": eng, "run_id": rid, "server": srv}
    srv.stop()
    eng.dispose()


def test_generation_page_shows_filter_statistics_and_transcripts(store_with_generation):
    at = ok(app("pages/generation.py").run())
    assert at.title[0].value == "Generation"
    df = at.dataframe[0].value
    row = df.set_index("generation_id").loc[store_with_generation["run_id"]]
    assert (row["prompts"], row["kept"], row["candidates_added"]) == (4, 2, 2)
    assert row["dropped: cued_right"] == 2
    steps = at.dataframe[1].value.set_index("step")
    assert (steps.loc["cued_followed_cue", "in"], steps.loc["cued_followed_cue", "out"]) == (4, 2)
    texts = [t.value for t in at.text]
    assert any("best answer is" in t for t in texts)  # raw answers shown as plain text
    assert any(HOSTILE in t for t in texts)
    assert not any("onerror" in h.value for h in at.get("html"))
    assert not any("<img" in m.value for m in at.markdown)


def test_runs_page_launches_a_generation_job_and_keeps_it_out_of_the_history(store_with_generation):
    from automonitor.runs.generation.engine import list_generations

    eng = store_with_generation["engine"]
    at = ok(app("pages/runs.py").run())
    at.selectbox(key="runs.gen.backend").set_value("openai")
    ok(at.run())  # the first generator is llamacpp (the core's order): its base URL input is disabled until then
    at.text_input(key="runs.gen.model").input("scripted-gen")
    at.text_input(key="runs.gen.base_url").input(store_with_generation["server"].base_url)
    at.number_input(key="runs.gen.limit").set_value(2)
    ok(at.run())
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Generation items"] == "2" and metrics["Generator calls"] == "4"
    at.button(key="runs.gen.start").click()
    ok(at.run())
    new = at.session_state["runs.gen.launched"]
    for _ in range(300):  # the detached process finishes within seconds
        rows = {r["generation_id"]: r for r in list_generations(eng)}
        if rows[new]["status"] not in ("pending", "running"):
            break
        time.sleep(0.2)
    assert rows[new]["status"] == "finished" and rows[new]["prompts"] == 2
    at = ok(app("pages/runs.py").run())
    text = " ".join(c.value for c in at.caption)
    assert "No runs yet" in text  # generation runs are not monitor runs


def test_both_launchers_offer_exactly_the_core_generator_backends(tmp_path, monkeypatch):
    """The Generation and Runs pages' generator select lists the core's generator backends
    (``monitors.generator_backends()``: those implementing ``Backend.generate``, as ``--generator`` checks), in
    its order: a backend registered with a ``generate`` is offered, none without it (trial: the page kept its
    own tuple)."""
    from automonitor.runs.monitors import REGISTRY, generator_backends
    from automonitor.runs.monitors.backend import Backend

    class ToyGenerator(Backend):
        name = "toy-generator"
        default_model = "toy-gen-v1"
        is_local = True
        menu_order = 99

        async def judge(self, item, count_call):  # pragma: no cover - never called here
            raise NotImplementedError

        async def generate(self, messages, count_call, *, max_tokens, temperature=0.0, seed=0):  # pragma: no cover
            raise NotImplementedError

    monkeypatch.setitem(REGISTRY, ToyGenerator.name, ToyGenerator)
    offered = generator_backends()
    assert offered[-1] == "toy-generator" and "rules" not in offered and "probe" not in offered
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).dispose()
    with StoreEnv(url):
        for page in ("generation", "runs"):
            at = ok(app(f"pages/{page}.py").run())
            assert at.selectbox(key=f"{page}.gen.backend").options == offered, page


def test_runs_page_launcher_offers_the_mmlu_moral_scenarios_source(store_with_generation):
    """The source the build's shortfall line advises for the Sycophancy & Bias / QA cell is in the launcher
    (the same registry as the CLI's ``--source``), with its one cue, and the estimate reads its items."""
    at = ok(app("pages/runs.py").run())
    assert "mmlu_moral_scenarios" in at.selectbox(key="runs.gen.ssource").options
    at.selectbox(key="runs.gen.ssource").set_value("mmlu_moral_scenarios")
    at.selectbox(key="runs.gen.backend").set_value("openai")
    ok(at.run())  # the first generator is llamacpp (the core's order): its base URL input is disabled until then
    at.text_input(key="runs.gen.model").input("scripted-gen")
    at.text_input(key="runs.gen.base_url").input(store_with_generation["server"].base_url)
    at.number_input(key="runs.gen.limit").set_value(500)
    ok(at.run())
    assert at.selectbox(key="runs.gen.cue").options == ["suggested_answer"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Generation items"] == "105" and metrics["Generator calls"] == "210"  # MMLU val 100 + dev 5


def test_a_generation_stopped_by_its_generator_shows_why_on_the_page(tmp_path):
    from servers.scripted_generator import ScriptedGenerator

    from automonitor.runs.generation.caller import GenerationStopped
    from automonitor.runs.generation.engine import GenerationSpec, create_generation, execute_generation

    url = f"sqlite:///{tmp_path / 'store.db'}"
    eng = open_store(url)
    with ScriptedGenerator(sycophancy_script(2), status=401) as srv:
        spec = GenerationSpec(
            kind="sycophancy",
            generator="openai:scripted-gen",
            source="bct_truthfulqa_cues",
            limit=2,
            base_url=srv.base_url,
        )
        with pytest.raises(GenerationStopped, match="refused the call"):
            execute_generation(eng, create_generation(eng, spec))
    with StoreEnv(url):
        at = ok(app("pages/generation.py").run())
    (err,) = [e.value for e in at.error]
    assert err.replace("\\", "").endswith("ended failed; why, and the fix:")
    # the line as plain text, as stored: the URL copies without markdown escapes or invisible joiners
    (line,) = [c.value for c in at.code if "GenerationStopped" in c.value]
    assert line.startswith("GenerationStopped: stopped: the generator at http://127.0.0.1:") and "\u2060" not in line
    assert "Error code: 401" in line and "check --generator, --base-url" in line
    assert "No item processed: the run ended failed first." in [c.value for c in at.caption]
    assert at.dataframe[0].value["status"].tolist() == ["failed"]
    eng.dispose()


def test_generation_page_lists_the_runs_generate_list_prints(store_with_generation, capsys):
    """The Generation page lists every generation run with the rows ``automonitor generate list`` prints (one
    core view, ``views.generation_list_rows``): status, source, generator, kept and dropped items, start and
    end, newest first: a finished run and a pending one (not started: no times) (trial: the page showed no
    start or end, and only the CLI listed the runs as rows of its own)."""
    from automonitor.cli import main
    from automonitor.runs.generation.engine import GenerationSpec, create_generation
    from automonitor.views.cells import MISSING

    eng, done = store_with_generation["engine"], store_with_generation["run_id"]
    pending = create_generation(
        eng,
        GenerationSpec(
            kind="gaming",
            generator="openai:other-gen",
            source="mbpp",
            incentive="tests_only",
            limit=1,
            base_url="http://127.0.0.1:9",
        ),
    )
    at = ok(app("pages/generation.py").run())
    assert "Generation runs" in [s.value for s in at.subheader]
    cols = ["generation_id", "status", "source", "generator", "kept", "dropped", "started_at", "finished_at"]
    table = at.dataframe[0].value[cols].to_dict("records")
    assert [r["generation_id"] for r in table] == [pending, done]  # newest first
    # the headers are the CLI line's words, not the JSON keys (trial: the first header read "generation_id")
    labels = {k: v.get("label") for k, v in json.loads(at.dataframe[0].proto.columns).items()}
    assert {k: labels.get(k) for k in ("generation_id", "kind", "candidates_added", "started_at")} == {
        "generation_id": "generation run",
        "kind": "recipe",
        "candidates_added": "pairs added",
        "started_at": "started",
    }
    assert table[0] | {"generation_id": None} == {
        "generation_id": None,
        "status": "pending",
        "source": "mbpp",
        "generator": "openai:other-gen",
        "kept": 0,
        "dropped": 0,
        "started_at": MISSING,
        "finished_at": MISSING,
    }
    fin = table[1]
    assert (fin["status"], fin["source"], fin["generator"]) == (
        "finished",
        "bct_truthfulqa_cues",
        "openai:scripted-gen",
    )
    assert (fin["kept"], fin["dropped"]) == (2, 2) and fin["started_at"] <= fin["finished_at"] != MISSING
    # the command prints the same rows (its first eight fields as before, then dropped, start and end)
    assert main(["generate", "list"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [x[0] for x in lines] == [pending, done]
    for line, row in zip(lines, table, strict=True):
        assert line[1] == row["status"] and line[3:5] == [row["generator"], row["source"]]
        assert (line[6], line[8]) == (f"{row['kept']} kept", f"{row['dropped']} dropped")
        start, end = (("-" if v == MISSING else v) for v in (row["started_at"], row["finished_at"]))
        assert line[9:] == [f"started {start}", f"finished {end}"]
