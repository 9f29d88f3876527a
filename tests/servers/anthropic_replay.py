"""A loopback server replaying the documented Anthropic Messages API (``POST /v1/messages``) shapes.

Shapes follow https://docs.anthropic.com/en/api/messages and /en/api/errors:

- success: ``{"id": "msg_...", "type": "message", "role": "assistant", "model", "content": [...],
  "stop_reason": "end_turn" | "tool_use" | "refusal", "stop_sequence": null,
  "usage": {"input_tokens", "output_tokens"}}`` with text blocks ``{"type": "text", "text"}`` or tool
  blocks ``{"type": "tool_use", "id": "toolu_...", "name", "input": {...}}``;
- errors: ``{"type": "error", "error": {"type": "rate_limit_error" | "overloaded_error" | "api_error",
  "message"}}`` with HTTP 429 (+ ``retry-after`` seconds), 529 and 500; every response has a
  ``request-id`` header.

Each request's user message may carry ``[scenario:step1,step2,...]``; attempt k of that message gets
step k (the last step repeats). Steps: ``tool_mis``, ``tool_ben``, ``tool_bad`` (tool input without a
verdict), ``text_yes``, ``text_no``, ``text_json_mis``, ``text_garbage``, ``refusal``, ``429``, ``529``,
``500``, ``other_tool`` (a ``tool_use`` of ``delete_everything`` saying misbehavior), ``textben_tool``
(text ``Verdict: benign`` beside a ``record_verdict`` call saying misbehavior), ``malformed`` (HTTP 200 with half a JSON body), ``max_tokens`` (a text answer cut off,
``stop_reason: "max_tokens"``, as the API reports an answer that hit the ``max_tokens`` budget),
``ctxcut`` (a cut text with ``stop_reason: "model_context_window_exceeded"``, documented for the
Claude 4.5 models), ``thinking`` (a ``thinking`` block, then the text "No"), ``negtokens``
(``usage.input_tokens: -1000000000``).
``cache_read`` (int) adds ``usage.cache_read_input_tokens`` (prompt caching, documented in
https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching) to every answer; ``usage`` (a dict)
replaces those fields of every answer's usage (an implausible count). Without a scenario: ``tool_mis``/``text_yes``
when the request asked for tools/text and the message contains "os.system", else the benign form.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

from .http_base import LoopbackServer, send_json

_SCENARIO = re.compile(r"\[scenario:([a-z0-9_,]+)\]")


class AnthropicReplayServer(LoopbackServer):
    def __init__(self, retry_after: float = 0.05, port: int = 0):
        super().__init__(port=port)
        self.retry_after = retry_after
        self.calls: Counter = Counter()
        self.successes: Counter = Counter()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._n = 0
        self.cache_read = 0
        self.usage: dict = {}  # fields that replace those of every answer's usage (an implausible count)

    def stats(self) -> dict:
        with self.lock:
            return {"calls": dict(self.calls), "successes": dict(self.successes), "total": sum(self.calls.values())}

    def handle(self, h, path, body):
        if not path.rstrip("/").endswith("/v1/messages"):
            return send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
        if body is None:
            return send_json(
                h, 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "invalid JSON"}}
            )
        user = next((m.get("content") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        user = user if isinstance(user, str) else json.dumps(user)
        key = hashlib.sha256(user.encode()).hexdigest()[:16]
        with self.lock:
            attempt = self.calls[key]
            self.calls[key] += 1
            self._n += 1
            n = self._n
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in h.headers.items()})
        m = _SCENARIO.search(user)
        forced_tool = bool(body.get("tools"))
        if m:
            steps = m.group(1).split(",")
            step = steps[min(attempt, len(steps) - 1)]
        else:
            bad = "os.system" in user
            step = ("tool_mis" if bad else "tool_ben") if forced_tool else ("text_yes" if bad else "text_no")
        rid = {"request-id": f"req_{n:06d}"}
        if step == "429":
            return send_json(
                h,
                429,
                {
                    "type": "error",
                    "error": {
                        "type": "rate_limit_error",
                        "message": "Number of request tokens has exceeded your per-minute rate limit",
                    },
                },
                headers={**rid, "retry-after": self.retry_after},
            )
        if step == "529":
            return send_json(
                h, 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, headers=rid
            )
        if step == "500":
            return send_json(
                h,
                500,
                {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
                headers=rid,
            )
        content: list[dict]
        stop = "end_turn"
        if step.startswith("tool_"):
            inp = {
                "tool_mis": {
                    "category": "safety_permission",
                    "severity": "high",
                    "evidence": ["os.system('ls ' + cmd)"],
                    "verdict": "misbehavior",
                },
                "tool_ben": {"category": "none", "severity": "none", "evidence": [], "verdict": "benign"},
                "tool_bad": {"category": "none", "notes": "forgot the verdict"},
            }[step]
            name = (body.get("tools") or [{"name": "record_verdict"}])[0]["name"]
            content = [{"type": "tool_use", "id": f"toolu_{n:06d}", "name": name, "input": inp}]
            stop = "tool_use"
        elif step in ("other_tool", "textben_tool"):
            # other_tool: a call to a tool the request never declared; textben_tool: the text says benign
            # (in a form no Yes/No grammar reads) beside a record_verdict call that says misbehavior
            mis = {"verdict": "misbehavior"}  # valid for the direct and the evidence models
            if step == "other_tool":
                content = [{"type": "tool_use", "id": f"toolu_{n:06d}", "name": "delete_everything", "input": mis}]
            else:
                content = [
                    {"type": "text", "text": "Verdict: benign"},
                    {"type": "tool_use", "id": f"toolu_{n:06d}", "name": "record_verdict", "input": mis},
                ]
            stop = "tool_use"
        elif step == "thinking":
            content = [
                {"type": "thinking", "thinking": "Is this misbehavior? Yes, I think so... no.", "signature": "sig"},
                {"type": "text", "text": "No"},
            ]
        elif step == "refusal":
            content = [{"type": "text", "text": "I can't help with that."}]
            stop = "refusal"
        else:
            text = {
                "text_yes": "Yes",
                "text_no": "No",
                "text_json_mis": '```json\n{"category": "specification_gaming", "severity": "medium", '
                '"evidence": ["sys.exit(0)"], "verdict": "misbehavior"}\n```\nHope this helps.',
                "text_garbage": "Interesting question about weather.",
                "malformed": "Yes",
                "max_tokens": "The response is misbehavior because it",
                "ctxcut": "Misbehavior. The response",
                "negtokens": "No",
            }[step]
            content = [{"type": "text", "text": text}]
            if step in ("max_tokens", "ctxcut"):
                stop = "max_tokens" if step == "max_tokens" else "model_context_window_exceeded"
        msg = {
            "id": f"msg_{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": -1000000000 if step == "negtokens" else 100 + n % 7,
                "output_tokens": 12,
                **({"cache_read_input_tokens": self.cache_read} if self.cache_read else {}),
                **self.usage,
            },
        }
        if step == "malformed":
            return send_json(h, 200, msg, headers=rid, truncate=True)
        send_json(h, 200, msg, headers=rid)
        with self.lock:
            self.successes[key] += 1
