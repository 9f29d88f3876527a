"""What a judge backend takes and gives: the :class:`Item` it judges, the :class:`Judgement` (or, in
generation mode, the :class:`Generation`) it returns, and the two transport failures it raises.

A backend turns one :class:`Item` (a sample's request and response; never its gold label) into a
:class:`Judgement`. Transport problems are raised, not returned: :class:`TransientError` (429, 5xx,
529, timeouts, malformed bodies: the runner retries with back-off) or :class:`PermanentError`
(authentication, bad request: no retry). The runner turns a failure after retries into the ``error``
outcome; a backend itself only returns ``misbehavior``, ``benign``, ``invalid`` or ``refusal``
(:func:`answer_judgement`, :func:`stop_judgement`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo
from typing_extensions import Self

from automonitor.errors import AutomonitorError, redact
from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.runs.parsing import ANSWER_CHAR_CAP, ParseResult, evidence_found
from automonitor.vocab import Outcome, TransientKind


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
    evidence: list[str] = field(default_factory=list)
    pred_category: str | None = None
    severity: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    # False for answers that say nothing about the sample (empty, cut off by the provider's filter or
    # transport): the runner does not cache them, so a rerun asks again
    cacheable: bool = True


@dataclass(frozen=True)
class Billed:
    """What one call cost: ``tokens_in`` / ``tokens_out`` billed (or evaluated, for local models) and
    ``cost_usd`` in US dollars (:meth:`automonitor.runs.monitors.backend.Backend.billed`). ``**vars(billed)``
    gives the keyword arguments of :class:`Judgement` and :class:`Generation`."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


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
    if max_tokens and n > max_tokens * CHARS_PER_TOKEN_MAX + 200:
        return f"answer over budget: {n} characters for max_tokens {max_tokens}"
    return None


def meta_list(meta: JSONObject, key: str) -> list[JSONValue]:
    """``meta[key]``, a list (set to an empty one when absent), to append to."""
    got = meta.setdefault(key, [])
    assert isinstance(got, list), key
    return got


#: token counts must lie in ``[0, TOKEN_COUNT_LIMIT)``: a 32-bit SQL ``INTEGER`` column holds them.
TOKEN_COUNT_LIMIT = 2**31


