"""No page passes Streamlit arguments whose deprecation deadline has passed:
``use_container_width`` (replaced by ``width="stretch"``)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPRECATED = {"use_container_width"}


def test_pages_use_no_deprecated_keyword_arguments():
    found = []
    for path in [REPO / "app.py", *sorted((REPO / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                found += [f"{path.name}:{node.lineno} {kw.arg}" for kw in node.keywords if kw.arg in DEPRECATED]
    assert found == []
