"""Run parameters: which are the runner's own, which a backend sees, and which are refused (secrets)."""

from __future__ import annotations

from typing import Any

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


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Return ``params`` unchanged after checking that no key names a secret.

    Raises:
        InputError: a key containing ``api_key``, ``secret``, ``password``, ... (keys come only from the
            environment).
    """
    for k in params:
        if any(w in str(k).lower() for w in _FORBIDDEN_PARAM_WORDS):
            raise InputError(f"parameter {k!r} looks like a secret; keys come only from the environment", field="param")
    return params


def backend_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a backend sees (runner-only ones removed; ``timeout`` is shared)."""
    return {k: v for k, v in params.items() if k not in RUNNER_PARAMS or k == "timeout"}


def repeat_count(params: dict[str, Any]) -> int:
    """The run's ``repeat`` K (judgements per sample, 1..:data:`MAX_REPEAT`, default 1).

    Raises:
        InputError: not an integer in 1..MAX_REPEAT.
    """
    try:
        repeat = int(params.get("repeat", 1))
    except (TypeError, ValueError):
        repeat = 0
    if not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"--repeat must be between 1 and {MAX_REPEAT}, got {params.get('repeat')!r}", field="repeat")
    return repeat


# the names before the runner became a package


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


def redact_url(url: str | None) -> str | None:
    """``url`` with its credentials replaced by ``***``: the userinfo (``user:pass@`` -> ``***@``) and the
    values of secret query parameters (``key``, ``api_key``, ``token``, ``sig``, ``access_token``, ...:
    :data:`SECRET_QUERY_PARAMS` and any name containing key/token/secret/password/sig/auth). Everything
    else is kept as written; ``None`` stays ``None``. A value that cannot be parsed as a URL is returned
    with every query value redacted."""
    if url is None:
        return None
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        head, _, query = str(url).partition("?")
        return head + ("?" + "&".join(f"{p.split('=', 1)[0]}={REDACTED}" for p in query.split("&")) if query else "")
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = "&".join(_redact_pair(p) for p in parts.query.split("&")) if parts.query else ""
    fragment = "&".join(_redact_pair(p) for p in parts.fragment.split("&")) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_pair(pair: str) -> str:
    from urllib.parse import unquote_plus

    name, eq, _value = pair.partition("=")
    return f"{name}={REDACTED}" if eq and _secret_query_name(unquote_plus(name)) else pair


def url_credentials(url: str | None) -> bool:
    """Whether ``url`` carries userinfo credentials (``user@`` or ``user:pass@`` before the host)."""
    if not url:
        return False
    from urllib.parse import urlsplit

    try:
        return "@" in urlsplit(url).netloc
    except ValueError:
        return False


def check_base_url(url: str | None, key_env: str | None) -> None:
    """Refuse a base URL with userinfo credentials (``http://user:key@host/v1``): keys come from the
    environment variable ``key_env``. The message shows the URL redacted (:func:`redact_url`).

    Raises:
        InputError: field ``base-url``.
    """
    if url_credentials(url):
        where = f"set {key_env} instead" if key_env else "pass keys through the backend's key variable instead"
        raise InputError(
            f"--base-url {redact_url(url)} carries credentials before the host; {where} "
            "(OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic); keys are never taken from a URL",
            field="base-url",
        )


def url_secrets(url: str | None) -> list[str]:
    """The secret values a base URL carries (userinfo, values of secret query parameters), raw and
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
    for pair in (parts.query + "&" + parts.fragment).split("&"):
        name, eq, value = pair.partition("=")
        if eq and value and _secret_query_name(unquote_plus(name)):
            found += [value, unquote_plus(value)]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def scrub(text: str | None, secrets: list[str]) -> str | None:
    """``text`` with every one of ``secrets`` (:func:`url_secrets`) replaced by ``***``."""
    if not text or not secrets:
        return text
    for s in secrets:
        text = text.replace(s, REDACTED)
    return text
