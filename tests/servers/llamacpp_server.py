"""Start llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on the packaged GGUF.

This is llama-cpp-python's own server module, run through ``runpy`` after
:func:`automonitor.runs.monitors.llamacpp.patch_llama_cpp` (which disables llama.cpp's AMX weight
repacking on CPUs whose AMX kernels crash in VMs) and :func:`lean_logprobs` (the same answers, without
work the answer never reads); all arguments are passed to the server unchanged::

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


class _RowsOnDemand:
    """What ``Llama.logits_to_logprobs`` of a 2-D logits array stands for: each row's log-softmax, computed
    for the rows an index or slice asks for only (by the original function, row by row the same values)."""

    def __init__(self, compute, logits) -> None:
        self.compute, self.logits = compute, logits

    def __getitem__(self, key):
        return self.compute(self.logits[key])

    def __len__(self) -> int:
        return len(self.logits)

    def __iter__(self):
        return iter(self[:])


class _RowPairs:
    """``zip(row, range(len(row)))`` of a 1-D NumPy row: the same pairs when iterated, and a row that
    ``sorted`` can order by NumPy (:func:`lean_logprobs`)."""

    def __init__(self, row) -> None:
        self.row = row

    def __iter__(self):
        return zip(self.row, range(len(self.row)))


def _descending_pairs(row) -> list | None:
    """``builtins.sorted(zip(row, range(len(row))), reverse=True)`` by NumPy: the pairs ``(row[i], i)``, by
    value descending, ties by index descending, as Python orders the tuples; the values are the row's own
    scalars. ``None`` when the row holds a NaN (Python's order is then not a sort by value)."""
    import numpy as np

    values = row.astype(np.float64)  # float32 -> float64: exact
    if np.isnan(values).any():
        return None
    order = np.lexsort((-np.arange(len(row)), -values))  # the last key is the primary one
    return list(zip(row[order], order.tolist()))


#: the start of the sha256 of ``inspect.getsource(Llama.eval)`` in llama-cpp-python 0.3.36, which
#: :func:`lean_logprobs`'s ``eval_`` restates
_EVAL_SOURCE_SHA256 = "01b45d258b6688c7"


def lean_logprobs() -> None:
    """Skip work of llama-cpp-python's completion with ``logprobs`` that its answer never reads; the answer
    is the same, value for value. Called by this launcher only, before the server module runs.

    * ``_create_completion`` takes the log-softmax of every row of ``scores`` (each prompt token's and
      each generated token's logits over the whole vocabulary: 262,144 entries for Gemma 3, ~5-7 s CPU for a
      400-token prompt) and then keeps the rows from the prompt's last token on:
      ``Llama.logits_to_logprobs`` of a 2-D array now returns :class:`_RowsOnDemand`, which computes the
      rows a slice asks for, each by the original function (a row's log-softmax reads that row only).
    * For each generated token it sorts all ``(log-probability, token id)`` pairs of the vocabulary in Python
      to keep the ``top_logprobs`` first (0.4-1 s a token): the module's ``zip`` of a row and its
      indices is a :class:`_RowPairs`, which its ``sorted`` orders by NumPy into the same list (any other
      call goes to the built-in functions).
    * A model made with ``logits_all`` (the server's default, which ``logprobs`` needs) has llama.cpp compute
      the output layer for every prompt token (for Gemma 3 the 262,144-word vocabulary, most of a prompt's
      CPU) and copies each row into ``scores``, where only the rows from the prompt's last token on are
      read (the sampled token's logits, the ``logprobs`` of a completion without ``echo``): ``Llama.eval``
      asks llama.cpp for the logits of each batch's last token only and stores that row; the first entry of
      every other row it evaluated is set to NaN, so that a row it did not compute reads as NaN, never as a
      stale number (``echo`` with ``logprobs``, which the suite never asks for, would show it). This one
      restates llama-cpp-python's ``Llama.eval`` (0.3.36) but for the logits: it replaces a ``Llama.eval``
      whose source is that release's only (:data:`_EVAL_SOURCE_SHA256`); another release keeps its own.

    Checked against the unpatched module (throw-away script, the packaged GGUF, ``logits_all``, one thread):
    chat completions with ``logprobs`` (top 3, 5 and 20), without, with a JSON schema, and of 164 to 2,661
    prompt tokens (six batches) gave the same response, value for value, log-probabilities and their top
    lists included; their CPU 96.2 -> 24.9 s.
    """
    import hashlib
    import inspect

    import numpy as np
    from llama_cpp import llama as module

    original = module.Llama.logits_to_logprobs

    def logits_to_logprobs(logits, axis: int = -1):
        if axis == -1 and isinstance(logits, np.ndarray) and logits.ndim == 2:
            return _RowsOnDemand(original, logits)
        return original(logits, axis=axis)

    def zip_(*iterables, **kw):
        if not kw and len(iterables) == 2:
            row, ids = iterables
            if isinstance(row, np.ndarray) and row.ndim == 1 and isinstance(ids, range) and ids == range(len(row)):
                return _RowPairs(row)
        return zip(*iterables, **kw)

    def sorted_(iterable, /, *, key=None, reverse=False):
        if isinstance(iterable, _RowPairs) and key is None and reverse:
            out = _descending_pairs(iterable.row)
            if out is not None:
                return out
        return sorted(iterable, key=key, reverse=reverse)

    original_eval = module.Llama.eval
    source = hashlib.sha256(inspect.getsource(original_eval).encode()).hexdigest()

    def eval_(self, tokens) -> None:  # Llama.eval of llama-cpp-python 0.3, the logits as said above
        if not self._logits_all:
            return original_eval(self, tokens)
        self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
        for i in range(0, len(tokens), self.n_batch):
            batch = tokens[i : min(len(tokens), i + self.n_batch)]
            n_past, n_tokens = self.n_tokens, len(batch)
            self._batch.set_batch(batch=batch, n_past=n_past, logits_all=False)  # the last token's logits only
            self._ctx.decode(self._batch)
            self.input_ids[n_past : n_past + n_tokens] = batch
            self.scores[n_past : n_past + n_tokens - 1, 0] = np.nan
            self.scores[n_past + n_tokens - 1, :] = np.ctypeslib.as_array(
                self._ctx.get_logits(), shape=(self._n_vocab,)
            )
            self.n_tokens += n_tokens
            self._requires_eval = False
        return None

    module.Llama.logits_to_logprobs = staticmethod(logits_to_logprobs)
    if source.startswith(_EVAL_SOURCE_SHA256):
        module.Llama.eval = eval_
    module.zip, module.sorted = zip_, sorted_


if __name__ == "__main__":
    from automonitor.runs.monitors.llamacpp import patch_llama_cpp

    patch_llama_cpp()
    lean_logprobs()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
