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


def _check_params(params: dict[str, Any]) -> dict[str, Any]:
    for k in params:
        if any(w in str(k).lower() for w in _FORBIDDEN_PARAM_WORDS):
            raise InputError(f"parameter {k!r} looks like a secret; keys come only from the environment", field="param")
    return params


def _backend_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a backend sees (runner-only ones removed; ``timeout`` is shared)."""
    return {k: v for k, v in params.items() if k not in RUNNER_PARAMS or k == "timeout"}

