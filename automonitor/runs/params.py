"""Run parameters: which are the runner's own, which a backend sees, and which are refused (secrets)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Callable, Mapping, TypeVar
from urllib.parse import SplitResult

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from automonitor.errors import InputError
from automonitor.jsontypes import JSONValue

_FORBIDDEN_PARAM_WORDS = ("api_key", "apikey", "secret", "password", "token_key", "authorization")
# runner-level params (not sent to the backend's cache key)
RUNNER_PARAMS = (
    "max_attempts",
    "backoff_initial",
    "backoff_max",
    "retry_after_max",
    "timeout",
    "fewshot_k",
    "fewshot_seed",
    "repeat",
)
MAX_REPEAT = 50
#: attempts per judgement (the first included) when ``max_attempts`` is not given
DEFAULT_MAX_ATTEMPTS = 6


#: run options of ``run --batch`` given as ``--param KEY=VALUE``: neither runner keys nor sent to the backend;
#: the CLI takes them out of the run's parameters into its batch state (``Run.params["batch"]``, as ``poll_s``
#: and ``size``: :data:`BATCH_STATE_KEYS`)
BATCH_PARAMS = ("batch_poll", "batch_size")
#: the batch state's key of each batch option
BATCH_STATE_KEYS = {"batch_poll": "poll_s", "batch_size": "size"}
#: seconds between two polls of a batch run's open parts when ``batch_poll`` is not given
DEFAULT_BATCH_POLL_S = 30.0
#: the longest poll interval (a day: a provider's batch window is 24 hours; ``time.sleep`` overflows on 1e300)
MAX_BATCH_POLL_S = 86_400.0
#: requests per submitted part when ``batch_size`` is not given
DEFAULT_BATCH_SIZE = 10_000
#: the most requests one batch of each provider holds, as the providers document it: OpenAI, "The file can
#: contain up to 50,000 requests, and can be up to 200 MB in size" (https://platform.openai.com/docs/api-reference/
#: batch/create, ``input_file_id``; https://platform.openai.com/docs/guides/batch); Anthropic, "A Message Batch is
#: limited to either 100,000 Message requests or 256 MB in size, whichever is reached first"
#: (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing; the API reference's ``requests``:
#: maxItems 100000). A part of more is refused by the provider, so ``batch_size`` may not ask for one.
BATCH_SIZE_LIMITS = {"openai": 50_000, "anthropic": 100_000}
#: the largest ``batch_size`` any provider takes (:data:`BATCH_SIZE_LIMITS`); each provider's own limit applies
#: once the run's provider is known (:func:`batch_settings` with ``provider``)
MAX_BATCH_SIZE = max(BATCH_SIZE_LIMITS.values())

P = TypeVar("P", bound=Mapping[str, object])
V = TypeVar("V")
M = TypeVar("M", bound=BaseModel)


def check_params(params: P) -> P:
    """Return ``params`` unchanged after checking that no key names a secret.

    Raises:
        InputError: a key containing ``api_key``, ``secret``, ``password``, ... (keys come only from the
            environment).
    """
    for k in params:
        if any(w in str(k).lower() for w in _FORBIDDEN_PARAM_WORDS):
            raise InputError(f"parameter {k!r} looks like a secret; keys come only from the environment", field="param")
    return params


def backend_params(params: Mapping[str, V]) -> dict[str, V]:
    """The parameters a backend sees (runner-only ones removed; ``timeout`` is shared)."""
    return {k: v for k, v in params.items() if k not in RUNNER_PARAMS or k == "timeout"}


def _whole(v: object) -> int:
    """A whole number: an ``int`` (not ``bool``) or a string of digits (an optional sign, blanks around).

    Raises:
        ValueError: anything else (``2.5``, ``"2.5"``, ``3.0``, ``true``, ``"abc"``, NaN, a list, ...)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and re.fullmatch(r"[+-]?[0-9]+", v.strip()):
        return int(v.strip())  # ValueError past Python's digit limit (4300)
    raise ValueError("not a whole number")


