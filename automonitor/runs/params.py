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
