"""``llamacpp``: a local GGUF model in-process through llama-cpp-python (no key, no network).

The default model is the packaged Gemma 3 270M Q4_K_M GGUF; ``llamacpp:/path/to/model.gguf`` any other. A
base model, it is scored by its next-token logits for " Yes" and " No" after the template's verdict cue
(P(misbehavior) = softmax of the two), with contextual calibration (:func:`calibrated`), the shared
instruction prefix evaluated once (:meth:`LocalScorer.start`) and token budgets per text
(:meth:`LocalScorer.truncate`, :class:`LlamaCppParams`). Scoring, calibration and budgets:
docs/how-to/backends.md ("llamacpp").
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import itertools
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from automonitor.jsontypes import JSONObject
from automonitor.data.trajectory import cut_middle, step_ranges
from automonitor.errors import InputError
from automonitor.vocab import Label
from automonitor.runs.monitors.backend import Backend, BackendParams, register
from automonitor.runs.monitors.judgement import (
    CallCounter,
    Generation,
    Item,
    Judgement,
    OpenAIUsage,
    PermanentError,
)
from automonitor.runs.local_model import INSTALL_EXTRA, default_model_path
from automonitor.runs.parsing import evidence_found
from automonitor.runs.prompts import PromptBuilder, fill

DEFAULT_MODEL = "gemma3-270m"
CONTENT_FREE_INPUTS = ("N/A", "[MASK]", "")
CALIBRATION_METHOD = "contextual-zhao2021-v1"
_MODELS: dict[tuple[str, int, int], Any] = {}  # (model path, n_ctx, n_threads) -> llama_cpp.Llama
_MODELS_LOCK = threading.Lock()
_PATCHED = False
#: the backends closed so far (their :attr:`LlamaCppBackend._token`): a decode of theirs still running is aborted
_CLOSED: set[int] = set()
_TOKENS = itertools.count(1)
_ABORT_CALLBACK: Any = None  # made once, never freed: a context keeps a pointer to it


def _abort_callback() -> Any:
    """llama.cpp's abort callback (``ggml_abort_callback``), one per process: it is called between the steps
    of a decode with the data the context was given (a backend's token) and returns whether to stop (the
    backend was closed). A ctypes callback must outlive every context that may call it, so it is made once."""
    global _ABORT_CALLBACK
    if _ABORT_CALLBACK is None:
        from llama_cpp import llama_cpp as C

        _ABORT_CALLBACK = C.ggml_abort_callback(lambda data: bool(data) and data in _CLOSED)
    return _ABORT_CALLBACK


def require_llama_cpp() -> None:
    """Check that llama-cpp-python is importable.

    It is an optional extra (``local``): PyPI has no Linux wheel of it, so installing it compiles
    llama.cpp (about 11 minutes on 2 cores), which the core install and ``make demo``'s first screen
    skip. Raises ``InputError`` (field ``monitor``, exit 2) naming the extra when it is missing."""
    try:
        import llama_cpp  # noqa: F401  (a heavy import, done once; the backend needs it anyway)
    except ImportError as exc:
        raise InputError(
            "the llamacpp backend needs llama-cpp-python, which is not installed: it is the optional extra "
            f"'{INSTALL_EXTRA}', install it with  pip install -e '.[{INSTALL_EXTRA}]'  (it compiles llama.cpp, "
            "about 11 minutes on 2 cores; `make demo` does it in the background)",
            field="monitor",
        ) from exc


def resolve_model_path(model: str | None) -> Path:
    """``gemma3-270m`` (default) -> the packaged GGUF; anything else must be an existing ``.gguf`` path.

    Raises:
        InputError: the path does not exist (field ``monitor``).
    """
    if not model or model == DEFAULT_MODEL:
        return default_model_path()
    p = Path(model).expanduser()
    if not p.is_file():
        raise InputError(f"llamacpp model file not found: {model}", field="monitor")
    return p


def cpu_has_amx() -> bool:
    """True when /proc/cpuinfo lists an AMX feature flag."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="ignore") as f:
        for line in f:
            if line.startswith("flags"):
                return "amx_tile" in line.split()
    return False


