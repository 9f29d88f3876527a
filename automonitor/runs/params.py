"""Run parameters: which are the runner's own, which a backend sees, and which are refused (secrets)."""

from __future__ import annotations

import re
from typing import Mapping, TypeVar
from urllib.parse import SplitResult

from automonitor.errors import InputError

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


P = TypeVar("P", bound=Mapping[str, object])
V = TypeVar("V")


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


def repeat_count(params: Mapping[str, object]) -> int:
    """The run's ``repeat`` K (judgements per sample, 1..:data:`MAX_REPEAT`, default 1).

    Raises:
        InputError: not an integer in 1..MAX_REPEAT.
    """
    given = params.get("repeat", 1)
    try:
        repeat = int(given) if isinstance(given, (int, float, str)) else 0
    except ValueError:
        repeat = 0
    if not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"--repeat must be between 1 and {MAX_REPEAT}, got {params.get('repeat')!r}", field="repeat")
    return repeat


def fewshot_settings(params: Mapping[str, object]) -> tuple[int, int]:
    """A few-shot run's ``(fewshot_k, fewshot_seed)`` from its parameters (defaults 4 and 0): how many
    train examples its prompt shows and the seed that draws them.

    Raises:
        InputError: ``fewshot_k`` not a whole number >= 1 (``0``, ``-1``, ``2.5``, ``abc``: before, ``abc``
            ended the run with a bare ``ValueError``, 0 and -1 ran a few-shot template with no example and
            2.5 showed 2), or ``fewshot_seed`` not a whole number; ``field`` names the parameter.
    """
    out = []
    for name, default, least in (("fewshot_k", 4, 1), ("fewshot_seed", 0, None)):
        given = params.get(name, default)
        value: int | None = None
        if isinstance(given, int) and not isinstance(given, bool):
            value = given
        elif isinstance(given, str) and re.fullmatch(r"[+-]?\d+", given.strip()):
            value = int(given)
        if value is None or (least is not None and value < least):
            need = f"a whole number >= {least}" if least is not None else "a whole number"
            raise InputError(f"--param {name} must be {need}, got {given!r}", field=name)
        out.append(value)
    return out[0], out[1]


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
