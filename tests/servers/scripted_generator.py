"""A loopback OpenAI-compatible ``/v1/chat/completions`` server that replays scripted answers.

Used by the generation tests where the right kept/dropped set must be known in advance (the packaged tiny
model answers too poorly for that). ``answers`` maps the text of a chat's last user message to the option
letter to answer ("Let me think. Therefore, the best answer is: (X)."); any other chat gets "I do not
know."; ``prefixes`` (same keys) puts a text before the answer; ``resampled`` (same keys) is the answer to
requests with a nonzero ``seed`` (the generator's extra samples). The first request is answered with HTTP 429
(``Retry-After: first_retry_after``, ``"0"`` by default) to exercise the retries; ``fail`` (same keys) answers
every request of that chat with that HTTP status; ``finish`` (same keys) sends that chat's answer with that
``finish_reason`` (``"length"``: cut off) instead of ``"stop"`` (key ``"*"``: every chat); ``pad`` (same keys) puts that many characters of
filler before that chat's answer (a server ignoring ``max_tokens``); ``status`` answers every request with that status (``401``:
a bad key). ``GET /stats`` gives ``{"total": requests}``; ``sent`` counts the requests of each chat (by its last
user message).
"""

from __future__ import annotations

import time
from collections import Counter

from servers.http_base import LoopbackServer, send_json


class ScriptedGenerator(LoopbackServer):
    def __init__(
        self,
        answers: dict[str, str],
        prefixes: dict[str, str] | None = None,
        resampled: dict[str, str] | None = None,
        *,
        first_retry_after: str = "0",
        fail: dict[str, int] | None = None,
        finish: dict[str, str] | None = None,
        pad: dict[str, int] | None = None,
        status: int | None = None,
        **kw,
    ):
        super().__init__(**kw)
        self.answers, self.prefixes, self.resampled = answers, dict(prefixes or {}), dict(resampled or {})
        self.first_retry_after, self.fail, self.status = first_retry_after, dict(fail or {}), status
        self.finish, self.pad = dict(finish or {}), dict(pad or {})
        self.sent: Counter[str] = Counter()
        self.total = 0

    def stats(self):
        return {"total": self.total}

    def handle(self, h, path, body) -> None:
        msgs = (body or {}).get("messages") or []
        user = [m for m in msgs if m.get("role") == "user"]
        last = str(user[-1].get("content", "")) if user else ""
        with self.lock:
            self.total += 1
            self.sent[last] += 1
            n = self.total
        if self.status is not None:
            return send_json(
                h, self.status, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
            )
        if n == 1:
            return send_json(
                h,
                429,
                {"error": {"message": "slow down", "type": "rate_limit"}},
                headers={"retry-after": self.first_retry_after},
            )
        if last in self.fail:
            return send_json(
                h, self.fail[last], {"error": {"message": "this prompt is refused", "type": "invalid_request_error"}}
            )
        letter = self.answers.get(last)
        if (body or {}).get("seed", 0) and last in self.resampled:  # a second sample (seed >= 1) may differ
            letter = self.resampled[last]
        content = f"Let me think. Therefore, the best answer is: ({letter})." if letter else "I do not know."
        content = "x" * self.pad.get(last, 0) + self.prefixes.get(last, "") + content
        send_json(
            h,
            200,
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": self.finish.get(last, self.finish.get("*", "stop")),
                    }
                ],
                "usage": {
                    "prompt_tokens": len(last) // 4,
                    "completion_tokens": len(content) // 4,
                    "total_tokens": len(last) // 4 + len(content) // 4,
                },
            },
        )