def patch_llama_cpp() -> None:
    """Disable llama.cpp's extra buffer types (weight repacking incl. AMX) on AMX CPUs, where the AMX
    kernels crash inside some VMs. Idempotent; also used by the test llama.cpp server launcher."""
    global _PATCHED
    if _PATCHED:
        return
    if os.environ.get("AUTOMONITOR_LLAMA_EXTRA_BUFTS") == "1" or not cpu_has_amx():
        _PATCHED = True
        return
    from llama_cpp import llama_cpp as C

    orig = C.llama_model_default_params

    def params_without_extra_bufts():
        p = orig()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    C.llama_model_default_params = params_without_extra_bufts
    _PATCHED = True


def _close_all() -> None:
    """Free cached models before interpreter teardown (avoids noise from ``Llama.__del__`` at exit)."""
    with _MODELS_LOCK:
        for llm in _MODELS.values():
            with contextlib.suppress(Exception):
                llm.close()
        _MODELS.clear()


atexit.register(_close_all)


def load_llama(path: Path, n_ctx: int, n_threads: int):
    """A process-wide cached ``llama_cpp.Llama`` for (path, n_ctx, n_threads)."""
    key = (str(path), n_ctx, n_threads)
    with _MODELS_LOCK:
        if key not in _MODELS:
            patch_llama_cpp()
            from llama_cpp import Llama

            _MODELS[key] = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_batch=512,
                logits_all=False,
                verbose=False,
                seed=0,
            )
        return _MODELS[key]


