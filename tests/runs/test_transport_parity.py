"""The lean HTTP path (``--param transport=direct``, the default) and the official SDK path
(``transport=sdk``, its aiohttp transport; ``httpx``, its default one) against the real loopback
OpenAI-compatible servers of tests/servers: every failure mode maps to the same error (closed port, DNS,
TLS, 401/403/404, 429 ``insufficient_quota``, 429 with Retry-After, 5xx, a read timeout, a reset, a
truncated or non-JSON body), every answer reads the same, and the lean path never imports the SDK."""

from __future__ import annotations


import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.runs.monitors import create_backend
from automonitor.runs.monitors.http_api import classify_sdk_error
from automonitor.runs.monitors.judgement import Item, PermanentError, TransientError
from automonitor.runs.monitors.openai_backend import body_json, split_body
from automonitor.runs.prompts import PromptBuilder, load_template
from servers.llamacpp_server import free_port
from helpers import judge_once
from servers.openai_fault import OpenAIFaultServer

TRANSPORTS = ("direct", "sdk", "httpx")
REPO = Path(__file__).resolve().parents[2]


def _outcome(base_url: str, transport: str, scenario: str, *, timeout: float = 5.0, template: str = "direct"):
    """One judge call of a fresh backend: ``("answer", fields)`` or ``("error", fields)`` with the mapped
    error's class, kind, HTTP status, code, Retry-After and run-wide flag."""
    b = create_backend(
        "openai:gpt-4o-mini",
        base_url=base_url,
        params={"transport": transport, "timeout": timeout},
        prompt=PromptBuilder(load_template(template)),
    )
    item = Item(
        sample_id="s1",
        request=f"[scenario:{scenario}] Is this fine?",
        response="os.system('rm -rf /tmp/x')",
        content_hash="h",
        repeat=0,
    )

    try:
        j = judge_once(b, item)
    except Exception as exc:  # noqa: BLE001
        e = classify_sdk_error(exc)
        assert isinstance(e, (TransientError, PermanentError)), repr(e)
        return (
            "error",
            {
                "class": type(e).__name__,
                "kind": getattr(e, "kind", None),
                "status": getattr(e, "status", None),
                "code": getattr(e, "code", None),
                "retry_after": getattr(e, "retry_after", None),
                "run_wide": getattr(e, "run_wide", None),
            },
        )
    meta = {k: v for k, v in j.meta.items() if k != "latency_s"}
    return (
        "answer",
        {
            "outcome": j.outcome,
            "score": j.score,
            "raw": j.raw,
            "reason": j.reason,
            "evidence": j.evidence,
            "tokens": (j.tokens_in, j.tokens_out),
            "cost": j.cost_usd,
            "meta": meta,
            "cacheable": j.cacheable,
        },
    )


# (scenario, expected mapping on every transport)
HTTP_FAILURES = [
    ("401", ("PermanentError", None, 401, "invalid_api_key")),
    ("403", ("PermanentError", None, 403, "model_not_allowed")),
    ("404", ("PermanentError", None, 404, "model_not_found")),
    ("quota", ("PermanentError", None, 429, "insufficient_quota")),
    ("400", ("PermanentError", None, 400, None)),
    ("429", ("TransientError", "rate_limit", 429, None)),
    ("500", ("TransientError", "server", 500, None)),
    ("529", ("TransientError", "overloaded", 529, None)),
    ("html502", ("TransientError", "server", 502, None)),
    ("truncated", ("TransientError", "malformed", None, None)),
    ("garbage", None),
    ("html", ("TransientError", "malformed", None, None)),
    ("reset", ("TransientError", "connection", None, None)),
]


@pytest.mark.parametrize("scenario,expected", HTTP_FAILURES, ids=[s for s, _e in HTTP_FAILURES])
def test_every_http_failure_maps_the_same_on_every_transport(scenario, expected):
    with OpenAIFaultServer(retry_after=0.25) as srv:
        got = {t: _outcome(srv.base_url, t, scenario) for t in TRANSPORTS}
    assert got["direct"] == got["sdk"] == got["httpx"], got
    kind, fields = got["direct"]
    if expected is None:  # whatever the SDK makes of it, the lean path makes the same (checked above)
        return
    assert kind == "error"
    assert (fields["class"], fields["kind"] if fields["class"] == "TransientError" else None) == expected[:2]
    assert fields["status"] == expected[2]
    if expected[3] is not None:
        assert fields["code"] == expected[3]
    if scenario == "429":
        assert fields["retry_after"] == pytest.approx(0.25)


