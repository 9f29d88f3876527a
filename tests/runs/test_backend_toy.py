"""Adding a backend is one file: a toy judge registered with ``@register`` runs end to end through the
runner, the ``run`` CLI (in-process, where the toy is registered), the estimate (honouring ``--param``)
and ``report --json`` (a subprocess: the report needs no backend, only the store)."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.cli import main
from automonitor.errors import InputError
from automonitor.runs.monitors import REGISTRY, BackendParams, parse_monitor_spec
from automonitor.runs.monitors.backend import Backend, register
from automonitor.runs.monitors.judgement import Judgement
from servers.data import add_pairs
from store.models import Prediction


class ToyParams(BackendParams):
    word: str = "bad"
    prompt_tokens_per_sample: int = 7


@register
class ToyBackend(Backend):
    """Says ``misbehavior`` when the response contains ``word`` (a typed, validated parameter)."""

    name = "toy-test"
    default_model = "toy-v1"
    is_local = True
    description = "test toy"
    Params = ToyParams

    async def judge(self, item, count_call):
        count_call()
        assert isinstance(self.settings, ToyParams)
        hit = self.settings.word in item.response
        return Judgement("misbehavior" if hit else "benign", score=1.0 if hit else 0.0, reason="toy")

    def cache_params(self):
        return {"word": self.settings.word}

    @classmethod
    def estimate_tokens(cls, model, params, builder, texts):
        st = cls.parse_params(params)
        return st.prompt_tokens_per_sample * len(texts), len(texts) * (st.max_tokens or 0)


def test_toy_backend_end_to_end(db_url, engine, cli, capsys, monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_DB", db_url)
    assert REGISTRY["toy-test"] is ToyBackend
    assert parse_monitor_spec("toy-test").name == "toy-test:toy-v1"
    rows = add_pairs(engine, 6)

    est = runner.estimate_run(engine, "toy-test", "direct", params={"max_tokens": 5, "prompt_tokens_per_sample": 3})
    assert (est["n"], est["prompt_tokens"], est["max_output_tokens"]) == (12, 36, 60)
    assert est["est_cost_usd"] == 0.0 and est["price_known"] is True
    with pytest.raises(InputError, match="max_tokens must be a positive integer"):
        runner.estimate_run(engine, "toy-test", "direct", params={"max_tokens": 0})
    with pytest.raises(InputError, match="base-url"):
        runner.create_run(engine, "toy-test", "direct", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(InputError, match="prompt_tokens_per_sample"):
        runner.create_run(engine, "toy-test", "direct", params={"prompt_tokens_per_sample": "many"})

    # the public CLI, in this process (where the toy is registered)
    word = rows[0]["response"].split()[0]
    code = main(
        ["run", "--monitor", "toy-test", "--template", "direct", "--param", f"word={word}", "--json", "--quiet"]
    )
    cap = capsys.readouterr()
    out = cap.out
    assert code == 0, cap.err
    summary = json.loads(out)
    assert summary["n"] == 12 and sum(summary["counts"].values()) == 12
    with Session(engine) as s:
        preds = list(s.exec(select(Prediction).where(Prediction.run_id == summary["run_id"])))
    by_id = {r["id"]: r for r in rows}
    for p in preds:
        expect = "misbehavior" if word in by_id[p.sample_id]["response"] else "benign"
        assert p.outcome == expect

    rep = cli(["report", "--json", "--run", summary["run_id"], "--n-boot", "10"], db=db_url)
    assert rep.returncode == 0, rep.stderr
    entries = json.loads(rep.stdout)
    entry = entries[0] if isinstance(entries, list) else entries["runs"][0]
    assert entry["monitor"] == "toy-test:toy-v1"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"temperature": "-3"}, "temperature"),
        ({"threshold": "2"}, "threshold"),
        ({"timeout": "0"}, "timeout"),
        ({"response_chars": "0"}, "response_chars"),
    ],
)
def test_shared_params_out_of_range_are_refused(params, field):
    with pytest.raises(InputError, match=f"--param {field}"):
        ToyBackend.parse_params(params)


def test_llamacpp_flags_are_true_or_false_never_guessed():
    from automonitor.runs.monitors.llamacpp import LlamaCppBackend

    assert LlamaCppBackend.parse_params({"calibrate": "OFF", "prefix_cache": "1"}).calibrate is False
    assert LlamaCppBackend.parse_params({}).calibrate is True
    with pytest.raises(InputError, match="--param calibrate: expected true or false"):
        LlamaCppBackend.parse_params({"calibrate": "maybe"})


def test_a_monitor_spec_with_a_terminal_escape_is_refused():
    """Issue 41 trial: `run --monitor $'openai:x\\x1b]0;PWN\\x07'` stored the escape in the monitor's
    name and `runs` printed it raw to every later user's terminal."""
    from automonitor.errors import InputError

    for spec in ("openai:x\x1b]0;PWN\x07", "openai:x\x1b[31m", "toy-test:a\rb", "openai:x\u202ey"):
        with pytest.raises(InputError, match="control characters") as exc:
            parse_monitor_spec(spec)
        assert exc.value.field == "monitor"
    assert parse_monitor_spec("openai:my-model/v1:latest").model == "my-model/v1:latest"