def calibrated(logit_diff: float, cf_yes: float) -> float:
    """Contextually calibrated P(misbehavior) (Zhao et al. 2021, ICML, eq. for ``W = diag(p_cf)^-1``,
    ``b = 0``): ``q = (p_yes/cf_yes) / (p_yes/cf_yes + p_no/cf_no)`` with ``cf_no = 1 - cf_yes``.

    Args:
        logit_diff: ``logit_yes - logit_no`` (= log(p_yes/p_no) of the two-way softmax).
        cf_yes: content-free P(Yes) in (0, 1).
    Returns:
        q in [0, 1], computed as a logistic of ``logit_diff - log(cf_yes/cf_no)`` (no overflow).
    """
    z = logit_diff - math.log(cf_yes / (1.0 - cf_yes))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class LocalScorer:
    """Synchronous scoring on one ``Llama`` (not thread-safe; the backend serialises calls).

    Attributes:
        prefix_hits: samples that reused the evaluated prefix; prefix_evals: prefix evaluations.
        tokens_evaluated: prompt tokens evaluated in total (prefix evaluations included).
    """

    def __init__(self, llm, *, prefix_cache: bool = True):
        self.llm = llm
        self.prefix_cache = prefix_cache
        self.prefix_hits = 0
        self.prefix_evals = 0
        self.tokens_evaluated = 0
        self._eos = llm.token_eos()

    # --------------------------------------------------------------------------------------- tokens
    def tok(self, text: str, *, bos: bool = False) -> list[int]:
        """Tokenize ``text`` (special-token text in samples stays plain text)."""
        tokens: list[int] = self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)
        return tokens

    def detok(self, tokens: list[int]) -> str:
        raw: bytes = self.llm.detokenize(tokens)
        return raw.decode("utf-8", errors="replace")

    def n_tokens(self, text: str) -> int:
        """The number of tokens of ``text`` (no BOS): the size function of :func:`cut_middle`."""
        return len(self.tok(text))

    def truncate(self, text: str, budget: int, *, steps: bool = False) -> tuple[str, dict[str, Any] | None]:
        """``text`` within ``budget`` tokens. Returns ``(text, info)``; ``info`` is ``None`` when it fits.

        With ``steps`` (the response), a serialised trajectory (:mod:`automonitor.data.trajectory`) loses
        whole steps from its middle, first and last kept, as with the API backends but measured in tokens:
        ``info = {"unit": "steps", "measure": "tokens", "original", "kept", "steps_total", "steps_cut"}``.
        Otherwise, and when the text is no trajectory of >= 3 steps or its first and last steps alone
        exceed the budget, the token cut: the first two thirds and the last third of the budget joined by
        a marker, ``info = {"unit": "tokens", "original", "kept"}``; for a trajectory that had to be cut so
        (a step alone overflows) ``info`` adds ``steps_total`` and ``fallback`` saying why."""
        toks = self.tok(text)
        if budget <= 0 or len(toks) <= budget:
            return text, None
        ranges = step_ranges(text) if steps else []
        if len(ranges) >= 3:
            cut, sinfo = cut_middle(text, budget, self.n_tokens, measure="tokens")
            if sinfo is not None:
                return cut, sinfo
        head = (budget * 2) // 3
        tail = budget - head
        cut = self.detok(toks[:head]) + "\n[... truncated ...]\n" + (self.detok(toks[-tail:]) if tail else "")
        info: dict[str, Any] = {"unit": "tokens", "original": len(toks), "kept": head + tail}
        if len(ranges) >= 2:
            info["steps_total"] = len(ranges)
            info["fallback"] = (
                "the first and last steps alone exceed the budget"
                if len(ranges) >= 3
                else "2 steps, no middle step to cut, and a step alone exceeds the budget"
            )
        return cut, info

    # ------------------------------------------------------------------------------------- evaluation
    def feed(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after the current position.

        Raises:
            PermanentError: the prompt would exceed the context.
        """
        if not tokens:
            return
        if self.llm.n_tokens + len(tokens) > self.llm.n_ctx():
            raise PermanentError(
                f"prompt of {self.llm.n_tokens + len(tokens)} tokens exceeds the context of {self.llm.n_ctx()}"
            )
        self.llm.eval(tokens)
        self.tokens_evaluated += len(tokens)

    def _last_logits(self):
        import numpy as np
        from llama_cpp import llama_cpp as C

        ptr = C.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),))

    def start(self, prefix: list[int]) -> int:
        """Position the context right after ``prefix``; returns the number of prompt tokens reused."""
        n = len(prefix)
        if self.prefix_cache and self.llm.n_tokens >= n and n > 0 and list(self.llm.input_ids[:n]) == prefix:
            self.llm.n_tokens = n  # the next eval drops the KV cells past the prefix
            self.prefix_hits += 1
            return n
        self.llm.reset()
        self.feed(prefix)
        self.prefix_evals += 1
        return 0

    def yes_no(self, yes_ids: list[int], no_ids: list[int]) -> tuple[float, float, float]:
        """``(P(misbehavior), logit_yes, logit_no)`` at the current position: softmax over the two
        logits (the max over each list of token ids)."""
        logits = self._last_logits()
        ly = float(max(logits[i] for i in yes_ids))
        ln = float(max(logits[i] for i in no_ids))
        if not (math.isfinite(ly) and math.isfinite(ln)):
            return float("nan"), ly, ln
        m = max(ly, ln)
        a, b = math.exp(ly - m), math.exp(ln - m)
        return a / (a + b), ly, ln

    def greedy(self, max_tokens: int, stop: tuple[str, ...] = ("\n", '"')) -> tuple[str, int]:
        """Generate greedily (temperature 0) up to ``max_tokens`` or a stop string. Returns
        ``(text, tokens_generated)``; the generated tokens stay in the context."""
        import numpy as np

        out: list[int] = []
        text = ""
        for _ in range(max_tokens):
            tok = int(np.argmax(self._last_logits()))
            if tok == self._eos or self.llm.n_tokens + 1 >= self.llm.n_ctx():
                break
            out.append(tok)
            self.feed([tok])
            text = self.detok(out)
            if any(s in text for s in stop):
                break
        for s in stop:
            if s in text:
                text = text.split(s, 1)[0]
        return text.strip(), len(out)


def default_threads() -> int:
    """CPU threads of the ``llamacpp`` judge when ``--param n_threads`` is not given:
    ``$AUTOMONITOR_LLAMACPP_THREADS``, else 2. On cores that other work shares, llama.cpp's threads spin
    while they wait for each other: one thread can cost a fifth of the CPU of two (the test suite's two
    workers on two cores run it on one)."""
    return int(os.environ.get("AUTOMONITOR_LLAMACPP_THREADS") or 2)


class LlamaCppParams(BackendParams):
    """Typed ``--param`` settings of :class:`LlamaCppBackend` (token budgets are model tokens).

    Attributes:
        n_ctx / n_threads: the model's context size and CPU threads (default :func:`default_threads`).
        request_tokens / response_tokens / example_tokens: truncation budgets of the judged request, the
            response and each few-shot field; evidence_tokens: the quote an evidence template writes.
        calibrate: contextual calibration (module docstring); prefix_cache: reuse the evaluated prefix.
    """

    n_ctx: int = 4096
    n_threads: int = Field(default_factory=default_threads)
    request_tokens: int = 256
    response_tokens: int = 384
    example_tokens: int = 96
    evidence_tokens: int = 24
    calibrate: bool = True
    prefix_cache: bool = True

    @field_validator("calibrate", "prefix_cache", mode="before")
    @classmethod
    def _on_off(cls, value: Any) -> bool:
        """A flag given as ``true/false``, ``1/0``, ``yes/no`` or ``on/off`` (any case); anything else
        is refused rather than read as true."""
        word = str(value).strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false (1/0, yes/no, on/off)")


@register
class LlamaCppBackend(Backend):
    """Local GGUF model scored by next-token probabilities (see the module docstring); its ``--param``
    values and defaults are :class:`LlamaCppParams`."""

    name = "llamacpp"
    default_model = DEFAULT_MODEL
    max_concurrency = 1
    is_local = True
    menu_order = 1
    description = "local GGUF model"
    Params = LlamaCppParams
    settings: LlamaCppParams
    #: llama-cpp-python's finish reasons in generation mode (``create_chat_completion``, OpenAI's shape); the judge
    #: scores next-token probabilities and reads none
    stop_reasons = {"stop": "normal", "length": "truncated"}

    def __init__(self, model: str | None, base_url: str | None, params: JSONObject, prompt: PromptBuilder) -> None:
        super().__init__(model, base_url, params, prompt)
        require_llama_cpp()
        self.path = resolve_model_path(self.model)
        self._lock = threading.Lock()
        self._token = next(_TOKENS)  # this backend's mark on the context's decodes (aclose aborts them)
        self._scorer: LocalScorer | None = None
        self._prefix: list[int] = []  # the system text's tokens, set with the scorer
        self._yes: list[int] = []
        self._no: list[int] = []
        self.calibration: dict[str, Any] | None = None
        self.calibration_evals = 0

    @classmethod
    def estimate_tokens(cls, model, params, builder, texts) -> tuple[int, int]:
        """(prompt tokens, maximum output tokens) before a run: characters/4 within the token budgets
        (``example_tokens`` for the system text's examples, ``request_tokens`` / ``response_tokens`` per
        sample, plus ~60 tokens of chat framing each); output: ``evidence_tokens`` per sample for an
        evidence template, else 0 (a direct verdict is scored, not generated).

        Raises:
            InputError: bad parameter.
        """
        from automonitor.runs.prompts import truncate_chars

        st = cls.parse_params(params)
        assert isinstance(st, LlamaCppParams)
        sys_chars = len(builder.system_text(truncate=lambda t: truncate_chars(t, st.example_tokens * 4)[0]))
        per = [
            min(len(t["request"]), st.request_tokens * 4) + min(len(t["response"]), st.response_tokens * 4)
            for t in texts
        ]
        prompt_tokens = sys_chars // 4 + sum(n // 4 + 60 for n in per)
        return prompt_tokens, len(texts) * (st.evidence_tokens if builder.template.evidence else 0)

    def cache_params(self) -> JSONObject:
        """Answer-changing parameters (cache key). ``calibration`` is present only when calibrating, so
        uncalibrated keys are those of earlier versions, which did not calibrate."""
        budgets = {"threshold", "request_tokens", "response_tokens", "example_tokens", "evidence_tokens", "n_ctx"}
        out = {
            "model_file": self.path.name,
            "model_size": self.path.stat().st_size,
            **self.settings.model_dump(include=budgets),
            "scoring": "yes-no-logits-v1",
            "truncation": "trajectory-steps-v1",  # a long trajectory loses whole middle steps (tokens before)
        }
        if self.settings.calibrate:
            out["calibration"] = {"method": CALIBRATION_METHOD, "content_free": list(CONTENT_FREE_INPUTS)}
        return out

    def _abortable(self, llm: Any) -> None:
        """Make ``llm``'s decodes from now on this backend's: :meth:`aclose` stops one in flight (llama.cpp's
        abort callback, :func:`_abort_callback`). Called under the lock, before every use of the model.

        Raises:
            PermanentError: the backend is closed.
        """
        if self._token in _CLOSED:
            raise PermanentError("the llamacpp backend was closed (the run stopped)")
        from llama_cpp import llama_cpp as C

        C.llama_set_abort_callback(llm._ctx.ctx, _abort_callback(), ctypes.c_void_p(self._token))

    async def aclose(self) -> None:
        """Close the backend: a decode of it still running stops within a step of llama.cpp's compute graph
        (its abort callback) instead of running to its end, so a run stopped by Ctrl-C or SIGTERM ends at once
        rather than after the sample in flight (fresh-user trial 44: > 5 s, 23 s at load 9); the model stays
        cached for other backends."""
        _CLOSED.add(self._token)
        await super().aclose()

    def _ensure(self) -> LocalScorer:
        if self._scorer is None:
            llm = load_llama(self.path, self.settings.n_ctx, self.settings.n_threads)
            self._abortable(llm)
            sc = LocalScorer(llm, prefix_cache=self.settings.prefix_cache)
            ex_trunc = lambda t: sc.truncate(t, self.settings.example_tokens)[0]
            prefix_text = self.prompt.system_text(truncate=ex_trunc) + "\n\n"
            self._prefix = sc.tok(prefix_text, bos=True)
            self._yes = sorted({sc.tok(" Yes")[0], sc.tok("Yes")[0]})
            self._no = sorted({sc.tok(" No")[0], sc.tok("No")[0]})
            self._scorer = sc
        return self._scorer

    def _score(self, request: str, response: str, meta: dict[str, Any]) -> tuple[float, float, float, list[str], int]:
        """Score one (already truncated) request/response after the cached prefix: returns
        ``(p_yes, logit_yes, logit_no, evidence, tokens_generated)``; fills ``meta``."""
        sc = self._ensure()
        tpl = self.prompt.template
        user = fill(tpl.sections["user"], {"request": request, "response": response})
        meta["prefix_reused"] = bool(sc.start(self._prefix))
        evidence: list[str] = []
        gen = 0
        verdict_cue = tpl.sections.get("base_verdict_cue", "Answer:")
        if tpl.evidence and "base_evidence_cue" in tpl.sections:
            sc.feed(sc.tok(user + "\n\n" + tpl.sections["base_evidence_cue"]))
            quote, gen = sc.greedy(self.settings.evidence_tokens)
            # the quote's finish reason: "length" when the budget ran out before a closing quote or
            # newline (the quote is then cut; the verdict itself comes from the logits, not from text)
            meta["evidence_finish_reason"] = "length" if gen >= self.settings.evidence_tokens else "stop"
            if quote:
                evidence = [quote]
            sc.feed(sc.tok('"\n' + verdict_cue))
        else:
            sc.feed(sc.tok(user + "\n\n" + verdict_cue))
        p, ly, ln = sc.yes_no(self._yes, self._no)
        return p, ly, ln, evidence, gen

    def _ensure_calibration(self) -> dict[str, Any]:
        """Contextual calibration values (Zhao et al. 2021), computed once per backend instance.

        Returns ``{"method", "content_free": [{"input", "p_yes"}...], "cf_yes", "cf_no", "tokens"}``
        with ``cf_yes + cf_no = 1`` the mean over :data:`CONTENT_FREE_INPUTS` of the renormalised
        two-way probabilities. Raises PermanentError when the content-free logits are not finite."""
        if self.calibration is None:
            sc = self._ensure()
            before = sc.tokens_evaluated
            rows: list[dict[str, Any]] = []
            for text in CONTENT_FREE_INPUTS:
                p, ly, ln, _, _ = self._score(text, text, {})
                self.calibration_evals += 1
                if not math.isfinite(p):
                    raise PermanentError(f"non-finite logits on the content-free input {text!r}: yes={ly} no={ln}")
                rows.append({"input": text, "p_yes": round(p, 6)})
            cf_yes = sum(r["p_yes"] for r in rows) / len(rows)
            cf_yes = min(max(cf_yes, 1e-9), 1 - 1e-9)
            self.calibration = {
                "method": CALIBRATION_METHOD,
                "content_free": rows,
                "cf_yes": round(cf_yes, 6),
                "cf_no": round(1 - cf_yes, 6),
                "tokens": sc.tokens_evaluated - before,
            }
        return self.calibration

    def judge_sync(self, item: Item) -> Judgement:
        """Score one item (blocking). Thread-safe through an internal lock.

        Score: P(' Yes') softmax over the two logits, or with ``calibrate`` the contextually
        calibrated ``q`` (see the module docstring). Non-finite logits give an ``invalid`` outcome."""
        with self._lock:
            t0 = time.perf_counter()
            sc = self._ensure()
            self._abortable(sc.llm)
            cal = self._ensure_calibration() if self.settings.calibrate else None
            req, ri = sc.truncate(item.request, self.settings.request_tokens)
            resp, si = sc.truncate(item.response, self.settings.response_tokens, steps=True)
            meta: dict[str, Any] = {"prefix_tokens": len(self._prefix)}
            trunc = {k: v for k, v in (("request", ri), ("response", si)) if v}
            if trunc:
                meta["truncated"] = trunc
            before = sc.tokens_evaluated
            p, ly, ln, evidence, gen = self._score(req, resp, meta)
            if evidence:
                meta["evidence_found"] = evidence_found(evidence, item.response)
            tokens_in = sc.tokens_evaluated - before
            meta.update(
                {"logit_yes": round(ly, 4), "logit_no": round(ln, 4), "elapsed_s": round(time.perf_counter() - t0, 4)}
            )
            if not math.isfinite(p):
                return Judgement(
                    "invalid",
                    raw=f"logits yes={ly} no={ln}",
                    reason="non-finite logits",
                    tokens_in=tokens_in,
                    tokens_out=gen,
                    meta=meta,
                )
            score, raw, reason = self._verdict(p, ly, ln, evidence, cal, meta)
            outcome: Label = "misbehavior" if score >= self.settings.threshold else "benign"
            return Judgement(
                outcome=outcome,
                score=round(score, 6),
                raw=raw,
                reason=reason,
                evidence=evidence,
                tokens_in=tokens_in,
                tokens_out=gen,
                meta=meta,
            )

    def _verdict(
        self, p: float, ly: float, ln: float, evidence: list[str], cal: dict[str, Any] | None, meta: dict[str, Any]
    ) -> tuple[float, str, str]:
        """``(score, raw, reason)`` from P(Yes) ``p`` and the logits: ``p`` itself, or with calibration
        ``cal`` the contextually calibrated score (``meta`` then gains ``p_yes_raw`` and ``calibration``)."""
        quote = f' quote="{evidence[0]}"' if evidence else ""
        if cal is None:
            raw = f"P(Yes)={p:.4f}" + quote
            return p, raw, f"P(' Yes') vs P(' No') softmax = {p:.4f} (threshold {self.settings.threshold})"
        score = calibrated(ly - ln, cal["cf_yes"])
        meta["p_yes_raw"] = round(p, 6)
        meta["calibration"] = cal
        raw = f"P(Yes)={p:.4f} calibrated={score:.4f}" + quote
        reason = (
            f"P(' Yes') vs P(' No') softmax = {p:.4f}, contextually calibrated with "
            f"p_cf(Yes) = {cal['cf_yes']:.4f}: {score:.4f} (threshold {self.settings.threshold})"
        )
        return score, raw, reason

    async def judge(self, item: Item, count_call: CallCounter) -> Judgement:
        count_call()
        return await asyncio.to_thread(self.judge_sync, item)

    def generate_sync(self, messages, *, max_tokens: int, temperature: float = 0.0, seed: int | None = 0) -> Generation:
        """Generation mode in-process: llama-cpp-python's ``create_chat_completion`` (the GGUF's chat
        template) under the backend's lock. The KV prefix cache of the judge is reset first."""
        with self._lock:
            llm = load_llama(self.path, self.settings.n_ctx, self.settings.n_threads)
            self._abortable(llm)
            self._scorer = None  # the judge's cached prefix is gone after a free generation
            t0 = time.perf_counter()
            out = llm.create_chat_completion(
                messages=list(messages),
                max_tokens=int(max_tokens),
                temperature=float(temperature),
                seed=int(seed) if seed is not None else None,
            )
        choice = out["choices"][0]
        meta: JSONObject = {"model": self.path.name, "latency_s": round(time.perf_counter() - t0, 4)}
        usage = OpenAIUsage.read(out.get("usage"), meta)  # llama.cpp's usage is OpenAI's
        return Generation(
            choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            tokens_in=usage.prompt_tokens,
            tokens_out=usage.completion_tokens,
            meta=meta,
        )

    async def generate(
        self, messages, count_call: CallCounter, *, max_tokens: int, temperature: float = 0.0, seed: int | None = 0
    ) -> Generation:
        count_call()
        return await asyncio.to_thread(
            self.generate_sync, messages, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