def _seconds(v: object) -> float:
    """A finite number of seconds: an ``int``/``float`` (not ``bool``) or a string holding one.

    Raises:
        ValueError: not a number, NaN or infinite."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            out = float(v)
        except OverflowError:
            raise ValueError("not a finite number") from None
    elif isinstance(v, str):
        out = float(v.strip())  # ValueError for "abc"
    else:
        raise ValueError("not a number")
    if not math.isfinite(out):
        raise ValueError("not a finite number")
    return out


Whole = Annotated[int, BeforeValidator(_whole)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


class RunnerSettings(BaseModel):
    """The runner's own parameters (:data:`RUNNER_PARAMS`), declared once with type and range and
    validated when a run is created (:func:`runner_settings`); every reader takes them from here.

    Counts are whole numbers (an ``int`` or a string of digits: ``3`` and ``"3"``; never ``2.5``,
    ``"2.5"``, ``3.0``, ``true``, ``"abc"``); seconds are finite numbers (NaN and Infinity refused).

    Attributes:
        max_attempts: attempts per judgement, the first included (>= 1, default 6).
        backoff_initial: first back-off in seconds (>= 0, default 0.5).
        backoff_max: back-off cap in seconds (>= 0, default 30).
        retry_after_max: cap on a server's ``Retry-After`` in seconds (>= 0, default 120): a longer one (a 429,
            529 or 503 asking to wait an hour) stops the run at once, its samples pending, with the time the
            server named (:class:`automonitor.runs.runner.retries.WaitTooLong`).
        timeout: total deadline of one request in seconds (> 0; ``None``: the backend's default, 60).
        fewshot_k: few-shot examples shown (>= 1, default 4).
        fewshot_seed: seed drawing them (any whole number, default 0).
        repeat: judgements per sample (1..:data:`MAX_REPEAT`, default 1).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    max_attempts: Whole = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    backoff_initial: Seconds = Field(default=0.5, ge=0.0)
    backoff_max: Seconds = Field(default=30.0, ge=0.0)
    retry_after_max: Seconds = Field(default=120.0, ge=0.0)
    timeout: Seconds | None = Field(default=None, gt=0.0)  # None only as the default (a given null is refused)
    fewshot_k: Whole = Field(default=4, ge=1)
    fewshot_seed: Whole = 0
    repeat: Whole = Field(default=1, ge=1, le=MAX_REPEAT)


#: what each runner parameter must be, in the words of an error message
_NEEDS = {
    "max_attempts": "a whole number >= 1",
    "backoff_initial": "a finite number of seconds >= 0",
    "backoff_max": "a finite number of seconds >= 0",
    "retry_after_max": "a finite number of seconds >= 0",
    "timeout": "a finite number of seconds > 0",
    "fewshot_k": "a whole number >= 1",
    "fewshot_seed": "a whole number",
    "repeat": f"a whole number between 1 and {MAX_REPEAT}",
}


def _declared(
    model: type[M],
    keys: tuple[str, ...],
    needs: Mapping[str, str],
    params: Mapping[str, object],
    option: Callable[[str], str] = lambda name: f"--param {name}",
) -> M:
    """``model`` validated from the ``keys`` that ``params`` gives (other keys ignored; the model's defaults
    for the missing ones): the one rule of every declared run option (:class:`RunnerSettings`,
    :class:`BatchSettings`).

    Raises:
        InputError: a value of the wrong type or out of range (``null`` included: a key given means a
            value); ``field`` names the first such key (in ``keys`` order), the message its option
            (``option(key)``), what it must be (``needs[key]``) and what was given.
    """
    given = {k: params[k] for k in keys if k in params}
    bad = {k for k, v in given.items() if v is None}
    if not bad:
        try:
            return model.model_validate(given)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e.get("loc")}
    name = next(k for k in keys if k in bad)
    shown = repr(given[name])
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise InputError(f"{option(name)} must be {needs[name]}, got {shown}", field=name)


