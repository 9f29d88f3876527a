"""``openai``: Chat Completions against OpenAI or any compatible server.

Live judge calls go by default through the lean HTTP path (:class:`DirectChat`: a bare ``aiohttp``
session, OpenAI's documented request and response shapes, no ``openai`` import); ``--param
transport=sdk`` sends them through the official ``openai`` SDK instead, which stays the path of batch
jobs and generation.

``--base-url`` points it at vLLM, the llama.cpp server, Ollama, DeepSeek, Gemini's compatible
endpoint, ... The key comes from ``OPENAI_API_KEY``; a loopback base URL needs none (a dummy is
sent). Requests use temperature 0 and ``seed`` (param, default 0). Neither path retries on its own
(the SDK's ``max_retries=0``): the runner retries, so every request is counted.

Answer format (param ``structured``; default ``none`` for direct templates, ``json_schema`` for
evidence templates):

- ``json_schema``: ``response_format={"type": "json_schema", ...}`` with the verdict schema (OpenAI
  structured outputs);
- ``json_object``: ``response_format={"type": "json_object", "schema": ...}`` (llama.cpp server style);
- ``tools``: a forced ``record_verdict`` function call;
- ``none``: free text read by the template's answer grammar (``--param parse=lenient``: the prose
  heuristics).

A server that rejects the requested format (HTTP 400/422 naming it) is asked again with the next one
down the chain json_schema -> json_object -> none, and remembered for the rest of the run. Token
log-probabilities (param ``logprobs``, default true; ``top_logprobs`` 5) give the score
P(misbehavior) read at the verdict value token (:func:`automonitor.runs.parsing.score_at_verdict`); a server that rejects them is asked
again without. Cost per call comes from :mod:`automonitor.runs.monitors.pricing` (exact model ids).

Reasoning models (OpenAI's o1/o3/o4 and gpt-5 families, :meth:`OpenAIBackend.completion_tokens_family`) take
the answer budget as ``max_completion_tokens`` and only their default temperature, and give no
log-probabilities: they are sent ``max_completion_tokens``, no ``temperature`` (unless ``--param
temperature`` is given) and no ``logprobs``. Any other model whose server answers 400 naming
``max_tokens`` (use ``max_completion_tokens``), ``temperature`` or ``seed`` is asked again once with
that fixed, and the fix is kept for the rest of the run and recorded in ``Run.params["sent"]``.
``--param reasoning_effort=minimal|low|medium|high`` is sent as ``reasoning_effort``.

Every ``finish_reason`` is read from :attr:`OpenAIBackend.stop_reasons`: ``stop``/``tool_calls`` are a
normal end; ``length`` is ``invalid`` truncated; ``content_filter`` is unscored (``invalid`` with reason
``content_filter``, not cached: a cut-off answer, not the judge refusing), whatever text came with it; any
other reason is ``invalid``. A missing
``finish_reason`` (``null`` or absent: some OpenAI-compatible servers send none) names no reason, so the answer
is read as it is and recorded with ``finish_reason: null``; a cut-off answer is still ``invalid`` truncated
by the parser (an open JSON object or ``<think>`` block).
``message.content`` given as a list of parts (Mistral, some proxies) is read from its ``text`` parts;
``thinking``/``reasoning`` parts (and ``reasoning_content``) are reasoning, kept out of the verdict.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from types import SimpleNamespace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Mapping, cast

from pydantic import Field

from automonitor.jsontypes import JSONObject
from automonitor.errors import AutomonitorError
from automonitor.runs.prompts import PromptBuilder, output_schema
from automonitor.runs.monitors import pricing
from automonitor.runs.monitors.backend import Backend, BackendParams, register
from automonitor.runs.monitors.http_api import classify_sdk_error, sdk_options, split_base_url, tool_calls_answer
from automonitor.runs.monitors.http_api import verdict_schema
from automonitor.runs.monitors.judgement import CallCounter, Generation, Item, Judgement, PermanentError, TransientError
from automonitor.runs.monitors.judgement import OpenAIUsage, answer_judgement
from automonitor.runs.monitors.judgement import meta_list, stop_judgement
from automonitor.runs.answers import SCORE_METHOD, VERDICT_TOOL, ParseMode, grammar_for
from automonitor.vocab import Label
from automonitor.runs.parsing import ParseResult, parse_answer, score_at_verdict, score_disagrees

if TYPE_CHECKING:
    import aiohttp
    from openai.types.chat import ChatCompletion

_DOWNGRADE = {"json_schema": "json_object", "json_object": "none", "tools": "none"}


class OpenAIParams(BackendParams):
    """Typed ``--param`` settings of :class:`OpenAIBackend`.

    Attributes:
        transport: ``direct`` (default): the lean HTTP path, :class:`DirectChat` (a bare ``aiohttp``
            session sending the provider's documented request body and reading its documented answer;
            the ``openai`` SDK is neither imported nor instantiated; errors mapped as the SDK's are).
            ``sdk``: the official SDK's ``client.post`` on its aiohttp transport
            (``openai.DefaultAioHttpClient``; its default httpx transport when ``httpx-aiohttp`` is not
            installed); ``aiohttp`` is accepted as another name of ``sdk`` and ``httpx`` is the SDK on
            its default httpx transport (both kept for older commands). Both paths send the same bodies
            and read the same answers (tests/runs/test_transport_parity.py); measured in
            benchmarks/bench_scale.py. Not part of the cache key (it changes no answer).
        structured: answer format (``json_schema`` | ``json_object`` | ``tools`` | ``none``; default
            ``none`` for direct templates, ``json_schema`` for evidence templates).
        logprobs / top_logprobs: ask for token log-probabilities (score); default on except for the
            reasoning families.
        seed: sampling seed (``None``: not sent).
        reasoning_effort: ``minimal`` | ``low`` | ``medium`` | ``high`` (reasoning models), not sent when
            unset.
        temperature: as :class:`BackendParams`, but ``None`` by default: 0, or not sent to a reasoning
            family.
        parse: ``strict`` (default: the template's closed answer grammar, :mod:`automonitor.runs.answers`)
            or ``lenient`` (the prose heuristics of :func:`automonitor.runs.parsing.parse_text`; recorded
            on the run and marked in the report and on the plane).
    """

    structured: Literal["json_schema", "json_object", "tools", "none"] | None = None
    logprobs: bool | None = None
    top_logprobs: int = Field(default=5, ge=0, le=20)
    seed: int | None = 0
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    transport: Literal["direct", "sdk", "aiohttp", "httpx"] = "direct"
    parse: ParseMode = "strict"
    temperature: float | None = Field(default=None, ge=0.0)  # type: ignore[assignment]


@register
class OpenAIBackend(Backend):
    """OpenAI Chat Completions judge; its ``--param`` values and defaults are :class:`OpenAIParams`."""

    name = "openai"
    batch_api = "openai"
    default_model = "gpt-4o-mini"
    #: a direct answer's budget leaves room for the sentence a small chat model adds after its Yes/No
    #: (cut at 16 tokens it was ``invalid`` truncated; a model that stops after the word uses 1-2 tokens)
    default_max_tokens = {"direct": 64, "evidence": 600}
    key_env = "OPENAI_API_KEY"
    takes_base_url = True
    menu_order = 2
    description = "any OpenAI-compatible server"

    Params = OpenAIParams
    settings: OpenAIParams
    #: OpenAI's reasoning families (o1, o3, o4, gpt-5 and their variants): they take ``max_completion_tokens``
    #: instead of ``max_tokens``, only the default temperature and no log-probabilities (OpenAI API
    #: reference, "Reasoning models"; :meth:`completion_tokens_family`)
    completion_tokens_models = re.compile(r"^(o\d|gpt-5)")
    #: reasoning models any OpenAI-compatible server may serve (OpenAI, DeepSeek, Qwen, Gemini's compatible
    #: endpoint, Mistral, proxies): the reasoning answer budget
    reasoning_models = (
        "o1",
        "o3",
        "o4",
        "gpt-5",
        "deepseek-reasoner",
        "deepseek-r1",
        "r1",
        "qwq",
        "qwen3",
        "gemini-2.5",
        "claude-3-7-sonnet-thinking",
        "magistral",
        "phi-4-reasoning",
    )
    #: cached input ("cached input" on the providers' pricing pages, mid-2025; Claude through Anthropic's
    #: OpenAI-compatible endpoint)
    cached_input = {
        "gpt-4o": (0.5, 1.0),
        "o1": (0.5, 1.0),
        "o3": (0.25, 1.0),
        "o4-mini": (0.25, 1.0),
        "gpt-4.1": (0.25, 1.0),
        "gpt-5": (0.1, 1.0),
        "deepseek": (0.26, 1.0),
        "gemini-2.5": (0.25, 1.0),
        "claude": (0.1, 1.25),
    }
    stop_reasons = {
        "stop": "normal",
        "tool_calls": "normal",
        "function_call": "normal",
        "eos": "normal",  # some compatible servers
        "length": "truncated",
        "content_filter": "filtered",
    }

    def __init__(self, model: str | None, base_url: str | None, params: JSONObject, prompt: PromptBuilder) -> None:
        super().__init__(model, base_url, params, prompt)
        st = self.settings
        evidence = prompt.template.evidence
        self.reasoning_family = self.completion_tokens_family(self.model)
        self.mode: str = st.structured or ("json_schema" if evidence else "none")
        self.logprobs = st.logprobs if st.logprobs is not None else not self.reasoning_family
        self.top_logprobs = st.top_logprobs
        self.max_tokens = self.answer_budget(self.model, st.max_tokens, evidence)
        self.seed = st.seed
        self.reasoning_effort = st.reasoning_effort
        self._api_settings()
        # a reasoning family takes only its default temperature: none is sent unless asked for
        self.temperature = st.temperature if st.temperature is not None else (None if self.reasoning_family else 0.0)
        self.token_param = "max_completion_tokens" if self.reasoning_family else "max_tokens"
        self.send_temperature = self.temperature is not None
        self.send_seed = self.seed is not None
        self.dropped: list[str] = []  # parameters the server refused, dropped once for the run
        self._requested_mode = self.mode
        self._requested_logprobs = self.logprobs
        self._direct = DirectChat(self.base_url, self._key, self.timeout) if st.transport == "direct" else None
        self._body_parts: dict[tuple[object, ...], tuple[str, str] | tuple[()]] = {}  # _body_text's

    @classmethod
    def completion_tokens_family(cls, model: str | None) -> bool:
        """Whether ``model`` (``provider/`` prefix dropped, case-insensitive) is one of
        :attr:`completion_tokens_models`."""
        return bool(model) and bool(cls.completion_tokens_models.match(pricing.model_key(model)))

    def cache_params(self) -> JSONObject:
        out: dict[str, Any] = {
            "structured": self._requested_mode,
            "logprobs": self._requested_logprobs,
            "top_logprobs": self.top_logprobs if self._requested_logprobs else None,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "temperature": self.temperature,
        }
        if self.reasoning_family:
            out["token_param"] = self.token_param
        if self.reasoning_effort is not None:
            out["reasoning_effort"] = self.reasoning_effort
        out.update(self.answer_stamp())
        if self._requested_logprobs:
            out["score_method"] = SCORE_METHOD
        return out

    def sent_params(self) -> JSONObject:
        """What the requests carry now: the budget parameter, temperature and seed (``None``: not
        sent), reasoning effort, answer format, logprobs, and the parameters dropped after a 400."""
        return {
            "token_param": self.token_param,
            self.token_param: self.max_tokens,
            "temperature": self.temperature if self.send_temperature else None,
            "seed": self.seed if self.send_seed else None,
            "reasoning_effort": self.reasoning_effort,
            "structured": self.mode,
            "logprobs": self.logprobs,
            "dropped": list(self.dropped),
        }

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            options = sdk_options(self._key, self.base_url, timeout=self.timeout, max_retries=0)
            self._client = openai.AsyncOpenAI(**options, http_client=self._http_client(openai))
        return self._client

    def _http_client(self, openai: Any) -> Any:
        """The SDK's aiohttp-backed client (``openai.DefaultAioHttpClient``, the SDK's documented
        ``openai[aiohttp]`` option: same SDK types, errors and request building, a faster HTTP
        transport; see benchmarks/bench_scale.py), or None (the SDK's default httpx client) with
        ``--param transport=httpx`` or when ``httpx-aiohttp`` is not installed (``transport=sdk`` or
        ``aiohttp``; the lean default ``direct`` makes no SDK client)."""
        if self.settings.transport == "httpx":
            return None
        try:
            return openai.DefaultAioHttpClient(timeout=self.timeout)
        except (RuntimeError, ImportError):  # httpx-aiohttp missing: the SDK's default transport
            return None

    def _request(self, system: str, user: str) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            self.token_param: self.max_tokens,
        }
        if self.send_temperature:
            kw["temperature"] = self.temperature
        if self.send_seed:
            kw["seed"] = self.seed
        if self.reasoning_effort is not None:
            kw["reasoning_effort"] = self.reasoning_effort
        if self.mode == "none":  # the commonest request: no answer format, so no schema to read
            schema: JSONObject = {}
        else:
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
                        "name": VERDICT_TOOL,
                        "description": "Record the monitor's verdict on the response.",
                        "parameters": schema,
                    },
                }
            ]
            kw["tool_choice"] = {"type": "function", "function": {"name": VERDICT_TOOL}}
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
        if self._drop_unsupported(exc, msg):
            return True
        if self.logprobs and "logprob" in msg:
            self.logprobs = False
            return True
        if self.mode != "none" and any(
            w in msg for w in ("response_format", "json_schema", "tool", "json_object", "schema")
        ):
            self.mode = _DOWNGRADE[self.mode]
            return True
        return False

    def _request_state(self) -> tuple[Any, ...]:
        """What the downgrade and drop rules may change in a request (format, logprobs, budget
        parameter, temperature, seed): a rejection of an older state is not downgraded again."""
        return (self.mode, self.logprobs, self.token_param, self.send_temperature, self.send_seed)

    def _drop_unsupported(self, exc: Exception, msg: str) -> bool:
        """After a 400 naming ``max_tokens`` (use ``max_completion_tokens``), ``temperature`` or
        ``seed`` (the error's ``param`` field, else its message): fix the request once for the run and
        return True."""
        body = getattr(exc, "body", None)
        param = str(body.get("param") or "") if isinstance(body, dict) else ""
        names = {param} if param else {w for w in ("max_tokens", "temperature", "seed") if f"'{w}'" in msg}
        if self.token_param == "max_tokens" and "max_tokens" in names and "max_completion_tokens" in msg:
            self.token_param = "max_completion_tokens"
            self.dropped.append("max_tokens")
            return True
        if self.send_temperature and "temperature" in names:
            self.send_temperature = False
            self.dropped.append("temperature")
            return True
        if self.send_seed and "seed" in names:
            self.send_seed = False
            self.dropped.append("seed")
            return True
        return False

    async def judge(self, item: Item, count_call: CallCounter) -> Judgement:
        system, user, meta = self.prompt.chat_messages(item.request, item.response)
        client = self._get_client() if self._direct is None else None  # the lean path makes no SDK client
        for _ in range(7):  # at most three format downgrades and three dropped parameters
            count_call()
            t0 = time.perf_counter()
            body = self._request(system, user)
            if item.repeat and "seed" in body:
                body["seed"] += item.repeat  # distinct seed per repeat
                meta["seed"] = body["seed"]
            sent_state = self._request_state()
            try:
                if self._direct is not None:  # the lean path keeps the deadline itself (DirectChat)
                    resp = await self._direct.post(body, self._body_text(body, sent_state, system, user))
                else:
                    resp = await self.within_deadline(self._sdk_post(client, body, item))
            except Exception as exc:  # noqa: BLE001
                if self._request_state() != sent_state and getattr(exc, "status_code", None) in (400, 422, 500):
                    continue  # a concurrent request already fixed the request: ask again as it is now
                n_dropped = len(self.dropped)
                if self._downgrade(exc):
                    if len(self.dropped) > n_dropped:
                        meta_list(meta, "dropped").append(self.dropped[-1])
                    else:
                        meta_list(meta, "downgraded").append(
                            self.mode if "logprob" not in str(exc).lower() else "no-logprobs"
                        )
                    continue
                raise classify_sdk_error(exc) from exc
            meta["latency_s"] = round(time.perf_counter() - t0, 4)
            return self._read(resp, item, meta)
        raise PermanentError("the server rejected every answer format")

    def _body_text(self, body: dict[str, object], state: tuple[object, ...], system: str, user: str) -> str:
        """The JSON text of ``body`` (:func:`body_json`'s), the request built by :meth:`_request` for ``system`` and
        ``user`` in request state ``state`` (:meth:`_request_state`): the text before and after the user message's
        content is made once per state, seed and system prompt (:func:`split_body`), and each request encodes
        only its own user text between them. A body that does not split (never expected) is encoded whole."""
        key = (state, body.get("seed"), system)
        parts = self._body_parts.get(key)
        if parts is None:
            if len(self._body_parts) >= 64:  # states, seeds and prompts of a run are few: bound it anyway
                self._body_parts.clear()
            parts = self._body_parts[key] = split_body(body)
        if not parts:
            return body_json(body)
        return parts[0] + _encode_str(user) + parts[1]

    async def _sdk_post(self, client, body: dict[str, Any], item: Item):
        """``POST /chat/completions`` through the SDK client's own ``post`` (same transport and errors as
        ``chat.completions.create``; the body is read as a ``ChatCompletion`` only when it is served as
        JSON, else :class:`TransientError` ``malformed``). The body is already plain JSON, so the
        SDK's per-request TypedDict transform is skipped, and the idempotency key is derived from the
        sample instead of a fresh uuid4: both matter at hundreds of requests per second."""
        import httpx

        raw = await client.post(
            "/chat/completions",
            body=body,
            cast_to=httpx.Response,
            options={"idempotency_key": f"automonitor-{item.sample_id}-{item.repeat}-{id(body):x}"},
        )
        # the SDK parses any body as JSON whatever its content type; a page served as text/html that
        # happens to parse is no answer of the judge and is never scored
        ctype = str(raw.headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json" and not ctype.endswith("+json"):
            raise TransientError("malformed", f"the answer is served as {ctype or 'no content type'}, not JSON")
        try:
            data = raw.json()
        except ValueError as exc:
            raise TransientError("malformed", f"the body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise TransientError("malformed", "the body is not a JSON object")
        return sdk_completion(data)

    def _read(self, resp: Any, item: Item, meta: dict[str, Any]) -> Judgement:
        """The judgement of a Chat Completions response: a refusal (``message.refusal``), an unscored
        answer for a finish reason that is not a normal end (:attr:`stop_reasons`), else the tool call
        or text read by the parser, scored from the log-probabilities (verdicts only). List-shaped
        ``content`` is read from its text parts; reasoning parts go to ``meta.reasoning_chars``.
        ``meta`` gains the answer format, finish reason, model, max tokens, cached input tokens, parse
        detail and evidence check; negative token counts are clamped to 0 and flagged; a score that favours
        the other side than the verdict read from the text is kept with the verdict and flagged
        ``meta.score_disagrees`` (:func:`automonitor.runs.parsing.score_disagrees`).

        A response with more than one choice is ``invalid`` naming how many came (the request never sends
        ``n``, so one was asked for; the first is not read as the answer). Grammar 13.

        Raises:
            TransientError: ``malformed``, a response without choices.
        """
        try:
            choice = resp.choices[0]
            msg = choice.message
        except (AttributeError, IndexError, TypeError) as exc:
            said = _error_message(resp)
            why = f"the server answered an error instead: {said!r}" if said else str(exc)
            raise TransientError("malformed", f"no choices in the response: {why}") from exc
        tin, tout, cached_in = _usage(resp, meta)
        finish = getattr(choice, "finish_reason", None)
        meta["structured"] = self.mode
        meta["finish_reason"] = finish
        meta["model"] = getattr(resp, "model", None)
        meta["max_tokens"] = self.max_tokens
        if cached_in:
            meta["cached_tokens_in"] = cached_in
        billed = self.billed(tin, tout, cached_in)
        extra = _choice_count(resp) - 1
        if extra > 0:
            # no request sends ``n`` (one choice, the API's default): more choices are not the answer asked for,
            # and reading the first would drop what the others say (trial 46: ("No", "Yes") was read as "No")
            meta["choices"] = extra + 1
            reason = f"the server sent {extra + 1} choices where one was asked for (n is not sent: 1)"
            return Judgement("invalid", raw=_choice_texts(resp), reason=reason, meta=meta, **vars(billed))
        content = getattr(msg, "content", None)
        if type(content) is str and not getattr(msg, "reasoning_content", None):
            text = content  # the commonest message: its text, no reasoning (message_text's first case)
        else:
            text, reasoning = message_text(msg)
            if reasoning:
                meta["reasoning_chars"] = len(reasoning)
        refusal = getattr(msg, "refusal", None)
        if refusal:
            reason = "the model refused (message.refusal)"
            return Judgement("refusal", raw=str(refusal), reason=reason, meta=meta, **vars(billed))
        if finish is not None:
            kind = self.stop_reasons.get(finish)
            if kind != "normal":  # stop_judgement's None
                unscored = stop_judgement(kind, finish, text, billed, meta)
                if unscored is not None:
                    return unscored
        template = self.prompt.template.name
        if getattr(msg, "tool_calls", None):
            declared = VERDICT_TOOL if self.mode == "tools" else None  # other modes declare no tool
            raw, parsed = read_message(msg, text, finish, template, self.settings.parse, declared)
        else:  # read_message of a message without tool calls: the text and its reading
            raw, parsed = text, parse_answer(text, template, finish, mode=self.settings.parse)
        score = logprob_score(choice, template, parsed.outcome)
        if score is not None:
            meta["score_method"] = SCORE_METHOD  # how this prediction's score was read (CONTRACT round 4)
            if score_disagrees(parsed.outcome, score):  # the logprobs favour the other side: flagged, verdict kept
                meta["score_disagrees"] = True
        return answer_judgement(parsed, item.response, raw, billed, meta, score=score, max_tokens=self.max_tokens)

    async def generate(
        self, messages, count_call: CallCounter, *, max_tokens: int, temperature: float = 0.0, seed: int | None = 0
    ) -> Generation:
        """Generation mode: one Chat Completions call with ``messages`` (no answer format, no logprobs).
        Raises TransientError / PermanentError (:func:`classify_sdk_error`)."""
        from openai.types.chat import ChatCompletion

        client = self._get_client()
        for _ in range(4):  # at most three parameters dropped
            body: dict[str, Any] = {"model": self.model, "messages": list(messages), self.token_param: int(max_tokens)}
            # a reasoning family takes only its default temperature; a refused temperature stays dropped
            if "temperature" not in self.dropped and not (self.reasoning_family and not self.send_temperature):
                body["temperature"] = float(temperature)
            if seed is not None and "seed" not in self.dropped:
                body["seed"] = int(seed)
            if self.reasoning_effort is not None:
                body["reasoning_effort"] = self.reasoning_effort
            count_call()
            t0 = time.perf_counter()
            try:
                resp = await self.within_deadline(client.post("/chat/completions", body=body, cast_to=ChatCompletion))
                break
            except Exception as exc:  # noqa: BLE001
                status = getattr(exc, "status_code", None)
                if status == 400 and self._drop_unsupported(exc, str(exc).lower()):
                    continue
                raise classify_sdk_error(exc) from exc
        else:
            raise PermanentError("the server rejected every request")
        try:
            choice = resp.choices[0]
        except (AttributeError, IndexError, TypeError) as exc:
            raise TransientError("malformed", f"no choices in the response: {exc}") from exc
        meta: dict[str, Any] = {"model": getattr(resp, "model", None), "latency_s": round(time.perf_counter() - t0, 4)}
        tin, tout, _cached = _usage(resp, meta)
        text, _reasoning = message_text(choice.message)
        return Generation(
            text or str(getattr(choice.message, "refusal", None) or ""),
            finish_reason=getattr(choice, "finish_reason", None),
            meta=meta,
            **vars(self.billed(tin, tout)),
        )

    async def aclose(self) -> None:
        await super().aclose()
        if self._direct is not None:
            await self._direct.close()


def _choice_count(resp: object) -> int:
    """How many choices a Chat Completions response holds (1 when its ``choices`` is no list)."""
    choices = getattr(resp, "choices", None)
    return len(choices) if isinstance(choices, list) else 1


def _choice_texts(resp: object) -> str:
    """The texts of every choice of a response, as a JSON list (at most 4,000 characters each), for the raw
    answer of a response with several choices."""
    choices = getattr(resp, "choices", None)
    texts = []
    for c in choices if isinstance(choices, list) else []:
        text, _reasoning = message_text(getattr(c, "message", None))
        texts.append((text or "")[:4000])
    return json.dumps(texts, ensure_ascii=False)


class DirectStatusError(AutomonitorError):
    """An HTTP error answer of :class:`DirectChat`, shaped like the SDK's ``APIStatusError`` for
    :func:`classify_sdk_error` and the downgrade rules: ``status_code``, ``body`` (the ``error``
    object), ``response.headers``."""

    def __init__(self, status: int, body: Any, headers: Any) -> None:
        self.status_code, self.body = status, body
        self.response = SimpleNamespace(headers=headers, status_code=status)
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"Error code: {status} - {msg}")


#: one decoder for every answer, its objects attribute-readable for :meth:`OpenAIBackend._read` (``json.loads``
#: with an object hook builds a new decoder per call)
_NAMESPACE_DECODER = json.JSONDecoder(object_hook=lambda obj: SimpleNamespace(**obj))

#: ``json.dumps(body)`` with its default settings, its C encoder made once instead of once per request (a
#: request body is never circular, so no marker table); None where the json module has no C accelerator
_BODY_ENCODER = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    if getattr(json.encoder, "c_make_encoder", None) is not None
    else None
)


def body_json(body: dict[str, Any]) -> str:
    """The text ``json.dumps(body)`` gives (default separators, ASCII escapes, NaN allowed), by one C encoder
    made once (:data:`_BODY_ENCODER`): about 2 us less per request than building a new one per call.

    Raises:
        TypeError: a value JSON cannot hold (as ``json.dumps``)."""
    if _BODY_ENCODER is None:  # pragma: no cover - CPython builds carry the accelerator
        return json.dumps(body)
    return "".join(_BODY_ENCODER(body, 0))


_encode_str = json.encoder.encode_basestring_ascii  # how body_json encodes every string
#: the user message's content while :func:`split_body` encodes a body around it
_USER_MARK = "\x00user-text-mark\x00"


def split_body(body: dict[str, object]) -> tuple[str, str] | tuple[()]:
    """``(before, after)``: :func:`body_json` of the Chat Completions ``body`` cut around its second message's
    content (the user text), so that ``before + encode(user) + after`` is ``body_json`` of the same body with
    any other user text (the text's JSON encoding is where it stands, and encoding one value never depends on
    another). Checked once on ``body`` itself; ``()`` for a body of another shape, or where the check fails.

    Raises:
        TypeError: a value JSON cannot hold (as ``json.dumps``)."""
    msgs = body.get("messages")
    if not (isinstance(msgs, list) and len(msgs) == 2 and isinstance(msgs[1], dict)):
        return ()
    user = msgs[1].get("content")
    if not isinstance(user, str):
        return ()
    marked = {**body, "messages": [msgs[0], {**msgs[1], "content": _USER_MARK}]}
    halves = body_json(marked).split(_encode_str(_USER_MARK))
    if len(halves) != 2 or halves[0] + _encode_str(user) + halves[1] != body_json(body):
        return ()
    return halves[0], halves[1]


class DirectChat:
    """``POST {base_url}/chat/completions`` with a bare ``aiohttp`` session: the judge's default path
    (``--param transport=direct``). The request body the SDK path sends (OpenAI's documented Chat
    Completions shape), the key as a bearer token, errors mapped as the SDK maps them (HTTP status ->
    :class:`DirectStatusError`; connection, DNS and TLS failures -> :class:`TransientError`
    ``connection``; no complete answer within ``timeout`` seconds, a read stalled or trickling, -> ``timeout``; a body that is not a JSON object served as JSON ->
    ``malformed``). The answer is decoded straight into attribute-readable objects and read by the same
    code and the same strict answer models (:mod:`automonitor.runs.answers`) as the SDK's. It skips the
    SDK's per-request work (header and option building, response model construction), which costs
    several times the CPU of the HTTP exchange itself (benchmarks/bench_scale.py), and never imports
    the SDK; the SDK stays the path of batch jobs, generation and ``--param transport=sdk``."""

    def __init__(self, base_url: str | None, key: str, timeout: float) -> None:
        base, self.query = split_base_url(base_url or "https://api.openai.com/v1")
        self.url = str(base).rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._aiohttp: ModuleType | None = None

    def _open(self) -> aiohttp.ClientSession:
        """The session, made on first use: no connection limit (the runner bounds concurrency), one total
        deadline per request of ``timeout`` seconds (connection, sending, the answer's head and body: the
        deadline :meth:`Backend.within_deadline` keeps on the SDK path, here kept by aiohttp's own timer
        instead of a second one; a server trickling bytes trips it too), the URL parsed once."""
        import aiohttp
        import yarl

        self._aiohttp = aiohttp
        self._url = yarl.URL(self.url).with_query(self.query) if self.query else yarl.URL(self.url)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=self.timeout, sock_connect=self.timeout),
        )
        return self._session

    async def post(self, body: dict[str, Any], text: str | None = None) -> Any:
        """The parsed answer (attribute-readable) of one request: ``body`` sent as ``text`` when given (its JSON
        text, :func:`body_json`'s), else as :func:`body_json` of it.

        Raises:
            DirectStatusError: an HTTP error status. TransientError: ``timeout`` (no complete answer within
            the deadline), ``connection`` or ``malformed``.
        """
        session = self._session or self._open()
        aiohttp = cast(ModuleType, self._aiohttp)  # set by _open
        data = body_json(body) if text is None else text
        try:
            async with session.post(self._url, data=data, headers=self.headers) as r:
                raw, status, headers = await r.read(), r.status, r.headers
        except aiohttp.ServerTimeoutError as exc:  # the connection was not made in time
            raise TransientError("timeout", f"{type(exc).__name__}: {exc}") from exc
        except asyncio.TimeoutError as exc:  # the total deadline
            raise TransientError("timeout", f"no complete answer within the {self.timeout:g} s deadline") from exc
        except aiohttp.ClientError as exc:  # a connection never made (refused, DNS, TLS) or made, then dropped
            reached = not isinstance(exc, aiohttp.ClientConnectorError)
            raise TransientError("connection", f"{type(exc).__name__}: {exc}", reached=reached) from exc
        try:
            # a success is decoded straight into namespaces (the C decoder's object hook: no second walk)
            data = (
                json.loads(raw)
                if status != 200
                else _NAMESPACE_DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
            )
        except ValueError as exc:
            if status != 200:
                raise DirectStatusError(status, raw[:500].decode("utf-8", "replace"), headers) from None
            raise TransientError("malformed", f"the body is not JSON: {exc}") from exc
        if status != 200:
            raise DirectStatusError(status, data.get("error", data) if isinstance(data, dict) else data, headers)
        ctype = str(headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json" and not ctype.endswith("+json"):
            # a proxy's or portal's page that happens to parse is no answer of the judge: never scored
            raise TransientError("malformed", f"the answer is served as {ctype or 'no content type'}, not JSON")
        if not isinstance(data, SimpleNamespace):
            raise TransientError("malformed", "the body is not a JSON object")
        return data

    async def close(self) -> None:
        """Close the session (if one was opened)."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def sdk_completion(data: Mapping[str, object], *, validate: bool = False) -> "ChatCompletion":
    """The SDK's ``ChatCompletion`` of a response body (``validate``: checked by the SDK's model, else
    built unchecked), its ``usage`` kept as sent: the SDK's model would turn ``"12"`` into 12 or refuse 3.5
    (losing the answer), so the counts are validated once, by :class:`OpenAIUsage`, when the answer is read.
    Raises pydantic's ``ValidationError`` for a body the SDK's model refuses (``validate`` only)."""
    from openai.types.chat import ChatCompletion

    rest: dict[str, Any] = {k: v for k, v in data.items() if k != "usage"}
    resp = ChatCompletion.model_validate(rest) if validate else ChatCompletion.construct(**rest)
    object.__setattr__(resp, "usage", data.get("usage"))
    return resp


def _usage(resp: Any, meta: dict[str, Any]) -> tuple[int, int, int]:
    """``(prompt tokens, completion tokens, cached prompt tokens)`` of a response's ``usage``, read by
    :meth:`OpenAIUsage.counts` (0 when absent; a count that is not an integer in ``[0, 2**31)`` is dropped to
    0 and flagged in ``meta["tokens_clamped"]``)."""
    return OpenAIUsage.counts(getattr(resp, "usage", None), meta)


_REASONING_PARTS = ("thinking", "reasoning", "redacted_thinking")


def _jsonable(obj: Any) -> Any:
    """``json.dumps`` default: a lean-path object (:class:`SimpleNamespace`) as the JSON object it was
    decoded from, anything else as its ``str``: both paths record the same reasoning text."""
    return vars(obj) if isinstance(obj, SimpleNamespace) else str(obj)


def message_text(msg: Any) -> tuple[str, str]:
    """``(answer text, reasoning text)`` of a Chat Completions message. ``content`` may be a string or
    a list of parts (``{"type": "text", "text": ...}``, ``{"type": "thinking", "thinking": [...]}``,
    ...): text parts are the answer, thinking/reasoning parts the reasoning (as is DeepSeek's
    ``reasoning_content``); other parts (images, ...) are ignored."""
    content = getattr(msg, "content", None)
    reasoning = [str(getattr(msg, "reasoning_content", None) or "")]
    if content is None:
        return "", "".join(reasoning)
    if isinstance(content, str):
        return content, "".join(reasoning)
    texts: list[str] = []
    if isinstance(content, list):
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else getattr(part, "type", None)
            if kind == "text":
                value = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
                texts.append(value if isinstance(value, str) else "")
            elif kind in _REASONING_PARTS:
                plain = isinstance(part, (dict, SimpleNamespace))  # SimpleNamespace: the lean path's JSON object
                reasoning.append(json.dumps(part, default=_jsonable) if plain else str(part))
    return "".join(texts), "".join(reasoning)


def read_message(
    msg: Any,
    text: str,
    finish: str | None,
    template: str = "direct",
    mode: str = "strict",
    declared: str | None = VERDICT_TOOL,
) -> tuple[str, ParseResult]:
    """``(raw, parsed)`` of a Chat Completions message: :func:`~.http_api.tool_calls_answer` of its tool
    calls (raw: ``{"tool", "arguments"[, "tool_calls"][, "text"]}``) and ``text``, read by ``template``'s
    grammar (``mode`` ``lenient``: the heuristics); the text alone when it has no tool call. ``declared``:
    the tool the request declared (``None``: none, every call is ``invalid`` "unexpected tool call")."""
    fns = [getattr(call, "function", None) for call in getattr(msg, "tool_calls", None) or []]
    calls = [{"tool": getattr(fn, "name", None), "arguments": getattr(fn, "arguments", None)} for fn in fns]
    return tool_calls_answer(
        calls, text, finish, template, mode, args="arguments", many="tool_calls", declared=declared
    )


def _error_message(resp: Any) -> str | None:
    """The ``error.message`` (or ``error`` text) of a body that holds an error object instead of
    ``choices`` (``{"error": {"message": "upstream quota exceeded"}}`` sent with status 200), at most 300
    characters, or None."""
    err = getattr(resp, "error", None)
    if err is None and isinstance(getattr(resp, "model_extra", None), dict):
        err = resp.model_extra.get("error")
    msg = err.get("message") if isinstance(err, dict) else getattr(err, "message", None) or err
    return str(msg)[:300] if isinstance(msg, (str, int, float)) and str(msg).strip() else None


def logprob_score(choice: Any, template: str = "direct", verdict: str | None = None) -> float | None:
    """P(misbehavior) read at the verdict value token of the choice's answer
    (:func:`automonitor.runs.parsing.score_at_verdict` with ``template``'s grammar) from its token
    log-probabilities (top alternatives when sent), or None; given the answer's ``verdict``, None unless
    the token at the verdict's place is that verdict's token and every log-probability used is finite
    and <= 0."""
    lp = getattr(choice, "logprobs", None)
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return None
    toks = [
        (t.token, [(a.token, a.logprob) for a in (t.top_logprobs or [])] or [(t.token, t.logprob)]) for t in content
    ]
    side: Label | None = "misbehavior" if verdict == "misbehavior" else "benign" if verdict == "benign" else None
    return score_at_verdict(toks, grammar_for(template), side)
