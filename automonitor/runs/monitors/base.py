"""The judge backend interface shared by ``rules``, ``llamacpp``, ``openai`` and ``anthropic``.

A backend turns one :class:`Item` (a sample's request and response; never its gold label) into a
:class:`Judgement`. Transport problems are raised, not returned: :class:`TransientError` (429, 5xx,
529, timeouts, malformed bodies: the runner retries with back-off) or :class:`PermanentError`
(authentication, bad request: no retry). The runner turns a failure after retries into the ``error``
outcome; a backend itself only returns ``misbehavior``, ``benign``, ``invalid`` or ``refusal``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from automonitor.errors import AutomonitorError, InputError, redact
from automonitor.timestamps import utcnow
from automonitor.runs.monitors import pricing
from automonitor.vocab import CATEGORIES, LABELS, MONITOR_BACKENDS, MONITOR_SEVERITIES, Outcome, TransientKind
from automonitor.runs.answers import GRAMMAR_VERSION
from automonitor.runs.parsing import ANSWER_CHAR_CAP, ParseResult, evidence_found
from automonitor.runs.prompts import PromptBuilder


def split_base_url(url: str | None) -> tuple[str | None, dict[str, str]]:
    """``(base, query)``: a base URL without its query string and fragment, and the query items as a
    dict (blank values kept; the last of a repeated name wins). Clients append the endpoint path
    (``/chat/completions``) to ``base`` and send ``query`` with every request, so a base URL such as
    ``https://host/openai/v1?api-version=2024-06-01`` reaches ``/openai/v1/chat/completions?api-version=...``
    instead of a path glued after the query. ``None`` gives ``(None, {})``.

    Raises:
        ValueError: ``url`` cannot be parsed (``urllib.parse.urlsplit``).
    """
    if url is None:
        return None, {}
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return base, dict(parse_qsl(parts.query, keep_blank_values=True))


@dataclass(frozen=True)
class Item:
    """What a judge sees of one sample. ``content_hash`` is the sample's hash (for caching/logging);
    ``repeat`` is the repeat index (``run --repeat K``): backends with a seed send ``seed + repeat``."""

    sample_id: str
    request: str
    response: str
    content_hash: str = ""
    repeat: int = 0


@dataclass
class Judgement:
    """A backend's answer on one sample.

    Attributes:
        outcome: ``misbehavior`` | ``benign`` | ``invalid`` | ``refusal``.
        score: P(misbehavior) in [0, 1] when the backend gives probabilities, else ``None``.
        raw: the judge's raw answer text (or a JSON dump of a tool call).
        reason: why this outcome (parse rule, fired rules, refusal text).
        evidence: quoted spans supporting the verdict.
        pred_category / severity: the judge's category and severity when it gave them.
        tokens_in / tokens_out: tokens billed (or evaluated, for local models) for this call.
        cost_usd: cost of this call in US dollars (0 for local backends and unknown prices).
        meta: extra data (truncation, structured-output mode, rule hits, ...).
    """

    outcome: Outcome
    score: float | None = None
    raw: str | None = None
    reason: str | None = None
    evidence: list[Any] = field(default_factory=list)
    pred_category: str | None = None
    severity: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    # False for answers that say nothing about the sample (empty, cut off by the provider's filter or
    # transport): the runner does not cache them, so a rerun asks again
    cacheable: bool = True


# an answer longer than this many characters per token of its budget, or than ANSWER_CHAR_CAP, is not a
# verdict (``invalid`` "answer over budget"); a stored raw answer keeps at most RAW_STORE_CHARS characters
CHARS_PER_TOKEN_MAX = 32
RAW_STORE_CHARS = 8_000


def bounded_raw(raw: str | None, meta: dict[str, Any] | None = None) -> str | None:
    """``raw`` cut to its first :data:`RAW_STORE_CHARS` characters; when cut, ``meta`` (in place) gains
    ``raw_chars`` (the full length) and ``raw_truncated: true``."""
    if raw is None or len(raw) <= RAW_STORE_CHARS:
        return raw
    if meta is not None:
        meta["raw_chars"] = len(raw)
        meta["raw_truncated"] = True
    return raw[:RAW_STORE_CHARS]


def over_budget(text: str | None, max_tokens: int | None) -> str | None:
    """Why an answer of ``text`` cannot be a verdict for an answer budget of ``max_tokens`` tokens, or
    None: longer than :data:`ANSWER_CHAR_CAP` characters, or than ``max_tokens`` x
    :data:`CHARS_PER_TOKEN_MAX` (+ 200 for framing) characters. No tokenizer writes 32 characters per
    token of ordinary text (BPE vocabularies average about 4), so such an answer was not produced under
    the budget the request set (a broken or hostile server)."""
    if not text:
        return None
    n = len(text)
    if n > ANSWER_CHAR_CAP:
        return f"answer over budget: {n} characters > the {ANSWER_CHAR_CAP} cap"
    if max_tokens and n > int(max_tokens) * CHARS_PER_TOKEN_MAX + 200:
        return f"answer over budget: {n} characters for max_tokens {max_tokens}"
    return None


def token_count(value: Any, meta: dict[str, Any], name: str) -> int:
    """A provider's token count as a non-negative int: a negative, non-numeric or non-finite value is
    clamped to 0 and flagged in ``meta["tokens_clamped"]`` (``{name: value as sent}``)."""
    if value is None:
        return 0
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        n = -1
    if n < 0:
        meta.setdefault("tokens_clamped", {})[name] = value if isinstance(value, (int, float)) else str(value)[:40]
        return 0
    return n


# what a provider's stop/finish reason means for the answer (one table per backend, ``Backend.stop_reasons``)
STOP_NORMAL, STOP_TRUNCATED, STOP_REFUSAL, STOP_FILTERED = "normal", "truncated", "refusal", "filtered"


def stop_judgement(
    kind: str | None,
    stop: str | None,
    raw: str | None,
    *,
    tokens_in: int,
    tokens_out: int,
    cost_usd: float,
    meta: dict[str, Any],
) -> Judgement | None:
    """The unscored :class:`Judgement` of an answer whose provider stop reason ``stop`` is not a normal
    end, from its ``kind`` in the backend's table (``None``: a reason missing from the table, also
    unscored), or None for a normal end. ``truncated`` -> ``invalid`` "truncated"; ``refusal`` ->
    ``refusal``; ``filtered`` (the provider's content filter) -> ``refusal`` with reason
    ``content_filter`` and not cached; an unknown reason -> ``invalid`` "stop reason X"."""
    if kind == STOP_NORMAL:
        return None
    common: dict[str, Any] = {"tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost_usd, "meta": meta}
    raw = bounded_raw(raw, meta)
    if kind == STOP_TRUNCATED:
        meta["parse_detail"] = f"stop reason {stop}"
        return Judgement("invalid", raw=raw, reason="truncated", **common)
    if kind == STOP_REFUSAL:
        return Judgement("refusal", raw=raw, reason=f"stop reason {stop}", **common)
    if kind == STOP_FILTERED:
        return Judgement(
            "refusal",
            raw=raw,
            reason=f"content_filter: the provider's content filter stopped the answer (stop reason {stop})",
            cacheable=False,
            **common,
        )
    return Judgement("invalid", raw=raw, reason=f"stop reason {stop!r} is not a normal end", cacheable=False, **common)


def answer_judgement(
    parsed: ParseResult,
    response: str,
    raw: str | None,
    *,
    score: float | None,
    tokens_in: int,
    tokens_out: int,
    cost_usd: float,
    meta: dict[str, Any],
    max_tokens: int | None = None,
) -> Judgement:
    """The :class:`Judgement` of a judge's parsed answer (``parsing.parse_answer`` / ``parse_tool_answer``).

    Adds to ``meta`` (in place) ``parse_detail`` when the parser left one and ``evidence_found`` (one bool
    per quoted span: is it in ``response``) when the answer quotes evidence. ``score`` (P(misbehavior) in
    [0, 1], or ``None``) is kept, rounded to 6 digits, only with a misbehavior/benign verdict. An answer
    :func:`over_budget` for ``max_tokens`` is ``invalid`` whatever it says; an empty answer is ``invalid``
    and not cached; ``raw`` is stored bounded (:func:`bounded_raw`)."""
    why = over_budget(raw, max_tokens)
    if why is not None:
        return Judgement(
            "invalid",
            raw=bounded_raw(raw, meta),
            reason=why,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost_usd,
            meta=meta,
        )
    raw = bounded_raw(raw, meta)
    if parsed.detail:
        meta["parse_detail"] = parsed.detail
    if parsed.evidence:
        meta["evidence_found"] = evidence_found(parsed.evidence, response)
    verdict = parsed.outcome in ("misbehavior", "benign")
    return Judgement(
        parsed.outcome,
        score=round(score, 6) if verdict and score is not None else None,
        raw=raw,
        reason=parsed.reason,
        evidence=parsed.evidence,
        pred_category=parsed.category,
        severity=parsed.severity,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=cost_usd,
        meta=meta,
        cacheable=parsed.reason != "empty answer",
    )


@dataclass
class Generation:
    """A backend's free-text answer in generation mode (:meth:`Backend.generate`).

    Attributes:
        text: the model's answer text.
        finish_reason: the server's finish/stop reason (``stop``, ``length``/``max_tokens``, ...).
        tokens_in / tokens_out: tokens billed (or evaluated locally) for this call.
        cost_usd: cost of this call in US dollars from the price table (0 for local backends).
        meta: extra data (served model name, latency).
    """

    text: str
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


class TransientError(AutomonitorError):
    """A failure worth retrying.

    Attributes:
        kind: ``rate_limit`` (429), ``overloaded`` (529), ``server`` (5xx), ``timeout``, ``connection``,
            ``malformed`` (a body that is not the documented shape).
        retry_after: seconds the server asked to wait (``Retry-After``), or ``None``.
        status: HTTP status code when there was one.
    """

    def __init__(
        self, kind: TransientKind, message: str = "", *, retry_after: float | None = None, status: int | None = None
    ):
        self.kind, self.retry_after, self.status = kind, retry_after, status
        super().__init__(redact(f"{kind}{f' (HTTP {status})' if status else ''}: {message}")[:500])

    @property
    def rate_limited(self) -> bool:
        """True for 429 and 529: the runner reduces its concurrency (AIMD)."""
        return self.kind in ("rate_limit", "overloaded")


class PermanentError(AutomonitorError):
    """A failure that retrying cannot fix (bad key, bad request, unknown model).

    Attributes:
        status: HTTP status code when there was one.
        code: the provider's error code or type (``invalid_api_key``, ``model_not_found``,
            ``authentication_error``, ...) when it gave one.
    """

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None, run_wide: bool = False):
        self.status, self.code = status, code
        self._run_wide = run_wide
        super().__init__(redact(message)[:500])  # a provider's answer may quote the key it was sent

    @property
    def run_wide(self) -> bool:
        """True for failures that every request of the run will meet too (HTTP 401 bad key, 402/403 no
        access or no credit, 404 unknown model or route, a quota or billing error, or a judge never
        reached): the runner stops the run after a few (fail-fast)."""
        return self._run_wide or self.status in (401, 402, 403, 404) or (self.code or "") in QUOTA_CODES


#: provider error codes/types meaning the account cannot pay for any request (OpenAI ``insufficient_quota``,
#: billing errors): an HTTP 429 carrying one is permanent and run-wide, not a rate limit to retry
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "billing_error"})

CallCounter = Callable[[], None]


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


# backend name -> class; filled by :func:`register` (``automonitor.runs.monitors`` imports every module of the
# package once, so a new backend is one new file with a decorated class)
REGISTRY: dict[str, type["Backend"]] = {}


def register(cls: type["Backend"]) -> type["Backend"]:
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
    backend is built; ``self.settings`` holds the result). ``menu_order`` orders the backend lists. ``batch_api`` names the batch provider that can run it.
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
    # answer budget (tokens) by template kind; a reasoning model gets ``reasoning_max_tokens`` whatever
    # the template (its hidden or <think> reasoning counts against the budget). ``--param max_tokens=N``
    # overrides both; the value used is recorded in the run's params (``max_tokens``).
    default_max_tokens: dict[str, int] = {"direct": 16, "evidence": 600}
    reasoning_max_tokens: int = 4096
    # the provider's stop/finish reasons -> STOP_NORMAL | STOP_TRUNCATED | STOP_REFUSAL | STOP_FILTERED;
    # a reason missing from the table is unscored too (:func:`stop_judgement`)
    stop_reasons: ClassVar[dict[str, str]] = {}

    def __init__(self, model: str | None, base_url: str | None, params: dict[str, Any], prompt: PromptBuilder):
        self.model = model or self.default_model
        self.base_url = base_url
        self.params = dict(params or {})
        self.settings = self.parse_params(self.params)
        self.prompt = prompt

    @classmethod
    def parse_params(cls, params: dict[str, Any] | None) -> BackendParams:
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
                    f"accepted: {', '.join(cls.accepted_params())}",
                    field="param",
                ) from None
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if key == "?" or msg.startswith(key):  # a check across keys, or a message naming its key
                raise InputError(msg, field="param") from None
            raise InputError(f"--param {key}: {msg} (got {err.get('input')!r})", field="param") from None

    @classmethod
    def accepted_params(cls) -> list[str]:
        """The ``--param`` keys this backend takes (its :attr:`Params` fields), sorted."""
        return sorted(cls.Params.model_fields)

    @classmethod
    def estimate_tokens(
        cls, model: str | None, params: dict[str, Any] | None, builder: PromptBuilder, texts: list[dict[str, str]]
    ) -> tuple[int, int]:
        """(prompt tokens, maximum output tokens) of judging ``texts`` (``[{"request", "response"}]``)
        with ``builder``'s template, before any call (no network).

        Default (HTTP judges): characters/4 of the rendered prompts after the ``request_chars`` /
        ``response_chars`` budgets, and n x the answer budget of :meth:`max_tokens_for` (``--param
        max_tokens`` honoured). Mutates ``builder``'s budgets.

        Raises:
            InputError: bad parameter.
        """
        settings = cls.parse_params(params)
        builder.request_budget, builder.response_budget = settings.request_chars, settings.response_chars
        sys_chars = len(builder.system_text())
        prompt_tokens = sum((sys_chars + len(builder.user_text(t["request"], t["response"])[0])) // 4 for t in texts)
        per_call = cls._answer_budget(model or cls.default_model, settings.max_tokens, builder.template.evidence)
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

    async def within_deadline(self, coro: Any) -> Any:
        """Await ``coro`` (one HTTP request) under a total deadline of ``settings.timeout`` seconds: the
        SDKs' own timeout is per read, so a server trickling one byte a second would never trip it.

        Raises:
            TransientError: ``timeout`` when the deadline passes (the request is cancelled).
        """
        limit = float(self.settings.timeout)
        try:
            async with asyncio.timeout(limit):
                return await coro
        except TimeoutError as exc:
            raise TransientError("timeout", f"no complete answer within the {limit:g} s deadline") from exc

    def sent_params(self) -> dict[str, Any]:
        """What this backend actually sent (after any parameter the server refused was dropped), for the
        run's parameters (``Run.params["sent"]``); empty for backends that send nothing."""
        return {}

    def answer_stamp(self) -> dict[str, Any]:
        """How this backend reads answers, for its cache key and ``Run.params["config"]``: ``parse``
        (``strict`` | ``lenient``, ``--param parse``) and ``grammar`` (the strict grammar's version,
        :data:`automonitor.runs.answers.GRAMMAR_VERSION`); empty for a backend that reads no answer text."""
        mode = getattr(self.settings, "parse", None)
        if mode is None:
            return {}
        return {"parse": mode, "grammar": GRAMMAR_VERSION if mode == "strict" else None}

    def cache_params(self) -> dict[str, Any]:
        """Parameters that change the answer (part of the cache key). Excludes concurrency, keys,
        timeouts and anything else that does not change what the judge says."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release clients/models (optional)."""

    # ------------------------------------------------------------------ helpers for subclasses
    def _api_settings(self, key_env: str) -> None:
        """Settings every HTTP API judge reads from ``params``: ``temperature`` (0), ``timeout`` (60 s),
        the prompt's ``request_chars`` (12000) and ``response_chars`` (16000) truncation budgets; the
        key from ``key_env`` (:func:`api_key`; ``InputError`` when unset for a remote server); no client
        yet (``self._client = None``)."""
        st = self.settings
        self.temperature: float | None = st.temperature  # None: not sent (a reasoning family)
        self.timeout = st.timeout
        self.prompt.request_budget = st.request_chars
        self.prompt.response_budget = st.response_chars
        self._key = api_key(key_env, self.base_url)
        self._client: Any = None  # the SDK's async client, made on first use

    def max_tokens_for(self, params: dict[str, Any], evidence: bool) -> int:
        """The answer budget in tokens: ``params["max_tokens"]`` when given (>= 1), else
        :attr:`reasoning_max_tokens` for a reasoning model (:func:`is_reasoning_model`), else
        :attr:`default_max_tokens` of the template kind.

        Raises:
            InputError: ``max_tokens`` is not a positive integer (field ``param``).
        """
        return self._answer_budget(self.model, self.parse_params(params).max_tokens, evidence)

    @classmethod
    def _answer_budget(cls, model: str | None, max_tokens: int | None, evidence: bool) -> int:
        if max_tokens is not None:
            return max_tokens
        if is_reasoning_model(model):
            return cls.reasoning_max_tokens
        return int(cls.default_max_tokens["evidence" if evidence else "direct"])

    def price_info(self) -> pricing.Price:
        """This backend's price: free if local, ``--param price_in/price_out`` when set, else the exact
        model id in the price table (:func:`pricing.resolve_price`; ``known`` False when not listed)."""
        st = self.settings
        return pricing.resolve_price(self.model, local=self.is_local, price_in=st.price_in, price_out=st.price_out)

    def price(self) -> tuple[float, float]:
        """USD per 1M (input, output) tokens for this backend's model (0, 0 if local or unknown)."""
        pr = self.price_info()
        return (pr.input, pr.output)

    def cost(self, tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write_in: int = 0) -> float:
        """Cost in USD of one call from the price table.

        ``tokens_in`` counts every input token, including ``cached_in`` tokens the provider served from
        its prompt cache (billed at :func:`cached_input_factor` x the input price) and ``cache_write_in``
        tokens written to it (Anthropic: 1.25 x). Source: the providers' pricing pages (OpenAI "cached
        input", Anthropic "prompt caching": cache reads 0.1 x, 5-minute cache writes 1.25 x).
        """
        pin, pout = self.price()
        cached_in = max(0, min(int(cached_in), int(tokens_in)))
        cache_write_in = max(0, min(int(cache_write_in), int(tokens_in) - cached_in))
        plain = tokens_in - cached_in - cache_write_in
        f_read, f_write = cached_input_factor(self.model)
        return (plain * pin + cached_in * pin * f_read + cache_write_in * pin * f_write + tokens_out * pout) / 1_000_000