def runner_settings(params: Mapping[str, object]) -> RunnerSettings:
    """The validated runner parameters of a run's ``params`` (other keys ignored; defaults for the
    missing ones).

    Raises:
        InputError: a runner parameter of the wrong type or out of range (``null`` included: a key given
            means a value); ``field`` names the first such parameter (in :data:`RUNNER_PARAMS` order) and
            the message what it must be and what was given.
    """
    return _declared(
        RunnerSettings,
        RUNNER_PARAMS,
        _NEEDS,
        params,
        lambda name: "--repeat/--param repeat" if name == "repeat" else f"--param {name}",
    )


class BatchSettings(BaseModel):
    """The options of a batch run (:data:`BATCH_PARAMS`, ``run --batch --param batch_poll=S
    --param batch_size=N``), declared once with type and range like :class:`RunnerSettings` and validated
    before the run is created (:func:`batch_settings`); the batch steps read them from here
    (:func:`stored_batch_settings`).

    Attributes:
        batch_poll: seconds between two polls of the open parts, a finite number in
            (0, :data:`MAX_BATCH_POLL_S`] (default 30; ``0``, NaN, Infinity and ``"abc"`` refused).
        batch_size: requests per submitted part, a whole number in 1..:data:`MAX_BATCH_SIZE` (an ``int`` or a
            string of digits; never ``2.5``, ``"2.5"``, ``3.0``, ``true``; default 10,000), and at most the run's
            provider's own limit (:data:`BATCH_SIZE_LIMITS`: OpenAI 50,000).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    batch_poll: Seconds = Field(default=DEFAULT_BATCH_POLL_S, gt=0.0, le=MAX_BATCH_POLL_S)
    batch_size: Whole = Field(default=DEFAULT_BATCH_SIZE, ge=1, le=MAX_BATCH_SIZE)


#: what each batch option must be, in the words of an error message
_BATCH_NEEDS = {
    "batch_poll": f"a finite number of seconds > 0 and <= {MAX_BATCH_POLL_S:g}",
    "batch_size": f"a whole number >= 1 and <= {MAX_BATCH_SIZE}",
}


def batch_settings(params: Mapping[str, object], provider: str | None = None) -> BatchSettings:
    """The validated batch options (:data:`BATCH_PARAMS`) of a run's ``--param`` values (other keys
    ignored; defaults for the missing ones): ``"0.5"`` -> ``0.5``, ``"100"`` -> ``100``. With ``provider``
    (the run's batch provider, ``openai`` or ``anthropic``), ``batch_size`` must also be within that
    provider's limit (:data:`BATCH_SIZE_LIMITS`).

    Raises:
        InputError: a batch option of the wrong type or out of range (``null`` included), or a
            ``batch_size`` over ``provider``'s limit; ``field`` names it (``batch_poll`` before
            ``batch_size``), the message what it must be and what was given.
    """
    opts = _declared(BatchSettings, BATCH_PARAMS, _BATCH_NEEDS, params)
    limit = BATCH_SIZE_LIMITS.get(provider or "", MAX_BATCH_SIZE)
    if opts.batch_size > limit:
        raise InputError(
            f"--param batch_size must be a whole number >= 1 and <= {limit} for the {provider} batch API "
            f"(its limit of requests per batch), got {opts.batch_size}",
            field="batch_size",
        )
    return opts


def _stored(run_id: str, what: str, read: Callable[[], M]) -> M:
    """``read()``, its refusal reworded for a stored run (``what``: which of its values)."""
    try:
        return read()
    except InputError as exc:
        raise InputError(
            f"run {run_id} was created with a {what} that is no longer accepted: {exc.message}; "
            "start a new run with a valid value",
            field=exc.field,
        ) from None


def stored_runner_settings(run_id: str, judge_params: Mapping[str, object]) -> RunnerSettings:
    """The runner parameters stored with run ``run_id`` (``Run.params["judge"]``, :func:`runner_settings`),
    checked before anything of the run changes: a run created before they were validated (or written
    straight into the store) may hold one the rule now refuses (``max_attempts: 2.5``, ``fewshot_k: "abc"``).

    Raises:
        InputError: such a value (``field`` names the parameter; the message names the run and says to
            create a new one).
    """
    return _stored(run_id, "parameter", lambda: runner_settings(judge_params))


def stored_batch_settings(run_id: str, state: Mapping[str, object]) -> BatchSettings:
    """The batch options stored with batch run ``run_id`` (its batch state ``Run.params["batch"]``, where
    they are ``poll_s`` and ``size``: :data:`BATCH_STATE_KEYS`), validated as :func:`batch_settings` does
    (with the state's ``provider``);
    the batch steps read them from here.

    Raises:
        InputError: a stored value the rule refuses (``field``: ``batch_poll`` or ``batch_size``; the message
            names the run and says to create a new one).
    """
    given = {name: state[key] for name, key in BATCH_STATE_KEYS.items() if key in state}
    provider = state.get("provider")
    return _stored(run_id, "batch option", lambda: batch_settings(given, str(provider) if provider else None))


def normalised_params(params: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """``params`` with each runner parameter it gives replaced by its validated value
    (:func:`runner_settings`: ``"3"`` -> ``3``, ``"0.5"`` -> ``0.5``); missing ones stay missing, the
    other keys as given.

    Raises:
        InputError: see :func:`runner_settings`.
    """
    settings = runner_settings(params)
    return {k: (getattr(settings, k) if k in RUNNER_PARAMS else v) for k, v in params.items()}


def repeat_count(params: Mapping[str, object]) -> int:
    """The run's ``repeat`` K (judgements per sample, 1..:data:`MAX_REPEAT`, default 1;
    :class:`RunnerSettings`).

    Raises:
        InputError: any runner parameter invalid (:func:`runner_settings`), e.g. ``repeat`` not a whole
            number in 1..MAX_REPEAT (``2.5`` before ran 2 repeats).
    """
    return runner_settings(params).repeat


def fewshot_settings(params: Mapping[str, object]) -> tuple[int, int]:
    """A few-shot run's ``(fewshot_k, fewshot_seed)`` from its parameters (defaults 4 and 0): how many
    train examples its prompt shows and the seed that draws them (:class:`RunnerSettings`).

    Raises:
        InputError: any runner parameter invalid (:func:`runner_settings`), e.g. ``fewshot_k`` not a whole
            number >= 1 (``0``, ``-1``, ``2.5``, ``abc``) or ``fewshot_seed`` not a whole number; ``field``
            names the parameter.
    """
    settings = runner_settings(params)
    return settings.fewshot_k, settings.fewshot_seed


#: query parameters of a base URL whose values are secrets (lower case; also any name containing one of
#: ``_SECRET_QUERY_PARTS``)
SECRET_QUERY_PARAMS = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature", "secret", "password", "auth"}
)
_SECRET_QUERY_PARTS = ("key", "token", "secret", "password", "sig", "auth", "credential")
REDACTED = "***"


def _secret_query_name(name: str) -> bool:
    n = name.strip().lower()
    return n in SECRET_QUERY_PARAMS or any(p in n for p in _SECRET_QUERY_PARTS)


#: a value shaped like a credential whatever its parameter is called: 24 or more URL-safe characters
#: with at least one letter and one digit (API keys, bearer tokens, signatures; not words, dates,
#: versions such as ``2024-02-15-preview`` or model names such as ``gpt-4o-2024-08-06``)
_TOKEN_LIKE = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9])[A-Za-z0-9._~+/=%-]{24,}")


def _secret_value(name: str | None, value: str, *, shape: bool = True) -> bool:
    """Whether ``value`` (of a ``name=value`` item; ``name`` None for a bare item) is a secret: its
    name is a secret name (:func:`_secret_query_name`), or (``shape``) the value is shaped like a token."""
    from urllib.parse import unquote_plus

    if not value:
        return False
    if name is not None and _secret_query_name(unquote_plus(name)):
        return True
    return shape and bool(_TOKEN_LIKE.fullmatch(unquote_plus(value)) or _TOKEN_LIKE.fullmatch(value))


def _url_items(url: str) -> tuple[SplitResult, list[tuple[str | None, str, bool]]]:
    """``(parts, items)``: the split URL and its ``(name, value, shape)`` items that may hold a secret
    (:func:`_secret_value`): path segments and path parameters of the form ``name=value`` (``/key=v``,
    ``;key=v``: by name only, so model and deployment names stay), every query item (``name=value`` or
    bare, by name and shape). The fragment (never sent to a server) is redacted whole by the callers."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    items: list[tuple[str | None, str, bool]] = []
    for seg in re.split(r"[/;]", parts.path):
        name, eq, value = seg.partition("=")
        if eq:
            items.append((name, value, False))
    for pair in parts.query.split("&") if parts.query else []:
        name, eq, value = pair.partition("=")
        items.append((name if eq else None, value if eq else pair, True))
    return parts, items


