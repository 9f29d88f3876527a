"""Loopback replays of the providers' documented batch endpoints and file formats.

OpenAI Batch API (https://platform.openai.com/docs/guides/batch, /docs/api-reference/batch):
- ``POST /v1/files`` (multipart/form-data: ``purpose=batch``, ``file`` = request JSONL, one line
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``) -> File object;
- ``POST /v1/batches`` ``{"input_file_id", "endpoint", "completion_window": "24h", "metadata"}`` ->
  Batch object with ``status`` moving ``validating -> in_progress -> finalizing -> completed`` (one step
  per ``GET /v1/batches/{id}``; ``expired`` instead of ``completed`` when an item is marked to expire);
- ``GET /v1/batches`` (list), ``GET /v1/files/{id}/content``: the output file (lines ``{"id",
  "custom_id", "response": {"status_code": 200, "request_id", "body": chat.completion}, "error":
  null}``) and the error file (``{"custom_id", "response": {"status_code": 400, "body": {"error"}}}`` for
  a failed request, ``{"custom_id", "response": null, "error": {"code": "batch_expired", "message"}}``
  for an expired one).

Anthropic Message Batches API (https://docs.anthropic.com/en/api/creating-message-batches, ...):
- ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params": {...}}]}`` -> ``message_batch``
  with ``processing_status`` ``in_progress`` (then ``ended`` after ``steps`` retrieves) and
  ``request_counts`` ``{processing, succeeded, errored, canceled, expired}``;
- ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches`` (list),
  ``GET /v1/messages/batches/{id}/results``: JSONL ``{"custom_id", "result": {"type": "succeeded",
  "message": {...}}}`` | ``{"type": "errored", "error": {"type": "error", "error": {"type",
  "message"}}}`` | ``{"type": "expired"}`` | ``{"type": "canceled"}``.

Per item, the user message decides the answer: "os.system" -> misbehavior (OpenAI: "Yes" with
log-probabilities; Anthropic: a ``record_verdict`` tool call), else benign; ``[batch:fail]`` -> a
failed item, ``[batch:expire]`` -> an expired item. The server records every submitted custom_id
(``submitted``), batch creations (``creates``), uploads and retrieves, to check for duplicates.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler

from .http_base import LoopbackServer, Server, send_json

OPENAI_STATES = ("validating", "in_progress", "finalizing", "completed")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def _parse_multipart(ctype: str, raw: bytes) -> dict[str, bytes]:
    boundary = ctype.split("boundary=", 1)[1].strip().strip('"').encode()
    out: dict[str, bytes] = {}
    for part in raw.split(b"--" + boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, _, body = part.partition(b"\r\n\r\n")
        name = head.decode("latin-1").split('name="', 1)[1].split('"', 1)[0] if b'name="' in head else ""
        out[name] = body[:-2] if body.endswith(b"\r\n") else body
    return out


class BatchReplayServer(LoopbackServer):
    """Both providers' batch endpoints on one loopback server (``base_url`` for OpenAI = root + /v1,
    ``root_url`` for Anthropic, whose SDK adds /v1 itself)."""

    def __init__(self, steps: int = 1, port: int = 0):
        super().__init__(port=port)
        self.steps = steps  # retrieves per status step
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.retrieves: Counter = Counter()
        self.submitted: Counter = Counter()  # custom_id -> times submitted (any provider)
        self.creates = 0
        self.uploads = 0
        self._n = 0

    # ------------------------------------------------------------------ plumbing
    def start(self) -> "BatchReplayServer":
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _body(self) -> bytes:
                n = int(self.headers.get("content-length") or 0)
                return self.rfile.read(n) if n else b""

            def do_POST(self):
                try:
                    outer.route(self, "POST", self.path.split("?")[0], self._body())
                except (BrokenPipeError, ConnectionResetError, socket.timeout):
                    pass

            def do_GET(self):
                try:
                    outer.route(self, "GET", self.path.split("?")[0], b"")
                except (BrokenPipeError, ConnectionResetError, socket.timeout):
                    pass

        self._httpd = Server((self.host, self.port), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def _id(self, prefix: str) -> str:
        with self.lock:
            self._n += 1
            return f"{prefix}{self._n:08d}"

    def route(self, h, method: str, path: str, raw: bytes) -> None:
        p = path.rstrip("/")
        if method == "POST" and p == "/v1/files":
            return self._upload(h, raw)
        if method == "POST" and p == "/v1/batches":
            return self._oa_create(h, json.loads(raw or b"{}"))
        if method == "GET" and p == "/v1/batches":
            return send_json(
                h,
                200,
                {
                    "object": "list",
                    "data": [self._oa_view(b) for b in self.batches.values() if b["provider"] == "openai"],
                    "has_more": False,
                },
            )
        if method == "GET" and p.startswith("/v1/batches/"):
            return self._oa_retrieve(h, p.rsplit("/", 1)[1])
        if method == "GET" and p.startswith("/v1/files/") and p.endswith("/content"):
            data = self.files.get(p.split("/")[3])
            if data is None:
                return send_json(h, 404, {"error": {"message": "no such file", "type": "invalid_request_error"}})
            h.send_response(200)
            h.send_header("content-type", "application/octet-stream")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        if method == "POST" and p == "/v1/messages/batches":
            return self._an_create(h, json.loads(raw or b"{}"))
        if method == "GET" and p == "/v1/messages/batches":
            return send_json(
                h,
                200,
                {
                    "data": [self._an_view(b) for b in self.batches.values() if b["provider"] == "anthropic"],
                    "has_more": False,
                    "first_id": None,
                    "last_id": None,
                },
            )
        if method == "GET" and p.startswith("/v1/messages/batches/") and p.endswith("/results"):
            return self._an_results(h, p.split("/")[4])
        if method == "GET" and p.startswith("/v1/messages/batches/"):
            return self._an_retrieve(h, p.rsplit("/", 1)[1])
        send_json(h, 404, {"error": {"message": f"unknown route {method} {path}"}})

    # ------------------------------------------------------------------ answers
    @staticmethod
    def _kind(user: str) -> str:
        if "[batch:fail]" in user:
            return "fail"
        if "[batch:expire]" in user:
            return "expire"
        return "mis" if "os.system" in user else "ben"

    @staticmethod
    def _user_text(msgs) -> str:
        m = next((m for m in reversed(msgs or []) if m.get("role") == "user"), {})
        c = m.get("content", "")
        return c if isinstance(c, str) else json.dumps(c)

    def _chat_completion(self, body: dict, yes: bool, n: int) -> dict:
        content = "Yes" if yes else "No"
        p = 0.9 if yes else 0.2
        lp = None
        if body.get("logprobs"):
            lp = {
                "content": [
                    {
                        "token": content,
                        "logprob": math.log(p if yes else 1 - p),
                        "bytes": None,
                        "top_logprobs": [
                            {"token": "Yes", "logprob": math.log(p), "bytes": None},
                            {"token": "No", "logprob": math.log(1 - p), "bytes": None},
                        ],
                    }
                ]
            }
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": lp,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301},
        }

    # ------------------------------------------------------------------ OpenAI
    def _upload(self, h, raw: bytes) -> None:
        parts = _parse_multipart(h.headers.get("content-type", ""), raw)
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return send_json(h, 400, {"error": {"message": "purpose must be batch", "type": "invalid_request_error"}})
        fid = self._id("file-")
        with self.lock:
            self.files[fid] = parts["file"]
            self.uploads += 1
        send_json(
            h,
            200,
            {
                "id": fid,
                "object": "file",
                "bytes": len(parts["file"]),
                "created_at": int(time.time()),
                "filename": "batch.jsonl",
                "purpose": "batch",
                "status": "processed",
            },
        )

    def _oa_create(self, h, body: dict) -> None:
        data = self.files.get(body.get("input_file_id", ""))
        if data is None or body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return send_json(h, 400, {"error": {"message": "bad batch request", "type": "invalid_request_error"}})
        lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        for ln in lines:
            if ln.get("method") != "POST" or ln.get("url") != "/v1/chat/completions" or "custom_id" not in ln:
                return send_json(h, 400, {"error": {"message": "bad request line", "type": "invalid_request_error"}})
        bid = self._id("batch_")
        with self.lock:
            self.creates += 1
            for ln in lines:
                self.submitted[ln["custom_id"]] += 1
            self.batches[bid] = {
                "provider": "openai",
                "id": bid,
                "lines": lines,
                "step": 0,
                "created": time.time(),
                "input_file_id": body["input_file_id"],
                "metadata": body.get("metadata"),
                "output_file_id": None,
                "error_file_id": None,
            }
        send_json(h, 200, self._oa_view(self.batches[bid]))

    def _oa_status(self, b: dict) -> str:
        i = min(b["step"] // self.steps, len(OPENAI_STATES) - 1)
        st = OPENAI_STATES[i]
        if st == "completed" and any(
            self._kind(self._user_text(ln["body"].get("messages"))) == "expire" for ln in b["lines"]
        ):
            return "expired"
        return st

    def _oa_view(self, b: dict) -> dict:
        st = self._oa_status(b)
        done = st in ("completed", "expired")
        total = len(b["lines"])
        failed = (
            sum(
                1
                for ln in b["lines"]
                if self._kind(self._user_text(ln["body"].get("messages"))) != "mis"
                and self._kind(self._user_text(ln["body"].get("messages"))) != "ben"
            )
            if done
            else 0
        )
        return {
            "id": b["id"],
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": b["input_file_id"],
            "completion_window": "24h",
            "status": st,
            "output_file_id": b["output_file_id"],
            "error_file_id": b["error_file_id"],
            "created_at": int(b["created"]),
            "in_progress_at": None,
            "expires_at": int(b["created"]) + 86400,
            "finalizing_at": None,
            "completed_at": int(time.time()) if st == "completed" else None,
            "failed_at": None,
            "expired_at": int(time.time()) if st == "expired" else None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": total, "completed": (total - failed) if done else 0, "failed": failed},
            "metadata": b["metadata"],
        }

    def _oa_finish(self, b: dict) -> None:
        out, err = [], []
        for ln in b["lines"]:
            kind = self._kind(self._user_text(ln["body"].get("messages")))
            self._n += 1
            rid = f"batch_req_{self._n:08d}"
            if kind == "fail":
                err.append(
                    {
                        "id": rid,
                        "custom_id": ln["custom_id"],
                        "response": {
                            "status_code": 400,
                            "request_id": f"req_{self._n}",
                            "body": {
                                "error": {
                                    "message": "Invalid 'messages'",
                                    "type": "invalid_request_error",
                                    "param": "messages",
                                    "code": None,
                                }
                            },
                        },
                        "error": None,
                    }
                )
            elif kind == "expire":
                err.append(
                    {
                        "id": rid,
                        "custom_id": ln["custom_id"],
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired.",
                        },
                    }
                )
            else:
                out.append(
                    {
                        "id": rid,
                        "custom_id": ln["custom_id"],
                        "response": {
                            "status_code": 200,
                            "request_id": f"req_{self._n}",
                            "body": self._chat_completion(ln["body"], kind == "mis", self._n),
                        },
                        "error": None,
                    }
                )
        if out:
            fid = f"file-out-{b['id']}"
            self.files[fid] = "".join(json.dumps(x) + "\n" for x in out).encode()
            b["output_file_id"] = fid
        if err:
            fid = f"file-err-{b['id']}"
            self.files[fid] = "".join(json.dumps(x) + "\n" for x in err).encode()
            b["error_file_id"] = fid

    def _oa_retrieve(self, h, bid: str) -> None:
        with self.lock:
            b = self.batches.get(bid)
            if b is None or b["provider"] != "openai":
                return send_json(h, 404, {"error": {"message": "no such batch", "type": "invalid_request_error"}})
            self.retrieves[bid] += 1
            before = self._oa_status(b)
            b["step"] += 1
            if self._oa_status(b) in ("completed", "expired") and before not in ("completed", "expired"):
                self._oa_finish(b)
            view = self._oa_view(b)
        send_json(h, 200, view)

    # ------------------------------------------------------------------ Anthropic
    def _an_create(self, h, body: dict) -> None:
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs or any("custom_id" not in r or "params" not in r for r in reqs):
            return send_json(
                h, 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "requests: invalid"}}
            )
        bid = self._id("msgbatch_")
        with self.lock:
            self.creates += 1
            for r in reqs:
                self.submitted[r["custom_id"]] += 1
            self.batches[bid] = {"provider": "anthropic", "id": bid, "lines": reqs, "step": 0, "created": time.time()}
        send_json(h, 200, self._an_view(self.batches[bid]))

    def _an_view(self, b: dict) -> dict:
        ended = b["step"] >= self.steps * 2
        kinds = Counter(self._kind(self._user_text(r["params"].get("messages"))) for r in b["lines"])
        counts = (
            {
                "processing": 0,
                "succeeded": kinds["mis"] + kinds["ben"],
                "errored": kinds["fail"],
                "canceled": 0,
                "expired": kinds["expire"],
            }
            if ended
            else {"processing": len(b["lines"]), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        )
        return {
            "id": b["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "ended_at": _iso(time.time()) if ended else None,
            "created_at": _iso(b["created"]),
            "expires_at": _iso(b["created"] + 86400),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.root_url}/v1/messages/batches/{b['id']}/results" if ended else None,
        }

    def _an_retrieve(self, h, bid: str) -> None:
        with self.lock:
            b = self.batches.get(bid)
            if b is None or b["provider"] != "anthropic":
                return send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": bid}})
            self.retrieves[bid] += 1
            b["step"] += 1
            view = self._an_view(b)
        send_json(h, 200, view)

    @staticmethod
    def _tool_input(params: dict, verdict: str) -> dict:
        """The ``record_verdict`` input a model gives under the request's tool schema: only the properties the
        schema declares (the direct template's is ``{"verdict"}``, with ``additionalProperties: false``)."""
        full = {"category": "none", "severity": "none", "evidence": [], "verdict": verdict}
        tools = params.get("tools") or []
        props = (tools[0].get("input_schema") or {}).get("properties") if tools else None
        return {k: v for k, v in full.items() if k in props} if props else full

    def _an_results(self, h, bid: str) -> None:
        b = self.batches.get(bid)
        if b is None or b["step"] < self.steps * 2:
            return send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": "not ended"}})
        lines = []
        for i, r in enumerate(b["lines"]):
            kind = self._kind(self._user_text(r["params"].get("messages")))
            if kind == "fail":
                res = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "messages: invalid"},
                    },
                }
            elif kind == "expire":
                res = {"type": "expired"}
            else:
                verdict = "misbehavior" if kind == "mis" else "benign"
                res = {
                    "type": "succeeded",
                    "message": {
                        "id": f"msg_{bid}_{i}",
                        "type": "message",
                        "role": "assistant",
                        "model": r["params"].get("model"),
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"toolu_{i:06d}",
                                "name": "record_verdict",
                                "input": self._tool_input(r["params"], verdict),
                            }
                        ],
                        "stop_reason": "tool_use",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 300, "output_tokens": 20},
                    },
                }
            lines.append({"custom_id": r["custom_id"], "result": res})
        lines.reverse()  # results are not guaranteed in request order
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        h.send_response(200)
        h.send_header("content-type", "application/binary")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
