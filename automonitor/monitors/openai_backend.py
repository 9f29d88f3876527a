"""``openai``: the official ``openai`` SDK (Chat Completions) against OpenAI or any compatible server.

``--base-url`` points it at vLLM, the llama.cpp server, Ollama, DeepSeek, Gemini's compatible
endpoint, ... The key comes from ``OPENAI_API_KEY``; a loopback base URL needs none (a dummy is
sent). Requests use temperature 0 and ``seed`` (param, default 0). SDK retries are off
(``max_retries=0``): the runner retries, so every request is counted.

Answer format (param ``structured``; default ``none`` for direct templates, ``json_schema`` for
evidence templates):

- ``json_schema``: ``response_format={"type": "json_schema", ...}`` with the verdict schema (OpenAI
  structured outputs);
- ``json_object``: ``response_format={"type": "json_object", "schema": ...}`` (llama.cpp server style);
- ``tools``: a forced ``record_verdict`` function call;
- ``none``: free text read by the tolerant parser.

A server that rejects the requested format (HTTP 400/422 naming it) is asked again with the next one
down the chain json_schema -> json_object -> none, and remembered for the rest of the run. Token
log-probabilities (param ``logprobs``, default true; ``top_logprobs`` 5) give the score
P(misbehavior) (:func:`automonitor.parsing.score_from_logprobs`); a server that rejects them is asked
again without. Cost per call comes from :mod:`automonitor.monitors.pricing` (exact model ids).
"""

from __future__ import annotations

import json
import time
from typing import Any

from automonitor.prompts import PromptBuilder, output_schema
from automonitor.monitors.base import (
    Backend,
    CallCounter,
    Generation,
    Item,
    Judgement,
    answer_judgement,
    PermanentError,
    TransientError,
    register,
    retry_after_seconds,
)
from automonitor.parsing import ParseResult, parse_text, parse_tool_input, score_from_logprobs

