"""The lazily exporting packages (``automonitor.lazy.lazy_exports``) name each public name three ways: a
``TYPE_CHECKING`` import (what mypy and readers see), the ``_HOME`` map (what is imported on first use) and
``__all__`` (read from the map). The map must say what the imports say, name for
name and module for module, and every lazy name ``__all__`` lists must be the object its home module defines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAZY = [p for p in sorted((REPO / "automonitor").rglob("__init__.py")) if "lazy_exports(" in p.read_text()]


def _package(path: Path) -> str:
    return ".".join(path.parent.relative_to(REPO).parts)


def _type_checking_imports(path: Path, package: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.unparse(imp)
                assert imp.module.startswith(f"{package}."), imp.module
                out |= {a.name: imp.module.removeprefix(f"{package}.") for a in imp.names}
    return out


def test_there_are_lazy_packages():
    assert {
        "automonitor.analysis",
        "automonitor.views",
        "automonitor.annotation",
        "automonitor.data.audit",
        "automonitor.data.build",
    } <= {_package(p) for p in LAZY}


@pytest.mark.parametrize("path", LAZY, ids=_package)
def test_the_home_map_is_what_the_type_checking_imports_say(path):
    package = _package(path)
    module = importlib.import_module(package)
    assert module._HOME == _type_checking_imports(path, package)
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        home = module._HOME.get(name)
        if home is not None:
            assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{home}"), name), name
