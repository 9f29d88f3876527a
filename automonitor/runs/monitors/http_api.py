"""Helpers shared by the HTTP judges (:mod:`.openai_backend`, :mod:`.anthropic_backend`) and their batch
adapters (:mod:`automonitor.runs.batch`): the base URL and its query, the API key, the SDK error mapping onto
:class:`~automonitor.runs.monitors.judgement.TransientError` / ``PermanentError``, and the verdict's JSON
schema. Neither backend imports the other; what both need lives here.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Mapping, TypedDict
from urllib.parse import parse_qsl, urlparse, urlsplit, urlunsplit

from automonitor.jsontypes import JSONObject
from automonitor.errors import InputError
from automonitor.runs.answers import VERDICT_TOOL
from automonitor.runs.monitors.judgement import QUOTA_CODES, PermanentError, TransientError
from automonitor.runs.parsing import (
    ParseResult,
    agreeing_verdicts,
    parse_answer,
    parse_tool_answer,
    text_readings,
    unexpected_tool,
)
from automonitor.timestamps import utcnow
from automonitor.vocab import CATEGORIES, LABELS, MONITOR_SEVERITIES


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
    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return base, dict(parse_qsl(parts.query, keep_blank_values=True))


class SdkOptions(TypedDict):
    """The keyword arguments of an ``openai``/``anthropic`` SDK client (:func:`sdk_options`)."""

    api_key: str
    base_url: str | None
    default_query: dict[str, str] | None
    max_retries: int
    timeout: float


def sdk_options(key: str, base_url: str | None, *, timeout: float, max_retries: int) -> SdkOptions:
    """The keyword arguments of an ``openai``/``anthropic`` SDK client (async or sync): the key, the base
    URL without its query (:func:`split_base_url`; the query goes with every request as
    ``default_query``), ``max_retries`` (0 for live judges: the runner retries) and ``timeout`` (seconds)."""
    base, query = split_base_url(base_url)
    return SdkOptions(api_key=key, base_url=base, default_query=query or None, max_retries=max_retries, timeout=timeout)


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


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
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


VERDICT_SCHEMA_DIRECT: JSONObject = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": list(LABELS)}},
    "required": ["verdict"],
    "additionalProperties": False,
}
VERDICT_SCHEMA_EVIDENCE: JSONObject = {
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


def verdict_schema(evidence: bool) -> JSONObject:
    """The JSON schema of a verdict (with category, severity, evidence for evidence templates)."""
    return VERDICT_SCHEMA_EVIDENCE if evidence else VERDICT_SCHEMA_DIRECT


def tool_calls_answer(
    calls: list[dict[str, object]],
    text: str,
    stop: str | None,
    template: str,
    mode: str,
    *,
    args: str,
    many: str,
    declared: str | None = VERDICT_TOOL,
) -> tuple[str, ParseResult]:
    """``(raw, parsed)`` of a message with tool ``calls`` (``{"tool", args}`` each, in order) and ``text``.

    Without calls: the text and its reading by ``template``'s grammar (``mode`` ``lenient``: the prose
    heuristics). With calls: raw is the JSON of the first call, plus ``many`` (every call, in order) when
    there are several and ``text`` when the message has text too, so the drill-down shows all the judge
    said; parsed is :func:`automonitor.runs.parsing.agreeing_verdicts` of every call's ``args`` and every
    reading of the text (:func:`automonitor.runs.parsing.text_readings`: every verdict the message carries
    must agree, else ``invalid`` ``contradictory``); a call to a tool other than ``declared`` (the tool the
    request declared: :data:`automonitor.runs.answers.VERDICT_TOOL`, ``record_verdict``; ``None`` when it
    declared none, so every call is unexpected) makes it ``invalid`` "unexpected tool call 'NAME'" (grammar 8)."""
    if not calls:
        return text, parse_answer(text, template, stop, mode=mode)
    has_text = bool(text and text.strip())
    raw = {**calls[0], **({many: calls} if len(calls) > 1 else {}), **({"text": text} if has_text else {})}
    results = [
        (
            f"tool call {i + 1}",
            unexpected_tool(c["tool"], declared) or parse_tool_answer(c[args], template, stop, mode=mode),
        )
        for i, c in enumerate(calls)
    ]
    said = text_readings(text, template, stop, mode=mode) if has_text else None
    return json.dumps(raw, default=str), agreeing_verdicts(results, said)


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
    if status is None and (cause := _transport_failure(exc)) is not None:
        # worded by its root cause ("ConnectionRefusedError: [Errno 111] Connect call failed ..."), the SDK's
        # wrapper after it: the SDK's aiohttp transport calls a refused connection "Request timed out."
        what = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        return TransientError("connection", f"{what} ({name})", reached=_dropped(exc))
    if "Timeout" in name:
        return TransientError("timeout", str(exc))
    if name == "APIResponseValidationError" or (isinstance(exc, ValueError) and status is None):
        return TransientError("malformed", f"{name}: {exc}")
    if status is None:  # no connect-phase failure in its causes: the connection was made, then dropped
        if "Connection" in name:
            return TransientError("connection", str(exc), reached=True)
        return TransientError("connection", f"{name}: {exc}", reached=True)
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


#: the transport failures (:func:`_transport_failure`) of a connection that was made, then dropped
_DROPPED_NAMES = ("ConnectionResetError", "BrokenPipeError", "ConnectionAbortedError")
_CONNECT_NAMES = ("ConnectError", "ClientConnector", "ConnectTimeout", "gaierror", "SSLError", "CertificateError")


def _dropped(exc: BaseException) -> bool:
    """Whether ``exc``'s cause chain holds a connection made, then dropped (:data:`_DROPPED_NAMES`: a reset, a
    broken pipe), whatever wraps it (the SDK's aiohttp transport reports a reset as ``APITimeoutError`` caused
    by httpx's ``ConnectTimeout`` caused by aiohttp's ``ClientOSError`` caused by ``ConnectionResetError``)."""
    seen: set[int] = set()
    x: BaseException | None = exc
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        if type(x).__name__ in _DROPPED_NAMES:
            return True
        x = x.__cause__ or x.__context__
    return False


def _transport_failure(exc: BaseException) -> BaseException | None:
    """The root transport failure (connection refused, DNS, TLS, a connect that never completed) in ``exc``'s
    cause chain: the deepest one, or None. The SDKs wrap these differently (the SDK's aiohttp transport reports a
    refused connection as ``APITimeoutError`` caused by httpx's ``ConnectTimeout`` caused by aiohttp's
    ``ClientConnectorError`` caused by ``ConnectionRefusedError``), so the first one found names the wrapper, not
    what happened."""
    seen: set[int] = set()
    x: BaseException | None = exc
    found: BaseException | None = None
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        n = type(x).__name__
        if isinstance(x, ConnectionError) or any(k in n for k in _CONNECT_NAMES):
            found = x
        x = x.__cause__ or x.__context__
    return found


def _quota_code(body: object, message: str) -> str | None:
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