def price_for(model: str | None) -> tuple[float, float]:
    """Table price (USD per 1M input, output tokens) of exactly ``model`` (``provider/`` prefix dropped,
    case-insensitive; dated snapshots only where the data file maps them): :func:`pricing.lookup`;
    ``(0, 0)`` when unknown (check :func:`price_known`)."""
    pr = pricing.lookup(model)
    return (pr.input, pr.output)


def _by_longest_prefix(
    table: dict[str, tuple[float, float]], model: str | None, default: tuple[float, float]
) -> tuple[float, float]:
    """``table`` value of the longest key that prefixes ``model`` (``provider/`` prefix dropped,
    case-insensitive); ``default`` when ``model`` is empty or no key matches."""
    if not model:
        return default
    m = model.lower().rsplit("/", 1)[-1]
    best = max((k for k in table if m.startswith(k)), key=len, default="")
    return table[best] if best else default


# (cache read, cache write) multipliers of the input price, by model prefix (providers' pricing pages,
# mid-2025). A model missing here pays the full input price for cached tokens (cost never understated).
CACHED_INPUT: dict[str, tuple[float, float]] = {
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

REASONING_MODELS = (
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


def is_reasoning_model(model: str | None) -> bool:
    """Whether ``model`` (``provider/`` prefix dropped, case-insensitive) starts like a known reasoning
    model (:data:`REASONING_MODELS`), whose answers spend tokens on reasoning first."""
    if not model:
        return False
    m = model.lower().rsplit("/", 1)[-1]
    return any(m.startswith(p) for p in REASONING_MODELS)


def cached_input_factor(model: str | None) -> tuple[float, float]:
    """(read, write) price multipliers for prompt-cached input tokens of ``model``: the longest
    :data:`CACHED_INPUT` prefix, ``(1.0, 1.0)`` when unknown."""
    return _by_longest_prefix(CACHED_INPUT, model, (1.0, 1.0))


def price_known(model: str | None) -> bool:
    """Whether the price table lists exactly ``model`` (:func:`pricing.lookup`)."""
    return pricing.lookup(model).known


def is_loopback(url: str | None) -> bool:
    """True when ``url``'s host is localhost or a loopback address (127.0.0.0/8, ::1)."""
    if not url:
        return False
    host = (urlparse(url).hostname or "").strip("[]").lower()
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key(env_var: str, base_url: str | None) -> str:
    """The API key from ``env_var``; a dummy key when unset and ``base_url`` is loopback (a local
    server needs none). The key is never stored or logged.

    Raises:
        InputError: the variable is unset and the server is not local (field ``monitor``).
    """
    key = os.environ.get(env_var, "").strip()
    if key:
        return key
    if is_loopback(base_url):
        return "sk-local-no-key"
    raise InputError(
        f"{env_var} is not set (needed for this monitor; a loopback --base-url needs no key)", field="monitor"
    )


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` headers (number or HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
    except Exception:  # noqa: BLE001
        return None
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(ra)
        return max(0.0, (when - utcnow()).total_seconds())
    except Exception:  # noqa: BLE001
        return None


# ---- shared by the OpenAI and Anthropic backends (neither imports the other)

VERDICT_SCHEMA_DIRECT = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": list(LABELS)}},
    "required": ["verdict"],
    "additionalProperties": False,
}
VERDICT_SCHEMA_EVIDENCE = {
    "type": "object",
    "properties": {
        "category": {
            "type": "string",
            "enum": [*CATEGORIES, "none"],
        },
        "severity": {"type": "string", "enum": list(MONITOR_SEVERITIES)},
        "evidence": {"type": "array", "items": {"type": "string"}},
        "verdict": {"type": "string", "enum": list(LABELS)},
    },
    "required": ["category", "severity", "evidence", "verdict"],
    "additionalProperties": False,
}


def verdict_schema(evidence: bool) -> dict[str, Any]:
    """The JSON schema of a verdict (with category, severity, evidence for evidence templates)."""
    return VERDICT_SCHEMA_EVIDENCE if evidence else VERDICT_SCHEMA_DIRECT


def classify_sdk_error(exc: BaseException) -> Exception:
    """Map an ``openai``/``anthropic`` SDK exception (or a decode error) to Transient/PermanentError.

    Transient: timeouts, connection errors, malformed bodies, HTTP 408, 409, 425, 429, 5xx, 529.
    Permanent: every other HTTP status (400 bad request, 401/403 key, 404 model, ...), and any error whose
    code or type is a quota/billing code (:data:`QUOTA_CODES`; OpenAI's 429 ``insufficient_quota``).
    """
    if isinstance(exc, (TransientError, PermanentError)):
        return exc
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if status is None:
        resp = getattr(exc, "response", None)
        status = (
            getattr(resp, "status_code", None) if resp is not None and name != "APIResponseValidationError" else None
        )
    if status is None and _transport_failure(exc):
        return TransientError("connection", f"{name}: {exc} ({_transport_failure(exc)})")
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
    body = getattr(exc, "body", None)
    quota = _quota_code(body, str(exc))
    if quota is not None:
        return PermanentError(f"{name}: {exc}", status=status, code=quota)
    if status == 429:
        return TransientError("rate_limit", str(exc), retry_after=ra, status=status)
    if status == 529:
        return TransientError("overloaded", str(exc), retry_after=ra, status=status)
    if status >= 500 or status in (408, 409, 425):
        return TransientError("server", str(exc), retry_after=ra, status=status)
    code = body.get("code") if isinstance(body, dict) else None
    return PermanentError(f"{name}: {exc}", status=status, code=code if isinstance(code, str) else None)


_CONNECT_NAMES = ("ConnectError", "ClientConnector", "ConnectTimeout", "gaierror", "SSLError", "CertificateError")


def _transport_failure(exc: BaseException) -> str | None:
    """The name of the transport failure (connection refused, DNS, TLS, a connect that never completed)
    in ``exc``'s cause chain, or None: the SDKs wrap these differently (the aiohttp transport reports a
    refused connection as ``APITimeoutError`` caused by ``ClientConnectorError``)."""
    seen: set[int] = set()
    x: BaseException | None = exc
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        n = type(x).__name__
        if isinstance(x, ConnectionError) or any(k in n for k in _CONNECT_NAMES):
            return n
        x = x.__cause__ or x.__context__
    return None


def _quota_code(body: Any, message: str) -> str | None:
    """The quota/billing code of an error body (its ``code`` or ``type`` in :data:`QUOTA_CODES`, the
    body possibly wrapped in ``{"error": ...}``), or None."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict):
        for k in ("code", "type"):
            v = body.get(k)
            if isinstance(v, str) and v in QUOTA_CODES:
                return v
    low = message.lower()
    return next((c for c in sorted(QUOTA_CODES) if c in low), None)
