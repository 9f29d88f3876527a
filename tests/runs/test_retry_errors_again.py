"""A ``--retry-errors`` whose judge fails again (fresh-user trial 44): before, a retry against a judge that could
not be reached made the run's errors pending and left them so, the run ``failed`` with a ``--resume`` hint and
``error`` 0 (the report then counted them pending, as if never judged). Now each sample re-sent ends ``error``
again with this attempt recorded beside the earlier ones, each one never sent (the run stopped before its turn)
is again the error it was, nothing is pending, the run is ``failed`` saying how many are still errors and
naming ``--retry-errors``, and the command exits 1 (it did not reach its judge). Real CLI, a real
OpenAI-compatible server (``servers.openai_fault``), SQLite and PostgreSQL."""

from __future__ import annotations

import json

import sqlalchemy as sa

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction

FAST = ["--param", "backoff_initial=0.01", "--param", "backoff_max=0.02", "--param", "max_attempts=2"]


def _predictions(engine, run_id: str) -> list[dict]:
    table = Prediction.__table__
    with engine.connect() as c:
        rows = c.execute(sa.select(table).where(table.c.run_id == run_id)).mappings().all()
    return [dict(r) for r in rows]


def _meta(row: dict) -> dict:
    meta = row["meta"]
    return json.loads(meta) if isinstance(meta, str) else dict(meta or {})


def test_a_retry_that_errors_again_records_its_errors_and_exits_1(db_url, engine, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 3)
    with OpenAIFaultServer() as srv:
        srv.force = "500"
        args = ["run", "--monitor", "openai:m", "--template", "direct", "--base-url", srv.base_url, "--json"]
        first = run_cli(args + FAST + ["--quiet"], db=db_url)
        port = srv.port
    assert first.returncode == 1, first.stderr
    rid = json.loads(first.stdout)["run_id"]
    assert runner.run_info(engine, rid)["counts"]["error"] == 6

    # the judge is gone now: nothing listens on its port
    again = run_cli(["run", "--retry-errors", rid, "--quiet"], db=db_url)
    assert again.returncode == 1, again.stderr
    info = runner.run_info(engine, rid)
    assert info["status"] == "failed", info
    assert info["counts"]["error"] == 6 and info["counts"]["pending"] == 0, info["counts"]
    assert sum(info["counts"][v] for v in ("misbehavior", "benign")) == 0  # an error is never a verdict
    error = str(info.get("error"))
    assert "no call reached the judge" in error, error
    assert error.endswith("6 sample(s) are still errors") and f"automonitor run --retry-errors {rid}" in error
    assert "--resume" not in error, error  # nothing is pending: a resume would do nothing
    assert [ln for ln in again.stderr.splitlines() if "failed:" in ln] == [f"run {rid} failed: {error}"]

    rows = _predictions(engine, rid)
    resent = [r for r in rows if not _meta(r).get("not_resent")]
    unsent = [r for r in rows if _meta(r).get("not_resent")]
    assert resent, "the retry sent no request"
    for r in resent:  # this attempt recorded, the earlier one in its history
        meta = _meta(r)
        assert r["outcome"] == "error" and meta["code"] == "never_reached" and meta["attempts"] >= 1, meta
        assert [h["outcome"] for h in meta["history"]] == ["error"] and meta["history"][0]["status"] == 500
    for r in unsent:  # never re-sent: the error it was
        meta = _meta(r)
        assert r["outcome"] == "error" and meta.get("status") == 500 and "history" not in meta, meta
        assert r["judged_at"] is not None and r["reason"]

    # the judge is back: the same command judges every one of them, each keeping its earlier attempts
    with OpenAIFaultServer(port=port):
        fixed = run_cli(["run", "--retry-errors", rid, "--quiet"], db=db_url)
    assert fixed.returncode == 0, fixed.stderr
    info = runner.run_info(engine, rid)
    assert info["status"] == "finished" and info["counts"]["misbehavior"] == info["counts"]["benign"] == 3
    histories = {r["sample_id"]: len(_meta(r)["history"]) for r in _predictions(engine, rid)}
    resent_ids = {r["sample_id"] for r in resent}
    assert histories == {sid: (2 if sid in resent_ids else 1) for sid in histories}, histories
