"""Pieces of a launch form (a job with a backend, an estimate first, then a start button), for the pages
that start work in the background: the Generation page's job form uses them (``pages/_ui/generation_ui.py``);
the Runs page's monitor-run form has the same three steps.

- :func:`backend_fields`: backend, model and base URL inputs in three given columns;
- :func:`try_estimate`: an estimate that never raises (the error text instead);
- :func:`estimate_metrics`: the estimate as one row of ``st.metric`` cells; :func:`cost_text` its cost.

Streamlit only; the estimate itself is computed by the core (``automonitor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from automonitor.errors import InputError
from pages._ui.widgets import metric_columns

LOCAL_OPENAI_URL = "http://127.0.0.1:8080/v1"  # the placeholder of the base URL of the openai backend


@dataclass(frozen=True)
class BackendChoice:
    """What the backend fields hold: backend name, model as typed (stripped; empty = the backend's
    default), base URL as typed (stripped; ``None`` when empty)."""

    backend: str
    model: str
    base_url: str | None

    @property
    def spec(self) -> str:
        """``BACKEND[:MODEL]`` as the core takes it (just the backend when no model was typed)."""
        return f"{self.backend}:{self.model}" if self.model else self.backend


def backend_fields(
    columns: Sequence[Any],
    backends: Sequence[str],
    *,
    backend_key: str,
    model_key: str,
    base_url_key: str,
    backend_label: str = "Backend",
    backend_help: str | None = None,
    model_help: str | None = None,
    base_url_help: str | None = None,
) -> BackendChoice:
    """Backend select box, model and base URL text inputs in ``columns`` (three Streamlit columns).

    The model's placeholder is the backend's default model; the base URL input is disabled unless the
    backend takes one (``Backend.takes_base_url``), with the local llama.cpp server's URL as the
    placeholder for ``openai``. Widget keys are the caller's (so each page keeps its own state);
    ``{backend}`` in ``model_key`` / ``base_url_key`` is replaced by the chosen backend (one input per
    backend) and ``{default_model}`` in ``model_help`` by its default model."""
    from automonitor.runs.monitors import REGISTRY

    col_backend, col_model, col_url = columns[:3]
    backend = col_backend.selectbox(backend_label, backends, key=backend_key, help=backend_help)
    cls = REGISTRY.get(backend)
    default_model = cls.default_model if cls else "rules-v1"
    model = col_model.text_input(
        "Model",
        key=model_key.format(backend=backend),
        placeholder=default_model,
        help=model_help.format(default_model=default_model) if model_help else None,
    )
    base_url = col_url.text_input(
        "Base URL",
        key=base_url_key.format(backend=backend),
        placeholder=LOCAL_OPENAI_URL if backend == "openai" else "(default)",
        help=base_url_help,
        disabled=not (cls and cls.takes_base_url),
    )
    return BackendChoice(backend, model.strip(), base_url.strip() or None)


def try_estimate(estimate: Callable[..., dict[str, Any]], *args: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(estimate(*args), None)``, or ``(None, error text)`` when it raises: an InputError's message, any
    other exception as ``Type: message`` (nothing is started either way)."""
    try:
        return estimate(*args), None
    except InputError as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - shown to the user, nothing started
        return None, f"{type(exc).__name__}: {exc}"


def cost_text(cost: float | None, known: bool) -> str:
    """An estimated cost in USD as shown (``$1,234.5678``), or ``unknown price``."""
    return "unknown price" if cost is None or not known else f"${cost:,.4f}"


def estimate_metrics(cells: Sequence[tuple[str, str, str | None]], per_row: int = 3) -> None:
    """Rows of ``st.metric`` cells, ``(label, value text, help or None)`` each, at most ``per_row`` to a row
    (six in one row cut labels such as "Prompt tokens (est.)" at a 1280-pixel window)."""
    for col, (label, value, help_text) in zip(metric_columns(len(cells), per_row), cells):
        col.metric(label, value, help=help_text)
