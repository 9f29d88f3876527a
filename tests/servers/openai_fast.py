"""A minimal asyncio OpenAI-compatible ``/v1/chat/completions`` endpoint with a fixed latency.

Used by ``benchmarks/bench_runner.py``: one asyncio event loop, keep-alive HTTP/1.1, no threads, so the
endpoint itself is not the bottleneck when hundreds of requests per second wait out their latency
concurrently. Answers "Yes" when the user message contains "os.system" or "sys.exit", else "No"
(with top-2 log-probabilities when asked). Counts requests; ``GET /stats`` returns ``{"total": n}``.

Run: ``python -m servers.openai_fast --latency 0.2`` (prints the base URL, serves until killed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time


class FastServer:
    def __init__(self, latency: float = 0.2):
        self.latency = latency
        self.total = 0

    def _answer(self, body: dict) -> bytes:
        msgs = body.get("messages") or []
        text = str(msgs[-1].get("content", "")) if msgs else ""
        yes = "os.system" in text or "sys.exit" in text
        p = 0.9 if yes else 0.2
        content = "Yes" if yes else "No"
        logprobs = None
        if body.get("logprobs"):
            logprobs = {
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
        out = {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "bench"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": logprobs,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(text) // 4 + 200,
                "completion_tokens": 1,
                "total_tokens": len(text) // 4 + 201,
            },
        }
        return json.dumps(out).encode()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    if line[:15].lower() == "content-length:":
                        length = int(line[15:].strip())
                raw = await reader.readexactly(length) if length else b""
                if method == "GET":
                    data = json.dumps({"total": self.total}).encode()
                else:
                    self.total += 1
                    await asyncio.sleep(self.latency)
                    data = self._answer(json.loads(raw or b"{}"))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + str(len(data)).encode()
                    + b"\r\n\r\n"
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def serve(self, port: int = 0) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", port, backlog=512)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        async with server:
            await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    try:
        asyncio.run(FastServer(a.latency).serve(a.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
