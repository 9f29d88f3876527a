"""The provider side: what :func:`~automonitor.batch.execute.execute_batch` needs of a provider class
(:class:`BatchProvider`), the provider of a name, and the request ids (``am-<prediction id>``)."""

from __future__ import annotations

from typing import Any, Iterator, Protocol

from automonitor.errors import InputError
from automonitor.monitors import Backend

PROVIDERS = ("openai", "anthropic")


class BatchProvider(Protocol):
    """What :func:`execute_batch` needs of a provider module's class (:mod:`.openai`, :mod:`.anthropic`)."""

    def request_line(self, cid: str, text: dict[str, Any]) -> str: ...
    def prepare(self, path: str, run_id: str, part: dict[str, Any]) -> dict[str, Any]: ...
    def create(self, path: str, run_id: str, part: dict[str, Any]) -> str: ...
    def find(self, run_id: str, part: dict[str, Any]) -> str | None: ...
    def retrieve(self, batch_id: str) -> dict[str, Any]: ...
    def results(self, part: dict[str, Any]) -> Iterator[tuple[str, Any]]: ...
    def parse(self, result: Any, sample_id: str, text: dict[str, Any]) -> dict[str, Any]: ...
    def close(self) -> None: ...


def _provider(name: str, backend: Backend, client: Any) -> BatchProvider:
    """The provider class for ``name`` around ``backend``.

    Raises:
        InputError: unknown provider.
    """
    if name == "openai":
        from automonitor.batch.openai import OpenAIBatch

        return OpenAIBatch(backend, client)
    if name == "anthropic":
        from automonitor.batch.anthropic import AnthropicBatch

        return AnthropicBatch(backend, client)
    raise InputError(f"unknown batch provider {name!r}", field="batch")


def custom_id(prediction_id: int) -> str:
    """The request's custom_id (``am-<prediction id>``: unique in the run, [A-Za-z0-9_-]{1,64})."""
    return f"am-{prediction_id}"


def prediction_id(cid: str) -> int | None:
    """Inverse of :func:`custom_id` (None for a foreign id)."""
    try:
        return int(cid[3:]) if cid.startswith("am-") else None
    except ValueError:
        return None