def test_a_read_timeout_maps_the_same_on_every_transport():
    with OpenAIFaultServer(timeout_sleep=1.5) as srv:
        got = {t: _outcome(srv.base_url, t, "timeout", timeout=0.4) for t in TRANSPORTS}
    assert got["direct"] == got["sdk"] == got["httpx"], got
    assert got["direct"][0] == "error" and got["direct"][1]["kind"] == "timeout"


def test_closed_port_dns_and_tls_failures_are_connection_errors_on_every_transport(monkeypatch):
    """A closed port, a name that does not resolve (RFC 2606 ``.invalid``) and TLS spoken to a plain
    HTTP server: a ``connection`` failure without an HTTP status on every transport (the runner's
    "no call reached the judge" rule reads exactly that)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")  # a remote host needs a key to be tried
    with OpenAIFaultServer() as srv:
        urls = {
            "closed port": f"http://127.0.0.1:{free_port()}/v1",
            "dns": "http://automonitor-no-such-host.invalid/v1",
            "tls": f"https://127.0.0.1:{srv.port}/v1",
        }
        for what, url in urls.items():
            got = {t: _outcome(url, t, "ok", timeout=5) for t in TRANSPORTS}
            for t, (kind, fields) in got.items():
                assert kind == "error", (what, t, fields)
                assert (fields["class"], fields["kind"], fields["status"]) == ("TransientError", "connection", None), (
                    what,
                    t,
                    fields,
                )
        assert srv.stats()["total"] == 0  # the TLS handshake never became a request


@pytest.mark.parametrize(
    "scenario,template",
    [
        ("ok", "direct"),
        ("ok", "evidence"),
        ("ok", "paper-direct"),
        ("parts", "direct"),
        ("filtered", "direct"),
        ("length", "direct"),
        ("length", "evidence"),
        ("thinkcut", "direct"),
        ("empty", "direct"),
        ("negtokens", "direct"),
        ("refuse", "direct"),
        ("contradict", "evidence"),
    ],
)
def test_every_answer_reads_the_same_on_every_transport(scenario, template):
    """Stop reasons (stop, length, content_filter), list-shaped content with a thinking part, usage
    (clamped negative counts), log-probability scores, refusals and JSON answers: one judgement."""
    with OpenAIFaultServer() as srv:
        got = {t: _outcome(srv.base_url, t, scenario, template=template) for t in TRANSPORTS}
        bodies = [json.dumps(b, sort_keys=True) for b in srv.requests]
    assert got["direct"] == got["sdk"] == got["httpx"], got
    assert got["direct"][0] == "answer"
    assert len(set(bodies)) == 1 and len(bodies) == len(TRANSPORTS)  # the same request on every path


def test_tool_calls_and_reasoning_models_send_and_read_the_same():
    """A forced ``record_verdict`` tool call, and a reasoning model (``max_completion_tokens``, no
    temperature, no logprobs; OpenAI's 400s for the rest): the same bodies, the same judgements."""

    def one(transport: str, model: str, structured: str | None, reasoning: bool):
        with OpenAIFaultServer() as srv:
            srv.reasoning = reasoning
            params = {"transport": transport, "timeout": 5, **({"structured": structured} if structured else {})}
            b = create_backend(
                f"openai:{model}", base_url=srv.base_url, params=params, prompt=PromptBuilder(load_template("evidence"))
            )
            item = Item(sample_id="s", request="Fix it", response="os.system('x')", content_hash="h", repeat=0)
            j = judge_once(b, item)
            return (j.outcome, j.score, j.raw, j.evidence, {k: v for k, v in j.meta.items() if k != "latency_s"}), [
                json.dumps(x, sort_keys=True) for x in srv.requests
            ]

    for model, structured, reasoning in (("gpt-4o-mini", "tools", False), ("o4-mini", None, True)):
        got = {t: one(t, model, structured, reasoning) for t in TRANSPORTS}
        assert got["direct"] == got["sdk"] == got["httpx"], got
        (outcome, _score, raw, _ev, meta), bodies = got["direct"]
        assert outcome == "misbehavior"
        if structured == "tools":
            assert '"tool": "record_verdict"' in raw and all('"tool_choice"' in b for b in bodies)
        else:
            assert all('"max_completion_tokens"' in b and '"temperature"' not in b for b in bodies)


_JOB = textwrap.dedent(
    """
    import json, sys, tempfile
    from automonitor.runs import runner
    from servers.data import add_pairs
    from servers.openai_fault import OpenAIFaultServer
    from store import get_engine, init_db

    transport = sys.argv[1]
    engine = init_db(get_engine(f"sqlite:///{tempfile.mkdtemp()}/lean.db", fresh=True))
    add_pairs(engine, 3)
    params = {"backoff_initial": 0.01, "timeout": 10}
    if transport != "default":
        params["transport"] = transport
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=params)
        out = runner.execute_run(engine, rid)
        calls = srv.stats()["total"]
    print(json.dumps({"counts": out["counts"], "calls": calls,
                      "modules": sorted(m for m in ("openai", "httpx", "httpx_aiohttp") if m in sys.modules)}))
    """
)


def _job(transport: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", "OPENAI_API_KEY": ""}
    p = subprocess.run(
        [sys.executable, "-c", _JOB, transport], capture_output=True, text=True, env=env, timeout=120, cwd=REPO
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_judge_job_on_the_lean_default_never_imports_the_sdk():
    lean = _job("default")
    assert lean["counts"]["misbehavior"] == lean["counts"]["benign"] == 3 and lean["calls"] == 6
    assert lean["modules"] == [], lean  # no openai, no httpx: no SDK client was made
    sdk = _job("sdk")  # the control: the SDK path does import it (so the check above can fail)
    assert sdk["counts"] == lean["counts"] and "openai" in sdk["modules"]


@pytest.mark.parametrize("transport", ["sdk", "aiohttp", "httpx", "direct"])
def test_transport_names_are_accepted_and_an_unknown_one_is_refused(transport):
    from automonitor.errors import InputError

    b = create_backend(
        "openai:m",
        base_url="http://127.0.0.1:9/v1",
        params={"transport": transport},
        prompt=PromptBuilder(load_template("direct")),
    )
    assert (b._direct is not None) == (transport == "direct")
    with pytest.raises(InputError):
        create_backend(
            "openai:m",
            base_url="http://127.0.0.1:9/v1",
            params={"transport": "curl"},
            prompt=PromptBuilder(load_template("direct")),
        )


_JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text()
_JSON_VALUE = st.recursive(
    _JSON_LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)


@settings(max_examples=400, deadline=None)
@given(body=st.dictionaries(st.text(max_size=12), _JSON_VALUE, max_size=6))
def test_the_lean_path_sends_the_text_json_dumps_gives(body):
    """``body_json`` (the lean path's request body, one C encoder made once) is ``json.dumps(body)``
    character for character: any keys, nesting, non-ASCII text, NaN and infinities."""
    assert body_json(body) == json.dumps(body)


def test_the_lean_path_encodes_a_judge_request_as_json_dumps_does():
    """A judge request as :meth:`OpenAIBackend._request` builds it (prompt texts with quotes, newlines and
    non-ASCII characters) goes out as ``json.dumps`` writes it; a value JSON cannot hold fails the same way."""
    b = create_backend(
        "openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", params={}, prompt=PromptBuilder(load_template("direct"))
    )
    system, user, _ = b.prompt.chat_messages('print("héllo")\n\tdone', "Ran `rm -rf /tmp/x` — ok ✓")
    body = b._request(system, user)
    assert body_json(body) == json.dumps(body)
    with pytest.raises(TypeError):
        body_json({"x": object()})
    with pytest.raises(TypeError):
        json.dumps({"x": object()})


@settings(max_examples=300, deadline=None)
@given(
    system=st.text(),
    first=st.text(),
    user=st.text(),
    extra=st.dictionaries(st.sampled_from(["seed", "temperature", "logprobs", "x"]), _JSON_VALUE, max_size=4),
)
def test_a_request_body_split_around_its_user_text_encodes_any_user_text_as_json_dumps(system, first, user, extra):
    """``split_body`` of a request body (checked on it) cut around its user text: the text before and after,
    with any other user text encoded between them, is ``json.dumps`` of the same body with that text, character
    for character (non-ASCII, quotes, control characters, lone surrogates); a body of another shape is not split."""
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": first}],
        "max_tokens": 64,
        **extra,
    }
    parts = split_body(body)
    assert len(parts) == 2
    other = {**body, "messages": [body["messages"][0], {"role": "user", "content": user}]}
    assert parts[0] + json.encoder.encode_basestring_ascii(user) + parts[1] == json.dumps(other)
    assert split_body({**body, "messages": body["messages"][:1]}) == ()
    assert split_body({**body, "messages": [body["messages"][0], {"role": "user", "content": [first]}]}) == ()


def test_the_lean_path_sends_each_request_as_json_dumps_of_its_body():
    """Requests of one lean-path backend with different texts (quotes, newlines, non-ASCII) and repeats (a seed
    each) reach the judge as ``json.dumps`` of the body :meth:`OpenAIBackend._request` builds for them, byte for
    byte (the text around the user message is made once per request state, seed and system prompt)."""
    import asyncio

    texts = [("print('x')", "ok"), ('say "hé"\n\tdone', "Ran `rm -rf /` — ✓"), ("a\u0000b", "tab\there")]

    async def go(backend) -> None:
        try:
            for rep in (0, 1, 0, 2):
                for k, (req, resp) in enumerate(texts):
                    item = Item(sample_id=f"s{k}", request=req, response=resp, content_hash=f"h{k}", repeat=rep)
                    await backend.judge(item, lambda: None)
        finally:
            await backend.aclose()

    with OpenAIFaultServer() as srv:
        b = create_backend(
            "openai:gpt-4o-mini", base_url=srv.base_url, params={}, prompt=PromptBuilder(load_template("direct"))
        )
        asyncio.run(go(b))
        sent = list(srv.raw_requests)
    want = []
    for rep in (0, 1, 0, 2):
        for req, resp in texts:
            system, user, _ = b.prompt.chat_messages(req, resp)
            body = b._request(system, user)
            body["seed"] += rep
            want.append(json.dumps(body).encode())
    assert sent == want


def test_the_lean_path_sends_the_sdks_key_and_content_type_on_every_request(monkeypatch):
    """The key as a bearer token and ``Content-Type: application/json`` on each request of one lean-path
    session (the session's own headers, given once) as on the SDK's, for a loopback judge (a dummy key) and
    a key from ``OPENAI_API_KEY``; a query string in the base URL is kept."""

    async def two(backend) -> None:
        try:
            for sid in ("s1", "s2"):
                item = Item(sample_id=sid, request=f"req {sid}", response="os.system('x')", content_hash=sid, repeat=0)
                await backend.judge(item, lambda: None)
        finally:
            await backend.aclose()

    import asyncio

    for key in (None, "sk-test-key"):
        if key is None:
            monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        else:
            monkeypatch.setenv("OPENAI_API_KEY", key)
        seen = {}
        for transport in ("direct", "sdk"):
            with OpenAIFaultServer() as srv:
                b = create_backend(
                    "openai:gpt-4o-mini",
                    base_url=srv.base_url + "?api-version=1",
                    params={"transport": transport},
                    prompt=PromptBuilder(load_template("direct")),
                )
                asyncio.run(two(b))
                assert len(srv.headers) == 2 and all(p.endswith("/chat/completions?api-version=1") for p in srv.paths)
                seen[transport] = [(h.get("authorization"), h.get("content-type")) for h in srv.headers]
        assert seen["direct"] == seen["sdk"], seen
        assert seen["direct"][0] == seen["direct"][1]
        assert seen["direct"][0][0] == f"Bearer {key}" if key else seen["direct"][0][0].startswith("Bearer ")
        assert seen["direct"][0][1] == "application/json"
