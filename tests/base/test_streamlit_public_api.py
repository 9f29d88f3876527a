"""The app uses Streamlit's public API only: no module of the product (``app.py``, ``pages/``, ``scripts/``,
the core) imports a private Streamlit name or patches Streamlit (assigns to an attribute of a Streamlit module,
class or function, ``setattr``/``monkeypatch.setattr``/``mock.patch`` on one). Neither do the tests and benchmarks; a place
that one day needs it, where no public API exists, is listed in :data:`EXCEPTIONS` with its reason, and a
listed place that no longer needs it fails the test (the list cannot go stale)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: the public modules of Streamlit that code may import from (``import streamlit as st`` and
#: ``streamlit.testing.v1`` for AppTest)
PUBLIC = {"streamlit", "streamlit.testing.v1", "streamlit.components.v1"}

#: file -> why it needs a private name or a patch (none: AppTest runs app.py from its own folder, without the
#: pages/ beside it that put Streamlit in its legacy mode, tests/app/apptest_support.app_test)
EXCEPTIONS: dict[str, str] = {}


def _streamlit_names(nodes: Sequence[ast.AST]) -> set[str]:
    """The local names bound to a Streamlit module or to a name imported from one (``st``, ``PagesManager``),
    among ``nodes`` (every node of a module, ``ast.walk``)."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "streamlit"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            names |= {a.asname or a.name for a in node.names}
    return names


def _patches(nodes: Sequence[ast.AST], names: set[str]) -> list[str]:
    """Patches of Streamlit: ``X.attr = ...`` / ``del X.attr`` with ``X`` a Streamlit name, ``setattr(X, ...)``,
    ``monkeypatch.setattr(X, ...)``, ``mock.patch.object(X, ...)``, and ``patch("streamlit....")``. Writing a
    key of ``st.session_state`` or ``st.query_params`` (``st.session_state.k = v``) is public use, not a patch.
    ``nodes``: every node of a module (``ast.walk``)."""
    found = []
    for node in nodes:
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in names:
                found.append(f"{node.lineno}: {t.value.id}.{t.attr} patched")
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            if fname in ("setattr", "object", "delattr") and isinstance(first, ast.Name) and first.id in names:
                found.append(f"{node.lineno}: {fname}({first.id}, ...)")
            elif fname in ("setattr", "patch", "delattr") and isinstance(first, ast.Constant):
                if isinstance(first.value, str) and first.value.split(".")[0] == "streamlit":
                    found.append(f"{node.lineno}: {fname}({first.value!r})")
    return found


def _private_uses(path: Path) -> list[str]:
    """``import``/``from`` of a Streamlit module outside :data:`PUBLIC`, a ``_name`` imported from
    Streamlit, ``st._x`` / ``streamlit._x`` attribute use, and patches of Streamlit (:func:`_patches`)."""
    found = []
    nodes = list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))  # walked once, read three times
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] == "streamlit" and a.name not in PUBLIC
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            if node.module not in PUBLIC:
                found.append(f"{node.lineno}: from {node.module} import ...")
            found += [
                f"{node.lineno}: from {node.module} import {a.name}" for a in node.names if a.name.startswith("_")
            ]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in ("st", "streamlit"):
                found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found + _patches(nodes, _streamlit_names(nodes))


def _files() -> list[Path]:
    out = [REPO / "app.py"]
    for folder in ("pages", "scripts", "automonitor", "store", "tests", "benchmarks"):
        out += sorted((REPO / folder).rglob("*.py"))
    return [p for p in out if "migrations" not in p.parts]


def test_no_private_streamlit_name_outside_the_listed_exceptions():
    uses = {str(p.relative_to(REPO)): _private_uses(p) for p in _files()}
    bad = [f"{f}:{u}" for f, found in uses.items() if f not in EXCEPTIONS for u in found]
    assert not bad, "\n".join(bad)
    stale = [f for f in EXCEPTIONS if not uses.get(f)]
    assert not stale, f"listed exceptions that no longer use a private name: {stale}"


def test_the_check_sees_a_private_import(tmp_path):
    """Not vacuous: the shapes it refuses are seen."""
    f = tmp_path / "page.py"
    f.write_text(
        "import streamlit as st\n"
        "from streamlit.runtime.pages_manager import PagesManager\n"
        "import streamlit.web.cli\n"
        "from streamlit import _private\n"
        "st._main.write('x')\n"
        "st.session_state.ok = 1\n"
        "st.cache_data = None\n"
        "PagesManager.uses_pages_directory = False\n"
        "def test(monkeypatch):\n"
        "    monkeypatch.setattr(st, 'rerun', lambda: None)\n"
        "    monkeypatch.setattr('streamlit.runtime.pages_manager.PagesManager.uses_pages_directory', False)\n"
        "    mock.patch.object(PagesManager, '__init__')\n"
    )
    assert sorted({int(u.split(":")[0]) for u in _private_uses(f)}) == [2, 3, 4, 5, 7, 8, 10, 11, 12]