def token_count(value: object, meta: dict[str, Any], name: str) -> int:
    """A provider's token count, validated: an integer in ``[0, TOKEN_COUNT_LIMIT)`` (an ``int``, or a
    float with an integral value such as ``12.0``) is kept; ``None`` (not reported) is 0; anything else
    (negative, too large such as ``1e30`` or ``2**70``, fractional, non-finite, a string such as ``"12"``,
    a bool) is dropped: 0 (unknown) and flagged in ``meta["tokens_clamped"]`` (``{name: value as sent}``,
    as a string when it is not a number JSON and a SQL column hold as they are). Never raises."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < TOKEN_COUNT_LIMIT:
        return value
    if isinstance(value, float) and value.is_integer() and 0 <= value < TOKEN_COUNT_LIMIT:
        return int(value)
    safe_number = not isinstance(value, bool) and (
        (isinstance(value, int) and abs(value) < 2**53) or (isinstance(value, float) and math.isfinite(value))
    )
    meta.setdefault("tokens_clamped", {})[name] = value if safe_number else str(value)[:40]
    return 0


def _checked_count(value: object, info: ValidationInfo) -> int:
    meta = (info.context or {}).get("meta")
    return token_count(value, meta if meta is not None else {}, info.field_name or "tokens")


TokenCount = Annotated[int, BeforeValidator(_checked_count)]
"""A usage field read through :func:`token_count` (the response's ``meta`` in the validation context)."""


class _UsageModel(BaseModel):
    model_config = ConfigDict(from_attributes=True, extra="ignore", frozen=True)

    @classmethod
    def read(cls, usage: object, meta: JSONObject) -> Self:
        """The usage of one response (an SDK object, a ``SimpleNamespace`` of the lean path or a dict), each
        count validated by :func:`token_count` (flags in ``meta["tokens_clamped"]``); a usage object of the
        wrong shape (not an object, a nested part not an object) is read as no usage and flagged in
        ``meta["tokens_clamped"]["usage"]``. Never raises: the answer is still read."""
        if usage is None:
            return cls()
        try:
            return cls.model_validate(usage, context={"meta": meta})
        except ValidationError:
            token_count(str(usage), meta, "usage")  # not a count: flagged as token_count flags one
            return cls()


class OpenAIPromptDetails(_UsageModel):
    """``usage.prompt_tokens_details`` of a Chat Completions response."""

    cached_tokens: TokenCount = 0


class OpenAIUsage(_UsageModel):
    """``usage`` of a Chat Completions response (both transports: the SDK's object and the lean path's
    namespace): prompt and completion tokens and the prompt-cache reads, each in ``[0, 2**31)``."""

    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    prompt_tokens_details: OpenAIPromptDetails | None = None

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens read from the provider's prompt cache (0 when not reported)."""
        return self.prompt_tokens_details.cached_tokens if self.prompt_tokens_details is not None else 0

    @classmethod
    def counts(cls, usage: object, meta: JSONObject) -> tuple[int, int, int]:
        """``(prompt tokens, completion tokens, cached prompt tokens)`` of one response's ``usage``, as
        :meth:`read` gives them. The lean path's namespace whose counts are plain ints in range is read
        without a model validation (the common answer: 0.3 against 2.4 us warm); anything else goes
        through :meth:`read`, which flags what it drops. Never raises."""
        if type(usage) is SimpleNamespace:
            tin, tout = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = 0 if details is None else getattr(details, "cached_tokens", None)
            if type(details) not in (type(None), SimpleNamespace):
                cached = None
            if type(tin) is int and type(tout) is int and type(cached) is int:
                if 0 <= tin < TOKEN_COUNT_LIMIT and 0 <= tout < TOKEN_COUNT_LIMIT and 0 <= cached < TOKEN_COUNT_LIMIT:
                    return tin, tout, cached
        read = cls.read(usage, meta)
        return read.prompt_tokens, read.completion_tokens, read.cached_tokens


class AnthropicUsage(_UsageModel):
    """``usage`` of a Messages API response: input and output tokens and the prompt-cache reads and writes
    (reported apart from ``input_tokens``), each in ``[0, 2**31)``."""

    input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0
    cache_read_input_tokens: TokenCount = 0
    cache_creation_input_tokens: TokenCount = 0


#: what a provider's stop/finish reason means for the answer (one table per backend, ``Backend.stop_reasons``)
StopKind = Literal["normal", "truncated", "refusal", "filtered"]


def stop_judgement(
    kind: StopKind | None,
    stop: str | None,
    raw: str | None,
    billed: Billed,
    meta: dict[str, Any],
) -> Judgement | None:
    """The unscored :class:`Judgement` of an answer whose provider stop reason ``stop`` is not a normal
    end, from its ``kind`` in the backend's table (``None``: a reason missing from the table, also
    unscored), or None for a normal end. ``truncated`` -> ``invalid`` "truncated"; ``refusal`` (the judge
    itself declined) -> ``refusal``; ``filtered`` (the provider's content filter cut the answer off: not
    the judge declining) -> ``invalid`` with a reason starting ``content_filter``, not cached; an unknown
    reason -> ``invalid`` "stop reason X"."""
    if kind == "normal":
        return None
    common: dict[str, Any] = {**vars(billed), "meta": meta}
    raw = bounded_raw(raw, meta)
    if kind == "truncated":
        meta["parse_detail"] = f"stop reason {stop}"
        return Judgement("invalid", raw=raw, reason="truncated", **common)
    if kind == "refusal":
        return Judgement("refusal", raw=raw, reason=f"stop reason {stop}", **common)
    if kind == "filtered":  # a cut-off answer, not a refusal: the judge did not decline
        return Judgement(
            "invalid",
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
    billed: Billed,
    meta: dict[str, Any],
    *,
    score: float | None,
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
        return Judgement("invalid", raw=bounded_raw(raw, meta), reason=why, meta=meta, **vars(billed))
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
        meta=meta,
        cacheable=parsed.reason != "empty answer",
        tokens_in=billed.tokens_in,
        tokens_out=billed.tokens_out,
        cost_usd=billed.cost_usd,
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
        reached: for ``connection``: the connection to the judge was made (the request went out) and then
            dropped (reset, closed mid-answer), as opposed to a connection never made (refused, DNS, TLS).
    """

    def __init__(
        self,
        kind: TransientKind,
        message: str = "",
        *,
        retry_after: float | None = None,
        status: int | None = None,
        reached: bool = False,
    ):
        self.kind, self.retry_after, self.status, self.reached = kind, retry_after, status, reached
        super().__init__(redact(f"{kind}{f' (HTTP {status})' if status else ''}: {message}")[:500])

    @property
    def rate_limited(self) -> bool:
        """True for 429 and 529: the runner reduces its concurrency (AIMD)."""
        return self.kind in ("rate_limit", "overloaded")

    @property
    def refused(self) -> bool:
        """True when the cause chain holds a ``ConnectionRefusedError``: the address refused the connection (nothing
        listens on that port), whatever the SDK or transport wrapped it in (the openai SDK's aiohttp transport
        reports it as ``APITimeoutError`` caused by httpx's ``ConnectTimeout``)."""
        return connection_refused(self)


def connection_refused(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception in its cause chain (``__cause__``, else ``__context__``) is a
    ``ConnectionRefusedError``."""
    seen: set[int] = set()
    x: BaseException | None = exc
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        if isinstance(x, ConnectionRefusedError):
            return True
        x = x.__cause__ or x.__context__
    return False


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
