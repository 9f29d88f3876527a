"""The provider side: what :func:`~automonitor.runs.batch.execute.execute_batch` needs of a provider class
(:class:`BatchProvider`), the provider of a name, and the request ids (``am-<prediction id>``)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Protocol, TypeVar

from automonitor.errors import InputError
from automonitor.runs.monitors import REGISTRY, Backend, Item, Judgement, backend_class
from automonitor.runs.monitors.http_api import SdkOptions, sdk_options
from store.queries.rowtypes import SampleText

#: batch provider name -> its class (filled by :func:`batch_provider` when its module is imported)
PROVIDER_CLASSES: dict[str, type] = {}
_C = TypeVar("_C", bound=type)


def batch_provider(name: str) -> Callable[[_C], _C]:
    """Class decorator: register a batch provider class under ``name`` (the value of a backend class's
    ``batch_api``). Raises :class:`ValueError` when ``name`` is taken by another class."""

    def deco(cls: _C) -> _C:
        if PROVIDER_CLASSES.get(name, cls) is not cls:
            raise ValueError(f"batch provider {name!r} is registered twice")
        PROVIDER_CLASSES[name] = cls
        return cls

    return deco


def batch_api_of(backend_name: str) -> str | None:
    """The batch provider that can run backend ``backend_name`` (its class's ``batch_api``), or ``None``
    (an unknown backend or one without batch support)."""
    try:
        return backend_class(backend_name).batch_api
    except Exception:  # noqa: BLE001 - an unknown backend has no batch API
        return None


def batch_backends() -> list[str]:
    """The registered backends whose class has a ``batch_api`` (``["openai", "anthropic"]``), in menu order."""
    return [name for name, cls in REGISTRY.items() if cls.batch_api]


class BatchProvider(Protocol):
    """What :func:`execute_batch` needs of a provider module's class (:mod:`.openai`, :mod:`.anthropic`)."""

    def request_line(self, cid: str, text: SampleText) -> str: ...
    def prepare(self, path: str, run_id: str, part: dict[str, Any]) -> dict[str, Any]: ...
    def create(self, path: str, run_id: str, part: dict[str, Any]) -> str: ...
    def find(self, run_id: str, part: dict[str, Any]) -> str | None: ...
    def retrieve(self, batch_id: str) -> dict[str, Any]: ...
    def results(self, part: dict[str, Any]) -> Iterator[tuple[str, Any]]: ...
    def parse(self, result: Any, sample_id: str, text: SampleText) -> dict[str, Any]: ...
    def close(self) -> None: ...


class SdkBatch:
    """What the provider classes share: the monitor's backend (an HTTP judge, whose ``_request`` builds a
    request body and ``_read`` reads an answer, as in a live call), the provider SDK's sync client (made
    by :meth:`make_client`), reading one result and closing."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.client = self.make_client(
            sdk_options(backend._key, backend.base_url, timeout=max(60.0, backend.timeout), max_retries=3)
        )

    def make_client(self, options: SdkOptions) -> Any:
        """The provider SDK's sync client built with ``options`` (:func:`.http_api.sdk_options`)."""
        raise NotImplementedError

    def request_body(self, text: SampleText) -> dict[str, Any]:
        """The body a live call of the backend sends for the sample ``text`` (its prompt's chat messages
        through the backend's ``_request``): what a batch request line carries."""
        system, user, _ = self.backend.prompt.chat_messages(text["request"], text["response"])
        body: dict[str, Any] = self.backend._request(system, user)
        return body

    def read(self, answer: Any, sample_id: str, text: SampleText) -> Judgement:
        """The backend's judgement of one result's answer (its live ``_read``) on the sample ``text``
        (``{"request", "response"[, "content_hash"]}``).

        Raises:
            Exception: whatever the backend raises on an unreadable answer (the caller records it).
        """
        item = Item(sample_id, text["request"], text["response"], content_hash=text.get("content_hash", ""))
        _, _, meta = self.backend.prompt.chat_messages(text["request"], text["response"])
        judgement: Judgement = self.backend._read(answer, item, meta)
        return judgement

    def close(self) -> None:
        """Close the client (errors on close are ignored: the results are already written)."""
        with contextlib.suppress(Exception):
            self.client.close()


def provider_for(name: str, backend: Backend) -> BatchProvider:
    """The provider class for ``name`` around ``backend``.

    Raises:
        InputError: unknown provider.
    """
    cls = PROVIDER_CLASSES.get(name)
    if cls is None:
        raise InputError(f"unknown batch provider {name!r}", field="batch")
    provider: BatchProvider = cls(backend)
    return provider


def custom_id(prediction_id: int) -> str:
    """The request's custom_id (``am-<prediction id>``: unique in the run, [A-Za-z0-9_-]{1,64})."""
    return f"am-{prediction_id}"


def prediction_id(cid: str) -> int | None:
    """Inverse of :func:`custom_id` (None for a foreign id)."""
    try:
        return int(cid[3:]) if cid.startswith("am-") else None
    except ValueError:
        return None