def redact_url(url: str | None) -> str | None:
    """``url`` with its credentials replaced by ``***``: the userinfo (``user:pass@`` -> ``***@``); in the
    query and the path (segments or ``;`` parameters of the form ``name=value``), every value whose name
    is a secret name (``key``, ``api_key``, ``token``, ``sig``, ``access_token``, ...:
    :data:`SECRET_QUERY_PARAMS` and any name containing key/token/secret/password/sig/auth/credential,
    any case, percent-decoded); in the query, every value or bare item shaped like a token (16+ URL-safe
    characters mixing letters and digits, whatever its name); the whole fragment (never sent to a server). Everything else is kept as written; ``None`` stays
    ``None``. A value that cannot be parsed as a URL is returned with every query value redacted."""
    if url is None:
        return None
    from urllib.parse import urlunsplit

    try:
        parts, _items = _url_items(url)
        netloc = parts.netloc
    except ValueError:
        head, _, query = str(url).partition("?")
        return head + ("?" + "&".join(f"{p.split('=', 1)[0]}={REDACTED}" for p in query.split("&")) if query else "")
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    path = re.sub(r"[^/;]+", lambda m: _redact_pair(m.group(0), shape=False), parts.path)
    query = "&".join(_redact_pair(p) for p in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, path, query, REDACTED if parts.fragment else ""))


