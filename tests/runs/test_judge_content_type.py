"""A judge answer served as ``text/html`` is no verdict (issue 37, finding 7): a valid Chat Completions
body behind a web page's content type (a proxy's or portal's page) is never scored, on every transport
(the lean default path and the SDK on its aiohttp and httpx clients). A real loopback OpenAI-compatible server."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Sample

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10, "max_attempts": 2}


@pytest.mark.parametrize("transport", ["direct", "sdk", "httpx"])
def test_a_completion_served_as_html_is_not_scored(sqlite_engine, transport):
    add_custom(
        sqlite_engine,
        [
            ("[scenario:html,html,html] page", "os.system('x')", "print(1)"),
            ("plain q", "os.system('ls')", "subprocess.run(['ls'])"),
        ],
    )
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine,
            "openai:gpt-4o-mini",
            "direct",
            base_url=srv.base_url,
            params={**FAST, "transport": transport},
        )
        runner.execute_run(sqlite_engine, rid)
    with Session(sqlite_engine) as s:
        req = {x.id: x.request for x in s.exec(select(Sample))}
        preds = [(req[p.sample_id], p) for p in s.exec(select(Prediction).where(Prediction.run_id == rid))]
    html = [p for r, p in preds if r.startswith("[scenario:html")]
    plain = [p for r, p in preds if r == "plain q"]
    assert len(html) == 2 and all(p.outcome == "error" and p.score is None for p in html), [
        (p.outcome, p.reason) for p in html
    ]
    assert sorted(p.outcome for p in plain) == ["benign", "misbehavior"]
