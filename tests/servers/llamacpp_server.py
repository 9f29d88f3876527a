"""Start llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on the packaged GGUF.

This is llama-cpp-python's own server module, run through ``runpy`` after
:func:`automonitor.runs.monitors.llamacpp.patch_llama_cpp` (which disables llama.cpp's AMX weight
repacking on CPUs whose AMX kernels crash in VMs); all arguments are passed to the server unchanged::

    python -m tests.servers.llamacpp_server --model <gguf> --port <port> --n_threads 2

:func:`start_llamacpp_server` launches it as a subprocess on a free loopback port and waits until
``/v1/models`` answers.
"""

from __future__ import annotations

import os
import runpy
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llamacpp_server(
    model: str, *, n_threads: int = 2, n_threads_batch: int | None = None, n_ctx: int = 4096, timeout: float = 120.0
):
    """Start the server; returns ``(process, base_url)``. Raises RuntimeError if it does not come up.

    ``n_threads`` generates, ``n_threads_batch`` (default ``n_threads``; the server's own default is every
    CPU) reads the prompt."""
    import httpx

    port = free_port()
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"llamacpp_server_{port}.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.servers.llamacpp_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            str(n_threads),
            "--n_threads_batch",
            str(n_threads if n_threads_batch is None else n_threads_batch),
            "--n_ctx",
            str(n_ctx),
            "--model_alias",
            "gemma3-270m",
        ],
        cwd=str(REPO),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited with {proc.returncode}; see {log.name}")
        try:
            if httpx.get(base + "/models", timeout=1.0).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError("llama.cpp server did not start in time")


if __name__ == "__main__":
    from automonitor.runs.monitors.llamacpp import patch_llama_cpp

    patch_llama_cpp()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
