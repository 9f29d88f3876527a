"""Judge backends behind a small registry, selected as ``BACKEND[:MODEL]`` (``../shared/CONTRACT.md``).

=========== =================================================================== ==================
backend     what it is                                                          default model
=========== =================================================================== ==================
rules       transparent pattern baseline (no model, no network)                 rules-v1
llamacpp    local GGUF model in-process via llama-cpp-python (offline default)  gemma3-270m
openai      official ``openai`` SDK, any OpenAI-compatible server (--base-url)  gpt-4o-mini
anthropic   official ``anthropic`` SDK, Messages API                            claude-3-5-haiku-latest
probe       trained probe artefact (TF-IDF or MiniLM embeddings + LR), no model  tfidf-lr
lora        LoRA adapter on a causal LM (transformers + peft), Yes/No logits     (adapter folder)
=========== =================================================================== ==================
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from automonitor.errors import InputError
from automonitor.monitors.base import (  # noqa: F401
    Backend,
    Item,
    Judgement,
    PermanentError,
    TransientError,
    is_loopback,
    price_for,
)

# backend name -> (module, class name, default model)
REGISTRY: dict[str, tuple[str, str, str]] = {
    "rules": ("automonitor.monitors.rules", "RulesBackend", "rules-v1"),
    "llamacpp": ("automonitor.monitors.llamacpp", "LlamaCppBackend", "gemma3-270m"),
    "openai": ("automonitor.monitors.openai_backend", "OpenAIBackend", "gpt-4o-mini"),
    "anthropic": ("automonitor.monitors.anthropic_backend", "AnthropicBackend", "claude-3-5-haiku-latest"),
    "probe": ("automonitor.monitors.probe", "ProbeBackend", "tfidf-lr"),
    "lora": ("automonitor.monitors.lora", "LoraBackend", "adapter"),
}


@dataclass(frozen=True)
class MonitorSpec:
    """A parsed ``BACKEND[:MODEL]`` spec. ``name`` is the canonical ``backend:model`` form stored as
    ``Monitor.name`` / ``Run.monitor``."""

    backend: str
    model: str

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.model}"


def parse_monitor_spec(spec: str) -> MonitorSpec:
    """Parse ``BACKEND[:MODEL]`` (the model may itself contain ``:`` or ``/``).

    Raises:
        InputError: empty spec or unknown backend (field ``monitor``).
    """
    spec = (spec or "").strip()
    if not spec:
        raise InputError("empty monitor; use BACKEND[:MODEL]", field="monitor")
    backend, _, model = spec.partition(":")
    backend = backend.strip().lower()
    if backend not in REGISTRY:
        raise InputError(f"unknown backend {backend!r}; choose one of {', '.join(REGISTRY)}",
                         field="monitor")
    model = model.strip() or REGISTRY[backend][2]
    return MonitorSpec(backend, model)


def backend_class(backend: str) -> type[Backend]:
    """The class implementing ``backend`` (imported lazily: SDKs load only when used)."""
    if backend not in REGISTRY:
        raise InputError(f"unknown backend {backend!r}", field="monitor")
    mod, cls, _ = REGISTRY[backend]
    return getattr(importlib.import_module(mod), cls)


def create_backend(spec: str | MonitorSpec, *, base_url: str | None, params: dict[str, Any] | None,
                   prompt) -> Backend:
    """Instantiate the backend for ``spec`` with the run's base URL, parameters and prompt builder.

    Raises:
        InputError: unknown backend, missing API key for a remote server, bad parameter.
    """
    ms = spec if isinstance(spec, MonitorSpec) else parse_monitor_spec(spec)
    return backend_class(ms.backend)(ms.model, base_url, dict(params or {}), prompt)
