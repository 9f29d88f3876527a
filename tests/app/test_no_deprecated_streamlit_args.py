"""No page, nor any module of the core (``automonitor/``, which builds figures and tables the pages
show), passes Streamlit arguments whose deprecation deadline has passed: ``use_container_width``
(replaced by ``width="stretch"``)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPRECATED = {"use_container_width"}


def sources() -> list[Path]:
    """``app.py``, the pages and every module under ``automonitor/``."""
    return [REPO / "app.py", *sorted((REPO / "pages").rglob("*.py")), *sorted((REPO / "automonitor").rglob("*.py"))]


def test_pages_use_no_deprecated_keyword_arguments():
    found = []
    paths = sources()
    assert any("automonitor" in p.parts for p in paths) and len(paths) > 50
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                found += [
                    f"{path.relative_to(REPO)}:{node.lineno} {kw.arg}" for kw in node.keywords if kw.arg in DEPRECATED
                ]
    assert found == []