def _redact_pair(pair: str, *, shape: bool = True) -> str:
    name, eq, value = pair.partition("=")
    if not eq:
        return REDACTED if _secret_value(None, pair, shape=shape) else pair
    return f"{name}={REDACTED}" if _secret_value(name, value, shape=shape) else pair


def check_base_url(url: str | None, key_env: str | None) -> None:
    """Refuse a base URL with userinfo credentials (``http://user:key@host/v1``): keys come from the
    environment variable ``key_env``. The message shows the URL redacted (:func:`redact_url`).

    Raises:
        InputError: field ``base-url``.
    """
    from urllib.parse import urlsplit

    try:
        credentials = url is not None and "@" in urlsplit(url).netloc  # userinfo (``user@``, ``user:pass@``)
    except ValueError:
        credentials = False
    if credentials:
        where = f"set {key_env} instead" if key_env else "pass keys through the backend's key variable instead"
        raise InputError(
            f"--base-url {redact_url(url)} carries credentials before the host; {where} "
            "(OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic); keys are never taken from a URL",
            field="base-url",
        )


def url_secrets(url: str | None) -> list[str]:
    """The secret values a base URL carries (userinfo, the items :func:`redact_url` redacts), raw and
    percent-decoded, longest first: what :func:`scrub` removes from error texts that echo the URL."""
    if not url:
        return []
    from urllib.parse import unquote_plus, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        found.append(parts.netloc.rsplit("@", 1)[0])
        found += parts.netloc.rsplit("@", 1)[0].split(":")
    for name, value, shape in _url_items(url)[1]:
        if _secret_value(name, value, shape=shape):
            found += [value, unquote_plus(value)]
    if parts.fragment:
        found += [parts.fragment, unquote_plus(parts.fragment)]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def scrub(text: str | None, secrets: list[str]) -> str | None:
    """``text`` with every one of ``secrets`` (:func:`url_secrets`) replaced by ``***``."""
    if not text or not secrets:
        return text
    for s in secrets:
        text = text.replace(s, REDACTED)
    return text
