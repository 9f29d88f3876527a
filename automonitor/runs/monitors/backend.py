"""The judge backend base class and the registry of backends (``--monitor BACKEND[:MODEL]``).

A backend is one module of this package with a :class:`Backend` subclass decorated with :func:`register`;
everything a caller needs to know about it (default model, key variable, typed ``--param`` values, answer
budgets, reasoning models, prompt-cache prices, stop reasons, token estimate) is an attribute or method of
its class. What it takes and returns is in :mod:`.judgement`; prices come from :mod:`.pricing`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any, Awaitable, ClassVar, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from automonitor.jsontypes import JSONObject
from automonitor.errors import InputError
from automonitor.runs.answers import GRAMMAR_VERSION
from automonitor.runs.monitors import pricing
from automonitor.runs.monitors.http_api import api_key
from automonitor.runs.monitors.judgement import (
    Billed,
    CallCounter,
    Generation,
    Item,
    Judgement,
    PermanentError,
    StopKind,
    TransientError,
)
from automonitor.runs.prompts import PromptBuilder
from automonitor.vocab import MONITOR_BACKENDS
from store.queries.rowtypes import JudgedText


class BackendParams(BaseModel):
    """The ``--param KEY=VALUE`` settings every backend understands, typed and with their defaults.

    Every key a backend accepts is a typed field: an unknown key is refused (``extra="forbid"``;
    :meth:`Backend.parse_params` names it and the accepted ones), so nothing is stored in a run's
    parameters as if it had been applied. Runner keys (``max_attempts``, ``repeat``, ...) are removed
    before a backend sees the parameters (:func:`automonitor.runs.params.backend_params`). A backend
    with more settings subclasses this model and names it in :attr:`Backend.Params`.

    Attributes:
        max_tokens: answer budget in tokens (``None`` = the backend's default for the template kind).
        temperature: sampling temperature (0 = greedy).
        timeout: seconds per request.
        request_chars / response_chars: truncation budgets (characters) of the judged request/response.
        threshold: P(misbehavior) above which a scoring backend says ``misbehavior``.
        price_in / price_out: the model's price in USD per 1M input / output tokens, for a model the
            price table does not list (both or neither; :mod:`automonitor.runs.monitors.pricing`).
    """

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = None
    temperature: float = Field(default=0.0, ge=0.0)
    timeout: float = Field(default=60.0, gt=0.0)
    request_chars: int = Field(default=12000, ge=1)
    response_chars: int = Field(default=16000, ge=1)
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    price_in: float | None = Field(default=None, ge=0.0)
    price_out: float | None = Field(default=None, ge=0.0)

    @model_validator(mode="after")
    def _price_pair(self) -> BackendParams:
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("give both --param price_in=USD and --param price_out=USD (per 1M tokens), or neither")
        return self

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _positive_max_tokens(cls, v: Any) -> Any:
        if v is None:
            return v
        try:
            n = int(v)
        except (TypeError, ValueError):
            n = 0
        if n < 1 or (isinstance(v, float) and v != n):
            raise ValueError(f"max_tokens must be a positive integer, got {v!r}")
        return n


_T = TypeVar("_T")

# backend name -> class; filled by :func:`register` (``automonitor.runs.monitors`` imports every module of the
# package once, so a new backend is one new file with a decorated class)
REGISTRY: dict[str, type[Backend]] = {}


def register(cls: type[Backend]) -> type[Backend]:
    """Class decorator: add a :class:`Backend` subclass to :data:`REGISTRY` under its ``name``.

    Raises:
        ValueError: the class has no ``name``, a backend of this package has a name that is not in
            :data:`automonitor.vocab.MONITOR_BACKENDS` (the CLI's help and the docs list the built-in
            backends from vocab), or another class already took the name. A backend defined outside the
            package (a plug-in, a test's toy) may take any other name.
    """
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a backend name")
    if cls.__module__.startswith("automonitor.") and cls.name not in MONITOR_BACKENDS:
        raise ValueError(f"backend name {cls.name!r} is not in automonitor.vocab.MONITOR_BACKENDS")
    other = REGISTRY.get(cls.name)
    if other is not None and other.__qualname__ != cls.__qualname__:
        raise ValueError(f"backend name {cls.name!r} is taken by {other.__qualname__}")
    REGISTRY[cls.name] = cls
    return cls


class Backend(ABC):
    """Base class of judge backends: every fact a caller needs about a backend lives here.

    Subclasses set ``name`` and ``default_model``, implement :meth:`judge` and register with
    :func:`register`. ``max_concurrency`` caps the runner's concurrency (a local model evaluates one
    sample at a time). ``is_local`` backends need no key and no network. ``key_env`` names the
    environment variable with the API key (``None``: no key). ``takes_base_url``: the backend talks to a
    server whose URL ``--base-url`` may set. ``Params``: the typed ``--param`` model (validated when the
    backend is built; ``self.settings`` holds the result). ``menu_order`` orders the backend lists.
    ``batch_api`` names the batch provider that can run it. The model facts (answer budgets, reasoning
    models, prompt-cache price multipliers, stop reasons) follow.
    """

    name: ClassVar[str] = ""
    default_model: ClassVar[str | None] = None
    max_concurrency: ClassVar[int | None] = None
    is_local: ClassVar[bool] = False
    template_independent: ClassVar[bool] = False  # reads no prompt: one run stands for every template
    key_env: ClassVar[str | None] = None
    takes_base_url: ClassVar[bool] = False
    description: ClassVar[str] = ""
    menu_order: ClassVar[int] = 100
    #: the provider batch API that can run this backend's judgements at a discount (a name registered in
    #: :mod:`automonitor.runs.batch` with ``@batch_provider``), or ``None``: no batch execution
    batch_api: ClassVar[str | None] = None
    Params: ClassVar[type[BackendParams]] = BackendParams
    _client: Any = None  # an HTTP API judge's SDK async client, made on first use (:meth:`aclose` closes it)
    # ---- model facts: a backend states its own (a subclass overrides what differs)
    #: answer budget (tokens) by template kind; a reasoning model gets ``reasoning_max_tokens`` whatever the
    #: template (its hidden or <think> reasoning counts against the budget). ``--param max_tokens=N``
    #: overrides both; the value used is recorded in the run's params (``max_tokens``).
    default_max_tokens: ClassVar[dict[str, int]] = {"direct": 16, "evidence": 600}
    reasoning_max_tokens: ClassVar[int] = 4096
    #: model-id prefixes (``provider/`` dropped, case-insensitive) of the reasoning models this backend
    #: serves, whose answers spend tokens on reasoning first (:meth:`is_reasoning_model`)
    reasoning_models: ClassVar[tuple[str, ...]] = ()
    #: (cache read, cache write) multipliers of the input price for prompt-cached input tokens, by model-id
    #: prefix (the longest wins; providers' pricing pages). A model missing here pays the full input price
    #: for cached tokens (cost never understated). Prices themselves: :mod:`.pricing` (exact model ids).
    cached_input: ClassVar[dict[str, tuple[float, float]]] = {}
    #: the provider's stop/finish reasons -> ``normal`` | ``truncated`` | ``refusal`` | ``filtered``; a
    #: reason missing from the table is unscored too (:func:`~.judgement.stop_judgement`)
    stop_reasons: ClassVar[dict[str, StopKind]] = {}

    def __init__(self, model: str | None, base_url: str | None, params: JSONObject, prompt: PromptBuilder):
        self.model = model or self.default_model
        self.base_url = base_url
        self.params = dict(params or {})
        self.settings = self.parse_params(self.params)
        self.prompt = prompt

    @classmethod
    def parse_params(cls, params: JSONObject | None) -> BackendParams:
        """``params`` validated against :attr:`Params` (defaults filled in).

        Raises:
            InputError: a parameter has the wrong type or value (field ``param``).
        """
        try:
            return cls.Params.model_validate(dict(params or {}))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(x) for x in err.get("loc", ())) or "?"
            if err.get("type") == "extra_forbidden":
                raise InputError(
                    f"--param {key}: the {cls.name} backend does not take {key!r}; "
                    f"accepted: {', '.join(sorted(cls.Params.model_fields))}",
                    field="param",
                ) from None
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if key == "?" or msg.startswith(key):  # a check across keys, or a message naming its key
                raise InputError(msg, field="param") from None
            raise InputError(f"--param {key}: {msg} (got {err.get('input')!r})", field="param") from None

    @classmethod
    def estimate_tokens(
        cls, model: str | None, params: JSONObject | None, builder: PromptBuilder, texts: Sequence[JudgedText]
    ) -> tuple[int, int]:
        """(prompt tokens, maximum output tokens) of judging ``texts`` (``[{"request", "response"}]``)
        with ``builder``'s template, before any call (no network).

        Default (HTTP judges): characters/4 of the rendered prompts after the ``request_chars`` /
        ``response_chars`` budgets, and n x the answer budget of :meth:`answer_budget` (``--param
        max_tokens`` honoured). Mutates ``builder``'s budgets.

        Raises:
            InputError: bad parameter.
        """
        settings = cls.parse_params(params)
        builder.request_budget, builder.response_budget = settings.request_chars, settings.response_chars
        sys_chars = len(builder.system_text())
        prompt_tokens = sum((sys_chars + len(builder.user_text(t["request"], t["response"])[0])) // 4 for t in texts)
        per_call = cls.answer_budget(model or cls.default_model, settings.max_tokens, builder.template.evidence)
        return prompt_tokens, len(texts) * per_call

    @abstractmethod
    async def judge(self, item: Item, count_call: CallCounter) -> Judgement:
        """Judge one item. Call ``count_call()`` once per request sent (or local evaluation).

        Raises:
            TransientError: retryable failure.
            PermanentError: non-retryable failure.
        """

    async def generate(
        self,
        messages: list[dict[str, str]],
        count_call: CallCounter,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | None = 0,
    ) -> Generation:
        """Generation mode (``automonitor generate``): answer a chat (``[{"role", "content"}, ...]``,
        roles ``system``/``user``/``assistant``) with free text of at most ``max_tokens`` tokens.
        Call ``count_call()`` once per request sent.

        Raises:
            TransientError / PermanentError: as :meth:`judge`; PermanentError for backends that cannot
                generate (the default).
        """
        raise PermanentError(f"the {self.name} backend cannot generate text")

    async def within_deadline(self, coro: Awaitable[_T]) -> _T:
        """Await ``coro`` (one HTTP request) under a total deadline of ``settings.timeout`` seconds: the
        SDKs' own timeout is per read, so a server trickling one byte a second would never trip it.

        Raises:
            TransientError: ``timeout`` when the deadline passes (the request is cancelled).
        """
        limit = self.settings.timeout
        try:
            async with asyncio.timeout(limit):
                return await coro
        except TimeoutError as exc:
            raise TransientError("timeout", f"no complete answer within the {limit:g} s deadline") from exc

    def sent_params(self) -> JSONObject:
        """What this backend actually sent (after any parameter the server refused was dropped), for the
        run's parameters (``Run.params["sent"]``); empty for backends that send nothing."""
        return {}

    def answer_stamp(self) -> JSONObject:
        """How this backend reads answers, for its cache key and ``Run.params["config"]``: ``parse``
        (``strict`` | ``lenient``, ``--param parse``) and ``grammar`` (the version of the rules that read
        answers, the strict grammar's and the lenient reader's: :data:`automonitor.runs.answers.GRAMMAR_VERSION`;
        before grammar 12 a lenient run recorded none, so a cached lenient reading outlived a change of the
        lenient rules); empty for a backend that reads no answer text."""
        mode = getattr(self.settings, "parse", None)
        if mode is None:
            return {}
        return {"parse": mode, "grammar": GRAMMAR_VERSION}

    def cache_params(self) -> JSONObject:
        """Parameters that change the answer (part of the cache key). Excludes concurrency, keys,
        timeouts and anything else that does not change what the judge says."""
        return {}

    async def aclose(self) -> None:
        """Release clients/models: the SDK client of an HTTP API judge (:meth:`_api_settings`) once made; a
        backend holding anything else extends this."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    # ------------------------------------------------------------------ helpers for subclasses
    def _api_settings(self) -> None:
        """Settings every HTTP API judge reads from ``params``: ``temperature`` (0), ``timeout`` (60 s),
        the prompt's ``request_chars`` (12000) and ``response_chars`` (16000) truncation budgets; the
        key from :attr:`key_env` (:func:`~.http_api.api_key`; ``InputError`` when unset for a remote
        server); no client yet (``self._client = None``)."""
        st = self.settings
        self.temperature: float | None = st.temperature  # None: not sent (a reasoning family)
        self.timeout = st.timeout
        self.prompt.request_budget = st.request_chars
        self.prompt.response_budget = st.response_chars
        self._key = api_key(self.key_env or "", self.base_url)

    @classmethod
    def is_reasoning_model(cls, model: str | None) -> bool:
        """Whether ``model`` (``provider/`` prefix dropped, case-insensitive) starts like one of
        :attr:`reasoning_models`."""
        return pricing.model_key(model).startswith(cls.reasoning_models) if model else False

    @classmethod
    def cached_input_factor(cls, model: str | None) -> tuple[float, float]:
        """(read, write) price multipliers for prompt-cached input tokens of ``model``: the longest
        :attr:`cached_input` prefix, ``(1.0, 1.0)`` when none matches."""
        key = pricing.model_key(model)
        best = max((k for k in cls.cached_input if key.startswith(k)), key=len, default="")
        return cls.cached_input[best] if best else (1.0, 1.0)

    @classmethod
    def answer_budget(cls, model: str | None, max_tokens: int | None, evidence: bool) -> int:
        """The answer budget in tokens: ``max_tokens`` (``--param max_tokens``) when given, else
        :attr:`reasoning_max_tokens` for a reasoning model (:meth:`is_reasoning_model`), else
        :attr:`default_max_tokens` of the template kind (``evidence`` or ``direct``)."""
        if max_tokens is not None:
            return max_tokens
        if cls.is_reasoning_model(model):
            return cls.reasoning_max_tokens
        return cls.default_max_tokens["evidence" if evidence else "direct"]

    def price_info(self) -> pricing.Price:
        """This backend's price: free if local, ``--param price_in/price_out`` when set, else the exact
        model id in the price table (:func:`pricing.resolve_price`; ``known`` False when not listed)."""
        st = self.settings
        return pricing.resolve_price(self.model, local=self.is_local, price_in=st.price_in, price_out=st.price_out)

    def billed(self, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write_in: int = 0) -> Billed:
        """The tokens and cost in USD of one call at :meth:`price_info` (cost 0 when local or unknown).

        ``tokens_in`` counts every input token, including ``cached_in`` tokens the provider served from
        its prompt cache (billed at :meth:`cached_input_factor` x the input price) and ``cache_write_in``
        tokens written to it (Anthropic: 1.25 x). Source: the providers' pricing pages (OpenAI "cached
        input", Anthropic "prompt caching": cache reads 0.1 x, 5-minute cache writes 1.25 x).
        """
        rates = self.__dict__.get("_rates")
        if rates is None or rates[0] != self.model:  # looked up once per model (a call per judgement)
            pr = self.price_info()
            rates = self._rates = (self.model, pr, *self.cached_input_factor(self.model))
        _, pr, f_read, f_write = rates
        if cached_in or cache_write_in or tokens_in < 0:  # else both are already 0 (the commonest call)
            cached_in = max(0, min(cached_in, tokens_in))
            cache_write_in = max(0, min(cache_write_in, tokens_in - cached_in))
        plain = tokens_in - cached_in - cache_write_in
        cost = plain * pr.input + cached_in * pr.input * f_read + cache_write_in * pr.input * f_write
        return Billed(tokens_in, tokens_out, (cost + tokens_out * pr.output) / 1_000_000)
