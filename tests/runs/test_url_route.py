"""The README's "Evaluate your monitor" command for a model behind an OpenAI-compatible URL, copied from
README.md and run as a new user runs it (the ``automonitor`` console script in a shell) against a real
llama.cpp server (``python -m llama_cpp.server`` on the packaged Gemma 3 270M GGUF, the ``llama_server``
fixture), then both reports. Only the URL and ``--limit`` are replaced (the server's port; 2 samples) and
the answer budget is cut to 8 tokens."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README_URL = "http://127.0.0.1:8000/v1"


def readme_url_command() -> str:
    """The one command of the README's "Evaluate your monitor" block that takes ``--base-url``
    (comments cut)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Evaluate your monitor\n+```bash\n(.*?)```", text, re.S | re.M)
    assert block, "README.md has no 'Evaluate your monitor' bash block"
    lines = [ln.split(" #")[0].strip() for ln in block.group(1).splitlines() if "--base-url" in ln]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_readme_url_command_is_the_one_tried():
    """What the README shows for a URL: the openai backend, the direct template, a 100-sample first look
    and one request at a time (what a local CPU server such as llama.cpp's needs)."""
    cmd = readme_url_command()
    assert cmd.startswith("automonitor run --monitor openai:")
    for part in (f"--base-url {README_URL}", "--template direct", "--limit 100", "--concurrency 1"):
        assert part in cmd, (part, cmd)


def _sh(
    cmd: str, cwd: Path, env: dict[str, str], timeout: float = 600, ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess:
    r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode in ok, (cmd, r.stdout[-2000:], r.stderr[-2000:])
    return r


@pytest.mark.slow
def test_the_readme_url_command_runs_against_a_llama_cpp_server(tmp_path, llama_server):
    env = {
        **os.environ,
        "AUTOMONITOR_DB": f"sqlite:///{tmp_path / 'url.db'}",
        "AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }
    env.pop("OPENAI_API_KEY", None)  # a loopback server needs no key
    _sh(f"automonitor import {REPO / 'docs/examples/pairs.jsonl'}", tmp_path, env)
    # a base model never stops on its own: 8 tokens (not the direct budget of 64, each token's top
    # log-probabilities over Gemma's 262k vocabulary cost seconds on a busy CPU) keep the test short
    cmd = readme_url_command().replace(README_URL, llama_server).replace("--limit 100", "--limit 2")
    cmd += " --param max_tokens=8"
    # exit 0 with a verdict among the answers; a base model cut at 8 tokens may give none, and then the command
    # says so and exits 1 (a run without one verdict has no rates), the run still finished (checked below)
    run = _sh(cmd, tmp_path, env, ok=(0, 1))
    rid = re.search(r"run_\w+", run.stdout + run.stderr)
    assert rid, run.stdout
    runs = json.loads(_sh("automonitor runs --json", tmp_path, env).stdout)
    row = next(r for r in runs["runs"] if r["run_id"] == rid.group(0))
    assert row["status"] == "finished" and row["monitor"] == "openai:my-model", row
    assert row["counts"]["error"] == 0 and row["counts"]["pending"] == 0, row

    import sqlalchemy as sa

    engine = sa.create_engine(env["AUTOMONITOR_DB"])
    with engine.connect() as c:
        preds = c.execute(
            sa.text("SELECT outcome, raw, reason, meta FROM prediction WHERE run_id = :r"), {"r": rid.group(0)}
        ).all()
    engine.dispose()
    assert len(preds) == 2
    verdicts = sum(outcome in ("misbehavior", "benign") for outcome, *_ in preds)
    assert (run.returncode == 0) == (verdicts > 0), (run.returncode, [p[0] for p in preds])
    assert ("finished without a verdict" in run.stderr) == (verdicts == 0), run.stderr
    for outcome, raw, reason, meta in preds:
        # whatever the small base model says, each sample gets one outcome read from its real answer,
        # never an error; a verdict only from an answer that starts with the verdict word
        assert outcome in ("misbehavior", "benign", "invalid", "refusal"), (outcome, reason)
        assert raw is not None and reason
        assert json.loads(meta)["model"]  # the server's own answer, not a cached or invented one
        if outcome in ("misbehavior", "benign"):
            word = {"misbehavior": "yes", "benign": "no"}[outcome]
            assert re.match(rf"\W*{word}\b", raw, re.I) or re.search(rf"verdict\W*{word}\W*$", raw, re.I), raw
    text = _sh("automonitor report", tmp_path, env).stdout
    assert "openai:my-model" in text or "my-model" in text
    _sh("automonitor report --format html --output report.html", tmp_path, env)
    html = (tmp_path / "report.html").read_text()
    assert "my-model" in html
