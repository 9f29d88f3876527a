"""A loopback OpenAI-compatible ``/v1/chat/completions`` server with fault injection and call counting.

Answers: the verdict is "Yes" when the user message contains one of ``YES_MARKERS`` (e.g. ``os.system``,
``sys.exit``, ``you're absolutely right``), else "No"; JSON when ``response_format`` asks for it, a tool
call when ``tools`` are forced; ``logprobs`` with Yes/No alternatives when asked.

Faults: for each request, with probability ``fault_rate`` (decided by a seeded hash of (sample, attempt),
so the schedule does not depend on timing) one of: ``429`` (with ``Retry-After``), ``500``, ``timeout``
(sleeps ``timeout_sleep`` s, longer than the client's timeout, then answers), ``truncated`` (HTTP 200 with
half a JSON body). A user message containing ``[scenario:a,b,c]`` follows that script instead: attempt k
gets step k (``ok``, ``429``, ``500``, ``503`` (with ``Retry-After``), ``529``, ``timeout``, ``truncated``, ``refuse``, ``garbage``,
``length`` (HTTP 200, the answer cut mid-JSON/mid-sentence with ``finish_reason: "length"``), ``thinkcut``
(an unclosed ``<think>`` block, ``finish_reason: "length"``), ``seedflip`` (answers "Yes" for an odd
``seed`` in the request and "No" for an even one: a judge whose verdict depends on the seed),
``seedzero`` ("Yes" for seed 0 only), ``hang``
(sleeps ``hang_sleep`` s before answering), ``filtered`` (a cut text with ``finish_reason:
"content_filter"``), ``parts`` (``message.content`` as a list of a ``thinking`` and a ``text`` part, as
Mistral sends), ``empty`` (an empty answer), ``huge`` (a 10 MB answer), ``trickle`` (headers, then the
body one byte every ``trickle_s`` seconds), ``html`` (a valid completion served as ``text/html``), ``negtokens`` (``prompt_tokens: -1e9``), ``401``, ``403``, ``404``, ``400`` (a bad request: permanent for that sample),
``quota`` (HTTP 429 ``insufficient_quota``, OpenAI's answer for an account without credit), ``reset``
(the request read, then the connection reset), ``html502`` (a proxy's HTML 502 page), ``contradict``
(an evidence answer whose benign verdict sits next to severity high and a category), ``toolother`` (a call to
``delete_everything`` saying misbehavior), ``tooltext`` (text ``Verdict: benign`` beside a ``record_verdict``
call saying misbehavior), ``lowyes`` / ``highno`` (text ``Yes`` whose logprobs give P(Yes) = 0.007, text ``No``
with P(Yes) = 0.95: a score that disagrees with its own answer), ``twochoices`` (two choices, ``No`` then
``Yes``, where the request asked for one)).
``force`` answers every request with one action whatever the message (``401`` bad key, ``404`` unknown
model). ``reasoning=True`` answers as OpenAI does for its reasoning models (o1/o3/o4, gpt-5): HTTP 400
``unsupported_parameter`` for ``max_tokens`` and ``logprobs``, ``unsupported_value`` for a temperature
other than 1, with OpenAI's own messages. ``cached_tokens`` (int) adds
``usage.prompt_tokens_details.cached_tokens`` (at most the prompt tokens) to every answer; ``usage`` (a dict)
replaces those fields of every answer's usage (``{"completion_tokens": 1e30}``: a server's implausible count).
``hold`` (a :class:`threading.Event`) makes every request wait, once read and counted, until the event is set
(at most ``hold_s`` seconds): a test that needs a run to be executing while it does something (a second
process, a check) releases the answers when that is done, instead of slowing every answer down with ``latency``.

Counters (per sample = sha256 of the user message): ``calls``, ``successes`` (complete valid answers),
``faults`` by kind. Run standalone (``python -m tests.servers.openai_fault --latency 0.2``) it prints its
base URL on stdout and serves until killed; ``GET /stats`` returns the counters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
import threading
import time
from collections import Counter

from .http_base import LoopbackServer, send_bytes, send_json

YES_MARKERS = (
    "os.system",
    "sys.exit",
    "you're absolutely right",
    "verify=False",
    "return {",
    "wonderful wonderful",
    "you are right",
    "pick the lock",
    "best answer is: (B)",
)
_SCENARIO = re.compile(r"\[scenario:([a-z0-9_,]+)\]")


def sample_key(body) -> str:
    msgs = (body or {}).get("messages") or []
    user = next((m.get("content") for m in reversed(msgs) if m.get("role") == "user"), "") or ""
    if isinstance(user, list):
        user = json.dumps(user)
    return hashlib.sha256(user.encode()).hexdigest()[:16]


def user_text(body) -> str:
    msgs = (body or {}).get("messages") or []
    return next((m.get("content") for m in reversed(msgs) if m.get("role") == "user"), "") or ""


class OpenAIFaultServer(LoopbackServer):
    def __init__(
        self,
        *,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        seed: int = 0,
        faults: tuple[str, ...] = ("429", "500", "timeout", "truncated"),
        timeout_sleep: float = 1.5,
        retry_after: float = 0.1,
        port: int = 0,
        reject: tuple[str, ...] = (),
    ):
        super().__init__(port=port)
        self.latency, self.fault_rate, self.seed = latency, fault_rate, seed
        self.faults, self.timeout_sleep, self.retry_after = faults, timeout_sleep, retry_after
        self.calls: Counter = Counter()
        self.successes: Counter = Counter()
        self.fault_counts: Counter = Counter()
        self.total = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[dict] = []
        self.raw_requests: list[bytes] = []  # each chat request's body as sent (bytes), beside ``requests``
        self.paths: list[str] = []  # each request's path with its query string, as sent
        self.headers: list[dict[str, str]] = []  # each request's headers (names lower-cased), as sent
        self.keep_requests = True
        self.reject = reject  # request features answered with HTTP 400: "json_schema", "logprobs", "tools"
        self.log: list[tuple[str, int, str, float]] = []  # (sample key, attempt, action, arrival time)
        self.cached_tokens = 0
        self.usage: dict = {}  # fields that replace those of every answer's usage (an implausible count)
        self.hang_sleep = 30.0
        self.force: str | None = None
        self.reasoning = False
        self.trickle_s = 1.0
        self.echo_key = False  # a 401 answer quotes the API key it was sent (as some proxies do)
        self.hold: threading.Event | None = None  # every request waits until it is set (module doc)
        self.hold_s = 120.0

    # ------------------------------------------------------------------ decisions
    def _decide(self, key: str, attempt: int, text: str) -> str:
        if self.force:
            return self.force
        m = _SCENARIO.search(text)
        if m:
            steps = m.group(1).split(",")
            return steps[min(attempt, len(steps) - 1)]
        r = random.Random(f"{self.seed}:{key}:{attempt}")
        if r.random() < self.fault_rate:
            return r.choice(self.faults)
        return "ok"

    def stats(self) -> dict:
        with self.lock:
            return {
                "total": self.total,
                "calls": dict(self.calls),
                "successes": dict(self.successes),
                "faults": dict(self.fault_counts),
                "max_in_flight": self.max_in_flight,
            }

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.successes.clear()
            self.fault_counts.clear()
            self.total = 0
            self.max_in_flight = 0
            self.requests.clear()
            self.raw_requests.clear()
            self.log.clear()

    # ------------------------------------------------------------------ handler
    def handle(self, h, path, body):
        with self.lock:
            self.paths.append(path)
            self.headers.append({k.lower(): v for k, v in h.headers.items()})
        if not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            return send_json(h, 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
        if body is None:
            return send_json(h, 400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
        key = sample_key(body)
        text = user_text(body)
        with self.lock:
            attempt = self.calls[key]
            self.calls[key] += 1
            self.total += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.keep_requests:
                self.requests.append(body)
                self.raw_requests.append(getattr(h, "raw_body", b""))
        try:
            action = self._decide(key, attempt, text)
            rf_type = (body.get("response_format") or {}).get("type")
            rejected = [
                f
                for f in self.reject
                if f == rf_type or (f == "logprobs" and body.get("logprobs")) or (f == "tools" and body.get("tools"))
            ]
            if rejected:
                action = "reject"
            unsupported = self._reasoning_rejects(body) if self.reasoning else None
            if unsupported is not None:
                action = "unsupported"
            with self.lock:
                self.log.append((key, attempt, action, time.monotonic()))
            if self.hold is not None:
                self.hold.wait(self.hold_s)
            if self.latency:
                time.sleep(self.latency)
            if action != "ok":
                with self.lock:
                    self.fault_counts[action] += 1
            if action == "reject":
                what = {
                    "json_schema": "response_format type json_schema is not supported",
                    "json_object": "response_format type json_object is not supported",
                    "logprobs": "logprobs are not supported",
                    "tools": "tools are not supported",
                }[rejected[0]]
                return send_json(h, 400, {"error": {"message": what, "type": "invalid_request_error"}})
            if action == "unsupported":
                return send_json(h, 400, {"error": unsupported})
            if action == "404":
                model = body.get("model")
                return send_json(
                    h,
                    404,
                    {
                        "error": {
                            "message": f"The model `{model}` does not exist or you do not have access to it.",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "model_not_found",
                        }
                    },
                )
            if action == "filtered":
                payload = self._completion(body, text, content="The response is benign. However, the user asked how to")
                payload["choices"][0]["finish_reason"] = "content_filter"
                return send_json(h, 200, payload)
            if action == "parts":
                payload = self._completion(body, text)
                payload["choices"][0]["message"]["content"] = [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "The answer says Yes, misbehavior?"}]},
                    {"type": "text", "text": "No"},
                ]
                return send_json(h, 200, payload)
            if action == "errbody":  # an error object sent with status 200 (a proxy out of quota)
                return send_json(h, 200, {"error": {"message": "upstream quota exceeded", "type": "quota"}})
            if action == "empty":
                return send_json(h, 200, self._completion(body, text, content=""))
            if action == "html":  # a valid completion body served as a web page (a proxy's or portal's page)
                data = json.dumps(self._completion(body, text)).encode()
                h.send_response(200)
                h.send_header("content-type", "text/html; charset=utf-8")
                h.send_header("content-length", str(len(data)))
                h.end_headers()
                h.wfile.write(data)
                return
            if action == "huge":
                return send_json(h, 200, self._completion(body, text, content="Yes " * 2_500_000))
            if action == "negtokens":
                payload = self._completion(body, text)
                payload["usage"] = {"prompt_tokens": -1000000000, "completion_tokens": -5, "total_tokens": -1000000005}
                return send_json(h, 200, payload)
            if action == "trickle":
                data = json.dumps(self._completion(body, text)).encode()
                h.send_response(200)
                h.send_header("content-type", "application/json")
                h.send_header("content-length", str(len(data)))
                h.end_headers()
                for i in range(len(data)):
                    h.wfile.write(data[i : i + 1])
                    h.wfile.flush()
                    time.sleep(self.trickle_s)
                return
            if action == "401":
                return send_json(
                    h,
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided"
                            + (
                                f": {h.headers.get('authorization', '').removeprefix('Bearer ')}"
                                if self.echo_key
                                else ""
                            ),
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
            if action == "403":  # a key without access to the project, model or region (permanent)
                return send_json(
                    h,
                    403,
                    {
                        "error": {
                            "message": "You are not allowed to sample from this model",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "model_not_allowed",
                        }
                    },
                )
            if action == "reset":  # the connection accepted, the request read, then reset (TCP RST)
                import socket
                import struct

                h.close_connection = True
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                h.connection.close()
                return
            if action == "html502":  # a proxy's HTML error page in front of the judge
                page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
                return send_bytes(h, 502, page, "text/html")
            if action == "quota":  # OpenAI's answer for an account without credit: a 429 that no retry fixes
                return send_json(
                    h,
                    429,
                    {
                        "error": {
                            "message": "You exceeded your current quota, please check your plan and billing details.",
                            "type": "insufficient_quota",
                            "param": None,
                            "code": "insufficient_quota",
                        }
                    },
                )
            if action == "400":
                return send_json(
                    h, 400, {"error": {"message": "Invalid request: bad content", "type": "invalid_request_error"}}
                )
            if action == "405":  # a server that does not serve this route's method: a plain-text body
                return send_bytes(h, 405, b"Method Not Allowed", "text/plain")
            if action == "429":
                return send_json(
                    h,
                    429,
                    {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
                    headers={"retry-after": self.retry_after},
                )
            if action == "503":  # a server that is unavailable for a while, and says how long (Retry-After)
                return send_json(
                    h,
                    503,
                    {"error": {"message": "Service unavailable", "type": "server_error"}},
                    headers={"retry-after": self.retry_after},
                )
            if action in ("500", "529"):
                return send_json(
                    h, int(action), {"error": {"message": "The server had an error", "type": "server_error"}}
                )
            if action == "timeout":
                time.sleep(self.timeout_sleep)
                return send_json(h, 200, self._completion(body, text))
            if action == "truncated":
                return send_json(h, 200, self._completion(body, text), truncate=True)
            if action == "hang":
                time.sleep(self.hang_sleep)
                return send_json(h, 200, self._completion(body, text))
            if action in ("length", "thinkcut"):
                evidence = bool(body.get("response_format") or body.get("tools"))
                cut = (
                    '{"category": "specification_gaming", "evidence": ["looks benign but special-cases the'
                    if evidence
                    else "The response is misbehavior because"
                )
                if action == "thinkcut":
                    cut = "<think>\nThe response seems to be misbehavior because"
                payload = self._completion(body, text, content=cut)
                payload["choices"][0]["finish_reason"] = "length"
                send_json(h, 200, payload)
                return
            if action in ("seedflip", "seedzero"):
                seed = int(body.get("seed") or 0)
                yes = seed % 2 == 1 if action == "seedflip" else seed == 0
                payload = self._completion(body, text, content="Yes" if yes else "No")
                send_json(h, 200, payload)
                with self.lock:
                    self.successes[key] += 1
                return
            if action == "refuse":
                payload = self._completion(body, text, content="I'm sorry, but I can't help with evaluating that.")
            elif action == "garbage":
                payload = self._completion(body, text, content="The weather is nice today.")
            elif action in ("toolmix", "tooltwo"):
                # toolmix: text "No" beside a tool call that says misbehavior; tooltwo: two tool calls,
                # misbehavior then benign (the judge's message says both sides)
                payload = self._completion(body, text)
                name = (body.get("tools") or [{"function": {"name": "record_verdict"}}])[0]["function"]["name"]
                sides = ["misbehavior"] if action == "toolmix" else ["misbehavior", "benign"]
                message = payload["choices"][0]["message"]
                message["content"] = "No" if action == "toolmix" else None
                message["tool_calls"] = [
                    {
                        "id": f"call_{i + 1}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"verdict": side})},
                    }
                    for i, side in enumerate(sides)
                ]
                payload["choices"][0]["finish_reason"] = "tool_calls"
            elif action in ("toolother", "tooltext"):
                # toolother: one call to a tool the request never declared, saying misbehavior; tooltext: the
                # text "Verdict: benign" (no Yes/No word) beside a record_verdict call saying misbehavior
                payload = self._completion(body, text)
                message = payload["choices"][0]["message"]
                message["content"] = "Verdict: benign" if action == "tooltext" else None
                name = "delete_everything" if action == "toolother" else "record_verdict"
                args = json.dumps({"verdict": "misbehavior"})  # valid for the direct and the evidence models
                message["tool_calls"] = [
                    {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}
                ]
                payload["choices"][0]["finish_reason"] = "tool_calls"
            elif action == "twochoices":
                # two choices, "No" then "Yes", though the request asked for one (it sends no ``n``)
                payload = self._completion(body, text, content="No")
                second = json.loads(json.dumps(payload["choices"][0]))
                second["index"], second["message"]["content"], second["logprobs"] = 1, "Yes", None
                payload["choices"].append(second)
            elif action in ("lowyes", "highno"):
                # the text's verdict and its own logprobs disagree (a hostile or sampling server): lowyes
                # answers "Yes" with P(Yes) = 0.007, P(No) = 0.993; highno answers "No" with P(Yes) = 0.95
                said, p_yes = ("Yes", 0.007) if action == "lowyes" else ("No", 0.95)
                payload = self._completion(body, text, content=said)
                if body.get("logprobs"):
                    alts = [("Yes", math.log(p_yes)), ("No", math.log(1 - p_yes))]
                    payload["choices"][0]["logprobs"] = {
                        "content": [
                            {
                                "token": said,
                                "logprob": dict(alts)[said],
                                "bytes": None,
                                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in alts],
                            }
                        ]
                    }
            elif action == "contradict":  # a benign verdict next to a high severity and a category
                contradiction = {
                    "category": "safety_permission",
                    "severity": "high",
                    "evidence": [],
                    "verdict": "benign",
                }
                payload = self._completion(body, text, content=json.dumps(contradiction))
            else:
                payload = self._completion(body, text)
            send_json(h, 200, payload)
            with self.lock:
                self.successes[key] += 1
        finally:
            with self.lock:
                self.in_flight -= 1

    @staticmethod
    def _reasoning_rejects(body) -> dict | None:
        """The error object OpenAI answers a reasoning model's request with (HTTP 400), or None."""
        if "max_tokens" in body:
            return {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        if "temperature" in body and body["temperature"] != 1:
            return {
                "message": f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                "model. Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value",
            }
        if body.get("logprobs"):
            return {
                "message": "Unsupported parameter: 'logprobs' is not supported with this model.",
                "type": "invalid_request_error",
                "param": "logprobs",
                "code": "unsupported_parameter",
            }
        return None

    def _completion(self, body, text: str, content: str | None = None) -> dict:
        yes = any(m.lower() in text.lower() for m in YES_MARKERS)
        p_yes = 0.9 if yes else 0.2
        rf = body.get("response_format") or {}
        tools = body.get("tools")
        system = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
        message: dict = {"role": "assistant", "content": None}
        logprobs = None
        if content is not None:
            message["content"] = content
        elif tools:
            args = {"verdict": "misbehavior" if yes else "benign"}
            message["tool_calls"] = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": tools[0]["function"]["name"], "arguments": json.dumps(args)},
                }
            ]
        elif (rf.get("type") in ("json_schema", "json_object") and "misbehavior_detected" in json.dumps(rf)) or (
            not rf and "misbehavior_detected" in system
        ):
            # the paper templates' schema (structured outputs answer in the schema's shape)
            paper: dict = {"misbehavior_detected": yes}
            if "detected_categories" in json.dumps(rf) or (not rf and "detected_categories" in system):
                quote = text.split("STUDENT RESPONSE:", 1)[-1].strip().split("\n")[0][:40]
                paper["detected_categories"] = (
                    [{"category": "Specification Gaming", "description": "special-cases the test", "evidence": [quote]}]
                    if yes
                    else []
                )
            message["content"] = json.dumps(paper)
        elif rf.get("type") in ("json_schema", "json_object") or "Reply with one JSON object" in system:
            # structured output, or an evidence template's text instructions (a model following them)
            obj = {
                "category": "specification_gaming" if yes else "none",
                "severity": "high" if yes else "none",
                "evidence": [text.split("### Response", 1)[-1].strip().split("\n")[0][:40]] if yes else [],
                "verdict": "misbehavior" if yes else "benign",
            }
            if rf and '"category"' not in json.dumps(rf):
                # the direct templates' schema is {"verdict"} alone (additionalProperties false)
                obj = {"verdict": obj["verdict"]}
            message["content"] = json.dumps(obj)
            if body.get("logprobs"):
                pre = message["content"].split('"verdict": "', 1)[0] + '"verdict": "'
                chosen = "mis" if yes else "ben"
                logprobs = {
                    "content": [
                        {
                            "token": pre,
                            "logprob": 0.0,
                            "bytes": None,
                            "top_logprobs": [{"token": pre, "logprob": 0.0, "bytes": None}],
                        },
                        {
                            "token": chosen,
                            "logprob": math.log(p_yes if yes else 1 - p_yes),
                            "bytes": None,
                            "top_logprobs": [
                                {"token": "mis", "logprob": math.log(p_yes), "bytes": None},
                                {"token": "ben", "logprob": math.log(1 - p_yes), "bytes": None},
                            ],
                        },
                        {
                            "token": message["content"][len(pre) + 3 :],
                            "logprob": 0.0,
                            "bytes": None,
                            "top_logprobs": [],
                        },
                    ]
                }
        else:
            message["content"] = "Yes" if yes else "No"
            if body.get("logprobs"):
                logprobs = {
                    "content": [
                        {
                            "token": message["content"],
                            "logprob": math.log(p_yes if yes else 1 - p_yes),
                            "bytes": None,
                            "top_logprobs": [
                                {"token": "Yes", "logprob": math.log(p_yes), "bytes": None},
                                {"token": "No", "logprob": math.log(1 - p_yes), "bytes": None},
                            ],
                        }
                    ]
                }
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": prompt_tokens + 3}
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(int(self.cached_tokens), prompt_tokens)}
        usage.update(self.usage)
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": logprobs,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": usage,
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    srv = OpenAIFaultServer(latency=a.latency, fault_rate=a.fault_rate, seed=a.seed, port=a.port)
    srv.keep_requests = False
    srv.start()
    print(srv.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
