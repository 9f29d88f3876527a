"""Anthropic Message Batches provider for ``run --batch`` (official ``anthropic`` SDK, sync client).

``messages.batches.create(requests=[{"custom_id", "params": <the same Messages body as a live
call>}])``; ``messages.batches.retrieve`` until ``processing_status == "ended"``;
``messages.batches.results`` streams the results JSONL (``result.type``: ``succeeded`` with the
``message``, ``errored``, ``canceled``, ``expired``; lines in any order, matched by ``custom_id``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator

from automonitor.runs.batch.provider import SdkBatch, batch_provider
from automonitor.runs.batch.result_rows import error_row, judgement_row
from automonitor.runs.monitors.http_api import SdkOptions
from store.queries.rowtypes import SampleText

if TYPE_CHECKING:
    import anthropic


@batch_provider("anthropic")
class AnthropicBatch(SdkBatch):
    """Batch provider around an :class:`automonitor.runs.monitors.anthropic_backend.AnthropicBackend`."""

    client: anthropic.Anthropic

    def make_client(self, options: SdkOptions) -> anthropic.Anthropic:
        import anthropic

        return anthropic.Anthropic(**options)

    def request_line(self, cid: str, text: SampleText) -> str:
        kw = self.request_body(text)
        extra = kw.pop("extra_body", None) or {}  # the batch API takes the live call's extra body inline
        return json.dumps({"custom_id": cid, "params": {**kw, **extra}})

    def prepare(self, path: str, run_id: str, part: dict[str, Any]) -> dict[str, Any]:
        return {"n": len(part["ids"])}

    def create(self, path: str, run_id: str, part: dict[str, Any]) -> str:
        with open(path, encoding="utf-8") as f:
            requests = [json.loads(line) for line in f if line.strip()]
        return self.client.messages.batches.create(requests=requests).id

    def find(self, run_id: str, part: dict[str, Any]) -> str | None:
        """A batch created after the part's recorded intent with exactly its request count (the
        Message Batches API has no metadata): adopted only when there is exactly one."""
        from datetime import datetime, timezone

        since = datetime.fromtimestamp(float(part.get("intent_at", 0)) - 1, timezone.utc)
        hits = []
        for b in self.client.messages.batches.list(limit=100):
            rc = b.request_counts
            n = rc.processing + rc.succeeded + rc.errored + rc.canceled + rc.expired
            if b.created_at >= since and n == len(part["ids"]):
                hits.append(b.id)
        return hits[0] if len(hits) == 1 else None

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        b = self.client.messages.batches.retrieve(batch_id)
        rc = b.request_counts
        counts = rc.model_dump(include={"processing", "succeeded", "errored", "canceled", "expired"})
        return {
            "status": b.processing_status,
            "counts": counts,
            "ended": b.processing_status == "ended",
            "done": rc.succeeded + rc.errored + rc.canceled + rc.expired,
        }

    def results(self, part: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        for r in self.client.messages.batches.results(part["batch_id"]):
            yield r.custom_id, r.result

    def parse(self, result: Any, sample_id: str, text: SampleText) -> dict[str, Any]:
        kind = getattr(result, "type", None)
        if kind == "succeeded":
            try:
                return judgement_row(self.read(result.message, sample_id, text))
            except Exception as exc:  # noqa: BLE001
                return error_row("batch_malformed", f"unreadable batch result: {type(exc).__name__}: {exc}"[:500])
        if kind == "errored":
            err = getattr(getattr(result, "error", None), "error", None)
            etype, msg = getattr(err, "type", "error"), getattr(err, "message", "")
            return error_row("batch_failed", f"batch item errored: {etype}: {msg}"[:500], error_type=etype)
        if kind == "expired":
            return error_row("batch_expired", "batch item expired before it was processed")
        if kind == "canceled":
            return error_row("batch_canceled", "batch item canceled")
        return error_row("batch_failed", f"unknown batch result type {kind!r}")
