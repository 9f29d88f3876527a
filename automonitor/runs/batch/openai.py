"""OpenAI Batch API provider for ``run --batch`` (official ``openai`` SDK, sync client).

Request file: one JSONL line per prediction ``{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body": <the same Chat Completions body as a live call>}``, uploaded with
``files.create(purpose="batch")``; ``batches.create(input_file_id, endpoint="/v1/chat/completions",
completion_window="24h", metadata={"automonitor_run", "automonitor_part"})``; ``batches.retrieve``
until ``completed`` / ``expired`` / ``failed`` / ``cancelled``; ``files.content`` of
``output_file_id`` (lines ``{"custom_id", "response": {"status_code", "body"}, "error"}``) and
``error_file_id`` (failed and expired requests).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, Iterator

from automonitor.runs.batch.provider import SdkBatch, batch_provider
from automonitor.runs.batch.result_rows import error_row, judgement_row
from automonitor.runs.monitors.http_api import SdkOptions
from store.queries.rowtypes import SampleText
from automonitor.vocab import BatchErrorKind

if TYPE_CHECKING:
    import openai

ENDPOINT: Final = "/v1/chat/completions"
TERMINAL = ("completed", "expired", "failed", "cancelled")


@batch_provider("openai")
class OpenAIBatch(SdkBatch):
    """Batch provider around an :class:`automonitor.runs.monitors.openai_backend.OpenAIBackend`."""

    client: openai.OpenAI

    def make_client(self, options: SdkOptions) -> openai.OpenAI:
        import openai

        return openai.OpenAI(**options)

    def request_line(self, cid: str, text: SampleText) -> str:
        return json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": self.request_body(text)})

    def prepare(self, path: str, run_id: str, part: dict[str, Any]) -> dict[str, Any]:
        with open(path, "rb") as f:
            fo = self.client.files.create(file=(f"{run_id}-{part['k']}.jsonl", f), purpose="batch")
        return {"file_id": fo.id}

    def create(self, path: str, run_id: str, part: dict[str, Any]) -> str:
        b = self.client.batches.create(
            input_file_id=part["file_id"],
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={"automonitor_run": run_id, "automonitor_part": str(part["k"])},
        )
        return b.id

    def find(self, run_id: str, part: dict[str, Any]) -> str | None:
        """A batch already created for this run's part (by its metadata and input file), if any."""
        for b in self.client.batches.list(limit=100):
            md = b.metadata or {}
            if (
                md.get("automonitor_run") == run_id
                and md.get("automonitor_part") == str(part["k"])
                and (part.get("file_id") is None or b.input_file_id == part.get("file_id"))
            ):
                return b.id
        return None

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        b = self.client.batches.retrieve(batch_id)
        counts = b.request_counts.model_dump(include={"total", "completed", "failed"}) if b.request_counts else {}
        self._last = b
        return {
            "status": b.status,
            "counts": counts,
            "ended": b.status in TERMINAL,
            "done": counts.get("completed", 0) + counts.get("failed", 0),
            "output_file_id": b.output_file_id,
            "error_file_id": b.error_file_id,
        }

    def results(self, part: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        b = self.client.batches.retrieve(part["batch_id"])
        for fid in (b.output_file_id, b.error_file_id):
            if not fid:
                continue
            data = self.client.files.content(fid)
            for line in data.iter_lines() if hasattr(data, "iter_lines") else data.text.splitlines():
                if line.strip():
                    obj = json.loads(line)
                    yield obj.get("custom_id", ""), obj

    def parse(self, result: dict[str, Any], sample_id: str, text: SampleText) -> dict[str, Any]:
        resp, err = result.get("response"), result.get("error")
        if err:
            code = err.get("code") or "error"
            kind: BatchErrorKind = "batch_expired" if code == "batch_expired" else "batch_failed"
            return error_row(kind, f"batch item {code}: {err.get('message', '')}"[:500], raw=json.dumps(err))
        if not resp:
            return error_row("batch_failed", "batch item without response", raw=json.dumps(result)[:2000])
        status = resp.get("status_code")
        body = resp.get("body") or {}
        if status != 200:
            msg = (body.get("error") or {}).get("message", "") if isinstance(body, dict) else str(body)
            return error_row(
                "batch_failed",
                f"batch item failed: HTTP {status}: {msg}"[:500],
                raw=json.dumps(body)[:2000],
                status=status,
            )
        from automonitor.runs.monitors.openai_backend import sdk_completion

        try:
            j = self.read(sdk_completion(body, validate=True), sample_id, text)
        except Exception as exc:  # noqa: BLE001 - a malformed line is that item's error, not the run's
            return error_row(
                "batch_malformed",
                f"unreadable batch result: {type(exc).__name__}: {exc}"[:500],
                raw=json.dumps(body)[:2000],
            )
        return judgement_row(j)
