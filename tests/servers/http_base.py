"""A tiny threaded HTTP/1.1 loopback server base (keep-alive, one thread per connection)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


class LoopbackServer:
    """Base class: subclasses implement ``handle(handler, path, body_json)``.

    Use as a context manager (``with Server(...) as srv: srv.base_url``) or ``start()``/``stop()``.
    """

    api_prefix = "/v1"

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.host, self.port = host, port
        self.lock = threading.Lock()
        self._httpd: Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.api_prefix}"

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def handle(self, h: "BaseHTTPRequestHandler", path: str, body) -> None:  # pragma: no cover
        raise NotImplementedError

    def start(self) -> "LoopbackServer":
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                self.raw_body = raw  # the request's bytes as sent (a server may keep them)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                try:
                    outer.handle(self, self.path, body)
                except (BrokenPipeError, ConnectionResetError, socket.timeout):
                    pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/stats") and hasattr(outer, "stats"):
                    return send_json(self, 200, outer.stats())
                send_json(self, 200, {"object": "list", "data": []})

        self._httpd = Server((self.host, self.port), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def send_json(h: BaseHTTPRequestHandler, status: int, obj, headers: dict | None = None, truncate: bool = False) -> None:
    """Send ``obj`` as JSON (``truncate=True`` cuts the body in half: a malformed body)."""
    data = json.dumps(obj).encode()
    if truncate:
        data = data[: max(1, len(data) // 2)]
    send_bytes(h, status, data, "application/json", headers)


def send_bytes(
    h: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str, headers: dict | None = None
) -> None:
    """Send ``data`` as the whole body with its ``content-type`` and ``content-length``."""
    h.send_response(status)
    h.send_header("content-type", content_type)
    h.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, str(v))
    h.end_headers()
    h.wfile.write(data)
    h.wfile.flush()