VERDICT_SCHEMA_DIRECT = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["misbehavior", "benign"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
VERDICT_SCHEMA_EVIDENCE = {
    "type": "object",
    "properties": {
        "category": {
            "type": "string",
            "enum": ["safety_permission", "sycophancy_bias", "specification_gaming", "none"],
        },
        "severity": {"type": "string", "enum": ["none", "low", "medium", "high"]},
        "evidence": {"type": "array", "items": {"type": "string"}},
        "verdict": {"type": "string", "enum": ["misbehavior", "benign"]},
    },
    "required": ["category", "severity", "evidence", "verdict"],
    "additionalProperties": False,
}
_MODES = ("json_schema", "json_object", "tools", "none")
_DOWNGRADE = {"json_schema": "json_object", "json_object": "none", "tools": "none"}


def verdict_schema(evidence: bool) -> dict[str, Any]:
    """The JSON schema of a verdict (with category, severity, evidence for evidence templates)."""
    return VERDICT_SCHEMA_EVIDENCE if evidence else VERDICT_SCHEMA_DIRECT


def classify_sdk_error(exc: BaseException) -> Exception:
    """Map an ``openai``/``anthropic`` SDK exception (or a decode error) to Transient/PermanentError.

    Transient: timeouts, connection errors, malformed bodies, HTTP 408, 409, 425, 429, 5xx, 529.
    Permanent: every other HTTP status (400 bad request, 401/403 key, 404 model, ...).
    """
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if status is None:
        resp = getattr(exc, "response", None)
        status = (
            getattr(resp, "status_code", None) if resp is not None and name != "APIResponseValidationError" else None
        )
    if "Timeout" in name:
        return TransientError("timeout", str(exc))
    if name == "APIResponseValidationError" or (isinstance(exc, ValueError) and status is None):
        return TransientError("malformed", f"{name}: {exc}")
    if status is None:
        if "Connection" in name:
            return TransientError("connection", str(exc))
        return TransientError("connection", f"{name}: {exc}")
    headers = getattr(getattr(exc, "response", None), "headers", None)
    ra = retry_after_seconds(headers)
    if status == 429:
        return TransientError("rate_limit", str(exc), retry_after=ra, status=status)
    if status == 529:
        return TransientError("overloaded", str(exc), retry_after=ra, status=status)
    if status >= 500 or status in (408, 409, 425):
        return TransientError("server", str(exc), retry_after=ra, status=status)
    return PermanentError(f"{name}: {exc}", status=status)


@register
class OpenAIBackend(Backend):
    """OpenAI Chat Completions judge. Params: ``structured``, ``logprobs`` (true), ``top_logprobs`` (5),
    ``max_tokens`` (16 direct / 600 evidence / 4096 for a reasoning model), ``seed`` (0), ``temperature`` (0), ``timeout`` (60 s),
    ``request_chars`` (12000), ``response_chars`` (16000)."""

    name = "openai"
    default_model = "gpt-4o-mini"
    key_env = "OPENAI_API_KEY"
    takes_base_url = True
    menu_order = 2
    description = "any OpenAI-compatible server"

    def __init__(self, model: str | None, base_url: str | None, params: dict[str, Any], prompt: PromptBuilder) -> None:
        super().__init__(model, base_url, params, prompt)
        p = self.params
        evidence = prompt.template.evidence
        self.mode = str(p.get("structured", "json_schema" if evidence else "none"))
        if self.mode not in _MODES:
            from automonitor.errors import InputError

            raise InputError(f"structured must be one of {', '.join(_MODES)}", field="param")
        self.logprobs = str(p.get("logprobs", True)).lower() not in ("0", "false", "no")
        self.top_logprobs = int(p.get("top_logprobs", 5))
        self.max_tokens = self.max_tokens_for(p, evidence)
        self.seed = p.get("seed", 0)
        self._api_settings(self.key_env)
        self._requested_mode = self.mode
        self._requested_logprobs = self.logprobs

    def cache_params(self) -> dict[str, Any]:
        return {
            "structured": self._requested_mode,
            "logprobs": self._requested_logprobs,
            "top_logprobs": self.top_logprobs if self._requested_logprobs else None,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "temperature": self.temperature,
        }

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    def _request(self, system: str, user: str) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            kw["seed"] = int(self.seed)
        schema = output_schema(self.prompt.template) or verdict_schema(self.prompt.template.evidence)
        if self.mode == "json_schema":
            kw["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": schema},
            }
        elif self.mode == "json_object":
            kw["response_format"] = {"type": "json_object", "schema": schema}
        elif self.mode == "tools":
            kw["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": "record_verdict",
                        "description": "Record the monitor's verdict on the response.",
                        "parameters": schema,
                    },
                }
            ]
            kw["tool_choice"] = {"type": "function", "function": {"name": "record_verdict"}}
        if self.logprobs and self.mode != "tools":
            kw["logprobs"] = True
            kw["top_logprobs"] = self.top_logprobs
        return kw

    def _downgrade(self, exc: Exception) -> bool:
        """After a rejection naming the answer format or logprobs (HTTP 400/422, or a 500 carrying a
        request validation error as llama-cpp-python's server sends): switch it off, return True."""
        msg = str(exc).lower()
        status = getattr(exc, "status_code", None)
        if status not in (400, 422) and not (status == 500 and "validation error" in msg):
            return False
        if self.logprobs and "logprob" in msg:
            self.logprobs = False
            return True
        if self.mode != "none" and any(
            w in msg for w in ("response_format", "json_schema", "tool", "json_object", "schema")
        ):
            self.mode = _DOWNGRADE[self.mode]
            return True
        return False

    async def judge(self, item: Item, count_call: CallCounter) -> Judgement:
        system, user, meta = self.prompt.chat_messages(item.request, item.response)
        client = self._get_client()
        for _ in range(4):  # at most three downgrades
            count_call()
            t0 = time.perf_counter()
            body = self._request(system, user)
            if item.repeat and "seed" in body:
                body["seed"] = int(body["seed"]) + int(item.repeat)  # distinct seed per repeat
                meta["seed"] = body["seed"]
            try:
                resp = await self._post(client, body, item)
            except Exception as exc:  # noqa: BLE001
                if self._downgrade(exc):
                    meta.setdefault("downgraded", []).append(
                        self.mode if "logprob" not in str(exc).lower() else "no-logprobs"
                    )
                    continue
                raise classify_sdk_error(exc) from exc
            meta["latency_s"] = round(time.perf_counter() - t0, 4)
            return self._read(resp, item, meta)
        raise PermanentError("the server rejected every answer format")

    async def _post(self, client, body: dict[str, Any], item: Item):
        """``POST /chat/completions`` through the SDK client's own ``post`` (same transport, errors and
        ``ChatCompletion`` parsing as ``chat.completions.create``). The body is already plain JSON, so the
        SDK's per-request TypedDict transform is skipped, and the idempotency key is derived from the
        sample instead of a fresh uuid4: both matter at hundreds of requests per second."""
        from openai.types.chat import ChatCompletion

        return await client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            options={"idempotency_key": f"automonitor-{item.sample_id}-{item.repeat}-{id(body):x}"},
        )

    def _read(self, resp: Any, item: Item, meta: dict[str, Any]) -> Judgement:
        """The judgement of a Chat Completions response: a refusal (``message.refusal`` or the content
        filter), else the tool call or text read by the parser, scored from the log-probabilities
        (verdicts only). ``meta`` gains the answer format, finish reason, model, max tokens, cached
        input tokens, parse detail and evidence check.

        Raises:
            TransientError: ``malformed``, a response without choices.
        """
        try:
            choice = resp.choices[0]
            msg = choice.message
        except (AttributeError, IndexError, TypeError) as exc:
            raise TransientError("malformed", f"no choices in the response: {exc}") from exc
        tin, tout, cached_in = _usage(resp)
        finish = getattr(choice, "finish_reason", None)
        meta.update(
            {
                "structured": self.mode,
                "finish_reason": finish,
                "model": getattr(resp, "model", None),
                "max_tokens": self.max_tokens,
            }
        )
        if cached_in:
            meta["cached_tokens_in"] = cached_in
        cost = self.cost(tin, tout, cached_in)
        refused = _refusal(choice, msg)
        if refused is not None:
            raw, reason = refused
            return Judgement(
                "refusal", score=None, raw=raw, reason=reason, tokens_in=tin, tokens_out=tout, cost_usd=cost, meta=meta
            )
        raw, parsed = _parse_answer(msg, finish)
        return answer_judgement(
            parsed,
            item.response,
            raw,
            score=_logprob_score(choice),
            tokens_in=tin,
            tokens_out=tout,
            cost_usd=cost,
            meta=meta,
        )

    async def generate(
        self, messages, count_call: CallCounter, *, max_tokens: int, temperature: float = 0.0, seed: int | None = 0
    ) -> Generation:
        """Generation mode: one Chat Completions call with ``messages`` (no answer format, no logprobs).
        Raises TransientError / PermanentError (:func:`classify_sdk_error`)."""
        from openai.types.chat import ChatCompletion

        client = self._get_client()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        if seed is not None:
            body["seed"] = int(seed)
        count_call()
        t0 = time.perf_counter()
        try:
            resp = await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        except Exception as exc:  # noqa: BLE001
            raise classify_sdk_error(exc) from exc
        try:
            choice = resp.choices[0]
        except (AttributeError, IndexError, TypeError) as exc:
            raise TransientError("malformed", f"no choices in the response: {exc}") from exc
        usage = getattr(resp, "usage", None)
        tin = int(getattr(usage, "prompt_tokens", 0) or 0)
        tout = int(getattr(usage, "completion_tokens", 0) or 0)
        text = getattr(choice.message, "content", None) or getattr(choice.message, "refusal", None) or ""
        return Generation(
            text,
            finish_reason=getattr(choice, "finish_reason", None),
            tokens_in=tin,
            tokens_out=tout,
            cost_usd=self.cost(tin, tout),
            meta={"model": getattr(resp, "model", None), "latency_s": round(time.perf_counter() - t0, 4)},
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _usage(resp: Any) -> tuple[int, int, int]:
    """``(prompt tokens, completion tokens, cached prompt tokens)`` of a response's ``usage`` (0 when
    absent)."""
    usage = getattr(resp, "usage", None)
    tin = int(getattr(usage, "prompt_tokens", 0) or 0)
    tout = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached_in = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return tin, tout, cached_in


def _refusal(choice: Any, msg: Any) -> tuple[str, str] | None:
    """``(raw, reason)`` when the answer is a refusal: ``message.refusal``, or the provider's content
    filter stopping an empty answer; None otherwise."""
    refusal = getattr(msg, "refusal", None)
    if refusal:
        return refusal, "the model refused (message.refusal)"
    content = getattr(msg, "content", None)
    tool_calls = getattr(msg, "tool_calls", None) or []
    if getattr(choice, "finish_reason", None) == "content_filter" and not content and not tool_calls:
        return "", "the provider's content filter stopped the answer"
    return None


def _parse_answer(msg: Any, finish: str | None) -> tuple[str, ParseResult]:
    """``(raw, parsed)`` of the message: the first tool call's arguments (raw = ``{"tool", "arguments"}``
    JSON) or the text content."""
    tool_calls = getattr(msg, "tool_calls", None) or []
    if tool_calls:
        args = tool_calls[0].function.arguments
        raw = json.dumps({"tool": tool_calls[0].function.name, "arguments": args})
        return raw, parse_tool_input(args, finish_reason=finish)
    raw = getattr(msg, "content", None) or ""
    return raw, parse_text(raw, finish_reason=finish)


def _logprob_score(choice: Any) -> float | None:
    """P(misbehavior) from the choice's token log-probabilities (top alternatives when sent), or None."""
    lp = getattr(choice, "logprobs", None)
    if lp is None or not getattr(lp, "content", None):
        return None
    toks = [
        (t.token, [(a.token, a.logprob) for a in (t.top_logprobs or [])] or [(t.token, t.logprob)]) for t in lp.content
    ]
    return score_from_logprobs(toks)
