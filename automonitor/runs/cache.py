"""Content-addressed judge cache keys: what a judge sees of a sample, and the key of one judgement."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, TypeVar

from automonitor.data.monitor_views import render
from automonitor.errors import InputError
from automonitor.hashing import sha256_text
from automonitor.jsontypes import JSONObject
from automonitor.vocab import DEFAULT_VIEW
from automonitor.runs.params import redact_url
from store.queries.rowtypes import Example, JudgedText, SampleText

if TYPE_CHECKING:
    from automonitor.runs.monitors import Backend


def sample_hash(request: str, response: str) -> str:
    """Hex sha256 identifying what a judge sees of a sample: the normalised request and response
    hashes (the gold label is not part of it)."""
    return hashlib.sha256(f"{sha256_text(request)}:{sha256_text(response)}".encode()).hexdigest()


def cache_key(
    backend: str, model: str | None, base_url: str | None, template_hash: str, sample_h: str, params: JSONObject
) -> str:
    """Hex sha256 of the canonical JSON of (backend, model, base URL, template hash, sample hash,
    answer-changing parameters). Base URLs are compared redacted (no secret enters the key) and without a
    trailing slash."""
    return hashlib.sha256(_canonical(backend, model, base_url, template_hash, sample_h, params).encode()).hexdigest()


def _canonical(
    backend: str, model: str | None, base_url: str | None, template_hash: str, sample_h: str, params: JSONObject
) -> str:
    """The canonical JSON that :func:`cache_key` hashes."""
    payload = {
        "backend": backend,
        "model": model,
        "base_url": (redact_url(base_url) or "").rstrip("/") or None,
        "template_hash": template_hash,
        "sample": sample_h,
        "params": params,
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)


#: stands for the sample hash in a :class:`CacheKeys` frame (never a hex digest)
_MARK = "\u2063sample-hash\u2063"


_Text = TypeVar("_Text", SampleText, Example)


def view_text(text: _Text, view: str) -> _Text:
    """``text`` (``{request, response, source?, meta?, ...}``) with its response replaced by what the monitor
    is shown under ``view`` (:func:`automonitor.data.monitor_views.render`; ``full``: unchanged).

    Raises:
        InputError: the sample has no such view (a run only holds samples that have its view, so this
            means the sample changed since the run was created).
    """
    if view == DEFAULT_VIEW:
        return text.copy()
    r = render(text["response"], view, source=text.get("source") or "", meta=text.get("meta"))
    if r is None:
        raise InputError(f"a sample of the run has no {view!r} view (changed since the run was created?)", field="view")
    return {**text, "response": r.text}


class CacheKeys:
    """The cache keys of one monitor configuration: ``keys(text, repeat)`` is the :func:`cache_key` of
    ``backend`` (name, model, base URL), ``template_hash``, the sample ``text`` (``{"request",
    "response", ...}``) and the backend's answer-changing parameters plus the prompt fingerprint (fixed
    when the object is made). Repeat k > 0 adds ``{"repeat": k}`` to the parameters; repeat 0 keeps the
    plain key, so a K-repeat run and a single run share their repeat-0 verdicts. A monitor view other than
    ``full`` adds ``{"view": view}`` (``text`` is then already the view's rendering, :func:`view_text`), so
    two views never share a verdict even where their texts coincide; ``full`` keeps the plain key. With
    few-shot examples under a view, ``{"examples_view": view}`` too: the examples are then shown under the
    view as well (:mod:`automonitor.runs.fewshot`), so no verdict of a prompt with full-text examples is
    reused."""

    def __init__(self, backend: Backend, template_hash: str, view: str = DEFAULT_VIEW) -> None:
        self.backend = backend
        self.template_hash = template_hash
        self.view = view
        self.params: JSONObject = {**backend.cache_params(), "prompt": backend.prompt.fingerprint()}
        if view != DEFAULT_VIEW:
            self.params["view"] = view
            if backend.prompt.examples:  # few-shot examples are shown under the view too (runs.fewshot)
                self.params["examples_view"] = view
        self._frames: dict[tuple[int, str, str | None, str | None], tuple[bytes, bytes] | None] = {}

    def _frame(self, repeat: int) -> tuple[bytes, bytes] | None:
        """The canonical JSON of :func:`cache_key`'s payload for ``repeat`` cut around the sample hash
        (rendered once per repeat value and backend identity, not per sample); None when the cut is not
        unique (then every key is rendered in full)."""
        b = self.backend
        at = (repeat, b.name, b.model, b.base_url)
        if at not in self._frames:
            params = self.params if not repeat else {**self.params, "repeat": int(repeat)}
            text = _canonical(b.name, b.model, b.base_url, self.template_hash, _MARK, params)
            quoted = json.dumps(_MARK)
            frame = None
            if text.count(quoted) == 1:
                head, tail = text.split(quoted)
                frame = (head.encode(), tail.encode())
            self._frames[at] = frame
        return self._frames[at]

    def __call__(self, text: JudgedText, repeat: int = 0) -> str:
        repeat = int(repeat)
        sample_h = sample_hash(text["request"], text["response"])
        frame = self._frame(repeat)
        if frame is None:  # pragma: no cover - a parameter holding the mark itself
            params = self.params if not repeat else {**self.params, "repeat": repeat}
            return cache_key(
                self.backend.name, self.backend.model, self.backend.base_url, self.template_hash, sample_h, params
            )
        # sample_h is hex: its JSON form is itself in quotes
        return hashlib.sha256(b'%s"%s"%s' % (frame[0], sample_h.encode(), frame[1])).hexdigest()
