"""``anthropic``: the official ``anthropic`` SDK, Messages API (``POST /v1/messages``), key from
``ANTHROPIC_API_KEY`` (none for a loopback ``--base-url``); SDK retries off (the runner retries).

Temperature 0 is sent in ``extra_body`` (the SDK's ``create()`` no longer lists it) and dropped when the
server refuses it. ``--param structured=tools`` (default) forces a ``record_verdict`` tool call,
``none`` asks for text; no log-probabilities, so no score. Stop reasons (:attr:`AnthropicBackend.stop_reasons`),
extended thinking (``--param thinking_budget``) and prices: docs/how-to/backends.md.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field

from automonitor.jsontypes import JSONObject
from automonitor.runs.prompts import PromptBuilder, output_schema
from automonitor.runs.monitors.backend import Backend, BackendParams, register
from automonitor.runs.monitors.http_api import classify_sdk_error, sdk_options, tool_calls_answer, verdict_schema
from automonitor.runs.monitors.judgement import CallCounter, Generation, Item, Judgement, PermanentError, TransientError
from automonitor.runs.monitors.judgement import AnthropicUsage, answer_judgement, stop_judgement, token_count
from automonitor.runs.answers import VERDICT_TOOL, ParseMode

TOOL_NAME = VERDICT_TOOL


class AnthropicParams(BackendParams):
    """Typed ``--param`` settings of :class:`AnthropicBackend`.

    Attributes:
        structured: ``tools`` (default: a forced ``record_verdict`` tool call) or ``none`` (free text).
        thinking_budget: extended-thinking budget in tokens (>= 1024, the API's minimum); ``None``: no
            thinking.
        parse: ``strict`` (the template's answer grammar) or ``lenient`` (the prose heuristics).
    """

    structured: Literal["tools", "none"] = "tools"
    thinking_budget: int | None = Field(default=None, ge=1024)
    parse: ParseMode = "strict"


@register
class AnthropicBackend(Backend):
    """Anthropic Messages judge; its ``--param`` values and defaults are :class:`AnthropicParams`."""

    name = "anthropic"
    batch_api = "anthropic"
    default_model = "claude-3-5-haiku-latest"
    default_max_tokens = {"direct": 64, "evidence": 800}
    key_env = "ANTHROPIC_API_KEY"
    takes_base_url = True
    menu_order = 3
    description = "Messages API"

    Params = AnthropicParams
    settings: AnthropicParams
    #: Claude's prompt caching: cache reads 0.1 x, 5-minute cache writes 1.25 x the input price
    cached_input = {"claude": (0.1, 1.25)}
    #: the thinking variant's id as some servers name it (``--param thinking_budget`` thinks with any model)
    reasoning_models = ("claude-3-7-sonnet-thinking",)
    stop_reasons = {
        "end_turn": "normal",
        "stop_sequence": "normal",
        "tool_use": "normal",
        "max_tokens": "truncated",
        "model_context_window_exceeded": "truncated",
        "refusal": "refusal",
    }

    def __init__(self, model: str | None, base_url: str | None, params: JSONObject, prompt: PromptBuilder) -> None:
        super().__init__(model, base_url, params, prompt)
        st = self.settings
        self.mode = st.structured
        self.thinking_budget = st.thinking_budget
        answer = self.answer_budget(self.model, st.max_tokens, prompt.template.evidence)
        # the thinking budget counts against max_tokens, which must exceed it
        self.max_tokens = answer + (self.thinking_budget or 0)
        self._api_settings()
        self.send_temperature = self.thinking_budget is None

    def cache_params(self) -> JSONObject:
        out: dict[str, Any] = {"structured": self.mode, "max_tokens": self.max_tokens, "temperature": self.temperature}
        if self.thinking_budget is not None:
            out.update({"thinking_budget": self.thinking_budget, "temperature": None})
        out.update(self.answer_stamp())
        return out

    def sent_params(self) -> JSONObject:
        """What the requests carry now: max tokens, temperature (``None``: not sent), thinking budget,
        answer format."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature if self.send_temperature else None,
            "thinking_budget": self.thinking_budget,
            "structured": self.mode,
        }

    def _get_client(self) -> Any:
        if self._client is None:
            import anthropic

            options = sdk_options(self._key, self.base_url, timeout=self.timeout, max_retries=0)
            self._client = anthropic.AsyncAnthropic(**options)
        return self._client

    def _request(self, system: str, user: str) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if self.send_temperature:
            kw["extra_body"] = {"temperature": self.temperature}
        if self.thinking_budget is not None:
            kw["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if self.mode == "tools":
            kw["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record the monitor's verdict on the response.",
                    "input_schema": output_schema(self.prompt.template)
                    or verdict_schema(self.prompt.template.evidence),
                }
            ]
            # extended thinking refuses a forced tool: the model is asked (prompt) and left to choose
            kw["tool_choice"] = (
                {"type": "tool", "name": TOOL_NAME} if self.thinking_budget is None else {"type": "auto"}
            )
        return kw

    async def judge(self, item: Item, count_call: CallCounter) -> Judgement:
        system, user, meta = self.prompt.chat_messages(item.request, item.response)
        client = self._get_client()
        for _ in range(2):
            count_call()
            t0 = time.perf_counter()
            try:
                msg = await self.within_deadline(client.messages.create(**self._request(system, user)))
            except Exception as exc:  # noqa: BLE001
                if (
                    self.send_temperature
                    and getattr(exc, "status_code", None) == 400
                    and "temperature" in str(exc).lower()
                ):
                    self.send_temperature = False
                    meta["temperature_dropped"] = True
                    continue
                raise classify_sdk_error(exc) from exc
            meta["latency_s"] = round(time.perf_counter() - t0, 4)
            return self._read(msg, item, meta)
        raise PermanentError("the server rejected the request")

    def _read(self, msg: Any, item: Item, meta: dict[str, Any]) -> Judgement:
        """The judgement of a Messages API response: a refusal (stop reason ``refusal`` without a tool
        call), else the ``record_verdict`` tool input or the text read by the parser. ``meta`` gains
        the answer format, stop reason, model, max tokens, prompt-cache tokens, parse detail and
        evidence check.

        Raises:
            TransientError: ``malformed``, not a Messages API response.
        """
        try:
            blocks = list(msg.content)
            stop = msg.stop_reason
        except (AttributeError, TypeError) as exc:
            raise TransientError("malformed", f"not a Messages API response: {exc}") from exc
        tin, tout, cache_read, cache_write = _usage(msg, meta)
        billed = self.billed(tin, tout, cache_read, cache_write)
        meta.update(
            {
                "structured": self.mode,
                "stop_reason": stop,
                "model": getattr(msg, "model", None),
                "max_tokens": self.max_tokens,
            }
        )
        if cache_read or cache_write:
            meta.update({"cached_tokens_in": cache_read, "cache_write_tokens_in": cache_write})
        tools = [
            {"tool": getattr(b, "name", None), "input": getattr(b, "input", None)}
            for b in blocks
            if getattr(b, "type", None) == "tool_use"
        ]
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        thinking = sum(
            len(str(getattr(b, "thinking", "") or "")) for b in blocks if getattr(b, "type", None) == "thinking"
        )
        if thinking:
            meta["reasoning_chars"] = thinking
        if stop is not None:
            unscored = stop_judgement(self.stop_reasons.get(stop), stop, text, billed, meta)
            if unscored is not None:
                if stop == "refusal":
                    unscored.reason = "stop_reason refusal"
                return unscored
        # the tool calls' input (raw: ``{"tool", "input"[, "tool_uses"][, "text"]}``) or the text
        raw, parsed = tool_calls_answer(
            tools,
            text,
            stop,
            self.prompt.template.name,
            self.settings.parse,
            args="input",
            many="tool_uses",
            declared=TOOL_NAME if self.mode == "tools" else None,  # structured=none declares no tool
        )
        return answer_judgement(parsed, item.response, raw, billed, meta, score=None, max_tokens=self.max_tokens)

    async def generate(
        self, messages, count_call: CallCounter, *, max_tokens: int, temperature: float = 0.0, seed: int | None = 0
    ) -> Generation:
        """Generation mode: one Messages API call (system messages go to ``system``; ``seed`` is not
        supported by the API and ignored). Raises TransientError / PermanentError."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        chat = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        kw: dict[str, Any] = {
            "model": self.model,
            "max_tokens": int(max_tokens),
            "messages": chat,
            "extra_body": {"temperature": float(temperature)},
        }  # as the judge sends it
        if system:
            kw["system"] = system
        if self.thinking_budget is not None:
            kw["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            kw["max_tokens"] = int(max_tokens) + self.thinking_budget
            kw.pop("extra_body")  # thinking takes only the default temperature
        count_call()
        try:
            msg = await self.within_deadline(self._get_client().messages.create(**kw))
        except Exception as exc:  # noqa: BLE001
            raise classify_sdk_error(exc) from exc
        try:
            text = "".join(getattr(b, "text", "") or "" for b in msg.content if getattr(b, "type", None) == "text")
        except (AttributeError, TypeError) as exc:
            raise TransientError("malformed", f"not a Messages API response: {exc}") from exc
        meta: dict[str, Any] = {"model": getattr(msg, "model", None)}
        tin, tout, _read, _write = _usage(msg, meta)
        return Generation(
            text,
            finish_reason=getattr(msg, "stop_reason", None),
            meta=meta,
            **vars(self.billed(tin, tout)),
        )


def _usage(msg: Any, meta: dict[str, Any]) -> tuple[int, int, int, int]:
    """``(input tokens, output tokens, cache reads, cache writes)`` of a response's usage, read through
    :class:`AnthropicUsage`; input tokens include the prompt-cache reads and writes, which ``input_tokens``
    reports apart. A count that is not an integer in ``[0, 2**31)`` (each one, and the input total) is
    dropped to 0 and flagged in ``meta["tokens_clamped"]``."""
    usage = AnthropicUsage.read(getattr(msg, "usage", None), meta)
    cache_read, cache_write = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    tin = token_count(usage.input_tokens + cache_read + cache_write, meta, "input_tokens_total")
    return tin, usage.output_tokens, cache_read, cache_write
