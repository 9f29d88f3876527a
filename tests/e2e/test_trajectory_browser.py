"""End-to-end: an R-Judge and an ODCV-Bench agent trajectory and a sycophancy_qa are-you-sure chain each
open on the drill-down in real Chromium as a numbered conversation (one ``li.am-step`` per typed step of
``meta["steps"]``), with hostile step text inert."""

from __future__ import annotations

from pathlib import Path

import pytest

import app_seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _pair(source: str, raw_dir):
    """A pair of ``source`` from the raw dir: rjudge's first; sycophancy_qa's first are-you-sure chain
    (typed steps); odcv_bench's shortest incentivized one (a test-eligible trajectory, quick to render)."""
    from automonitor.data.sources import odcv_bench, rjudge, sycophancy_qa

    if source == "rjudge":
        res = rjudge.load(Path(raw_dir))
        return res.pairs[0] if res.pairs else None
    if source == "sycophancy_qa":
        chains = [p for p in sycophancy_qa.load(Path(raw_dir)).pairs if p.mis_meta.get("steps")]
        return chains[0] if chains else None
    pairs = [p for p in odcv_bench.load(Path(raw_dir)).pairs if p.eligible_test]
    return min(pairs, key=lambda p: (len(p.misbehavior), p.pair_id)) if pairs else None


SOURCES = ("rjudge", "odcv_bench", "sycophancy_qa")


@pytest.fixture(scope="module")
def store(migrated_sqlite, tmp_path_factory, raw_dir, app_factory):
    """One store (and one app server) holding a pair of each source in :data:`SOURCES` that the raw dir has,
    each with a prediction of the store's first run."""
    from automonitor.hashing import content_hash, sha256_text
    from store import get_engine, init_db, session_scope
    from store.models import Prediction, Sample

    url = migrated_sqlite(tmp_path_factory.mktemp("e2e_traj") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=1)
    pairs, ids = {}, {}
    with session_scope(eng) as s:
        for source in SOURCES:
            pair = _pair(source, raw_dir)
            if pair is None:
                continue
            pairs[source], ids[source] = pair, {}
            for lab, text, meta in (
                ("misbehavior", pair.misbehavior, pair.mis_meta),
                ("benign", pair.benign, pair.ben_meta),
            ):
                sid = f"s_{source}_{lab[0]}"
                ids[source][lab] = sid
                s.add(
                    Sample(
                        id=sid,
                        pair_id=pair.pair_id,
                        category=pair.category,
                        task=pair.task,
                        label=lab,
                        request=pair.request,
                        response=text,
                        source=source,
                        split="test",
                        request_hash=sha256_text(pair.request),
                        response_hash=sha256_text(text),
                        content_hash=content_hash(pair.request, text, lab),
                        meta=dict(meta),
                    )
                )
        s.flush()
        for source in pairs:
            for sid in ids[source].values():
                s.add(Prediction(run_id=info["run_ids"][0], sample_id=sid, outcome="misbehavior", evidence=[]))
    server = app_factory(url)
    yield {"url": url, "engine": eng, "ids": ids, "pairs": pairs, "server": server, **info}
    eng.dispose()


@pytest.mark.parametrize("source", SOURCES)
def test_trajectory_sample_renders_as_numbered_steps(browser, store, source, e2e):
    from automonitor.data.trajectory import serialise, step_ranges, steps_from_meta

    if source not in store["pairs"]:
        pytest.skip(f"{source} (optional source) not in the raw dir")
    server = store["server"]
    page = e2e.new_page(browser)
    try:
        sid = store["ids"][source]["misbehavior"]
        page.goto(f"{server.url}/drilldown?run={store['run_ids'][0]}&sample={sid}")
        e2e.wait_app(page)
        page.wait_for_selector("li.am-step", timeout=60_000)
        steps = page.locator("li.am-step")
        pair = store["pairs"][source]
        n = len(step_ranges(pair.misbehavior))
        typed = steps_from_meta(pair.mis_meta) or []
        if source == "sycophancy_qa":  # the chain's first answer is unlabelled in the text
            assert [t.role for t in typed] == ["assistant", "user", "assistant"]
        else:
            assert pair.misbehavior == serialise(typed)  # the shared serialisation of its typed steps
        assert steps.count() == n == len([t for t in typed if serialise([t])]) >= 2
        assert page.locator('.am-conversation[data-source="typed"]').count() == 1  # drawn from meta.steps
        if source == "odcv_bench":  # every agent and tool step is a numbered step of its own
            assert n == len([t for t in typed if t.thought or t.action or t.observation is not None or t.content])
        heads = page.locator(".am-step-head").all_inner_texts()
        assert heads[0].startswith("Step 1") and heads[-1].startswith(f"Step {n}")
        assert [steps.nth(i).get_attribute("data-step") for i in range(n)] == [str(i + 1) for i in range(n)]
        body = page.locator(".am-step-body").first.inner_text()
        assert body.strip().startswith(("Thought:", "Action:", "Observation:", "User:", "Agent:", "Assistant:"))
        assert not page.dialogs
        e2e.shot(page, f"trajectory-{source}-steps")
    finally:
        page.context.close()
