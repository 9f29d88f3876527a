"""The app's page index: which files of ``pages/`` are pages, and where each goes in the navigation.

A page is one file directly under ``pages/`` (a name without a leading underscore) that declares ``PAGE`` (its
URL path) and ``NAV = Nav(...)`` (title, icon, order, ``access``, ``default``) at module level: CONTRIBUTING.md,
"Add a page", shows one and says who each ``access`` lets in. The app's helper modules live in the package
``pages/_ui/``, not beside the pages: Streamlit's legacy multipage mode lists every ``.py`` file directly under
``pages/`` in its sidebar until ``app.py``'s navigation replaces it. :func:`discover` reads the two declarations
(parsed with ``ast``; nothing is run), so ``app.py`` builds its navigation from them. No Streamlit here
(``pages/_ui/nav.py`` turns the index into ``st.Page`` objects).
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from automonitor.errors import InputError
from automonitor.escaping import md_escape

Access = Literal["workbench", "annotation", "admin", "login"]


@dataclass(frozen=True)
class Nav:
    """A page's place in the navigation (declared as ``NAV`` in the page file, read by :func:`discover`).

    Attributes:
        title: the navigation label.
        icon: a ``:material/name:`` icon or an emoji.
        order: position in its section (smaller first).
        access: who sees it: ``workbench``, ``annotation``, ``admin`` or ``login``.
        default: the page served at the root for its audience (the workbench's, an annotator's).
    """

    title: str
    icon: str
    order: int
    access: Access
    default: bool = False


@dataclass(frozen=True)
class PageFile:
    """A discovered page: ``path`` relative to ``app.py`` (``pages/runs.py``), its URL path ``url`` and ``nav``."""

    path: str
    url: str
    nav: Nav


def read_page(path: Path, root: Path) -> PageFile | None:
    """The page declared by the file ``path`` (``PAGE`` and ``NAV`` at module level, literal values), or ``None``
    for a file that declares no ``NAV`` (not a page). ``root``: the folder ``path`` is given relative to.

    Raises:
        InputError: a ``NAV`` without a literal ``PAGE`` URL path, with an argument that is not a literal or
            not a field of :class:`Nav`, a missing field or a wrong type (file, line and field named).
    """
    rel = path.relative_to(root).as_posix()
    url: str | None = None
    call: ast.Call | None = None
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=rel).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name == "PAGE" and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            url = node.value.value
        elif name == "NAV":
            if not isinstance(node.value, ast.Call) or node.value.args:
                raise InputError("NAV must be Nav(...) with keyword arguments", file=rel, line=node.lineno, field="NAV")
            call = node.value
    if call is None:
        return None
    if url != path.stem:
        raise InputError(
            f"a page declares PAGE = {path.stem!r}, its file's name (its URL path)", file=rel, field="PAGE"
        )
    fields: dict[str, object] = {}
    for kw in call.keywords:
        key = kw.arg or "**"
        if key not in Nav.__dataclass_fields__:
            raise InputError(f"Nav has no field {key!r}", file=rel, line=kw.value.lineno, field=key)
        try:
            fields[key] = ast.literal_eval(kw.value)
        except ValueError:
            raise InputError("must be a literal", file=rel, line=kw.value.lineno, field=key) from None
    for name, kind in (("title", str), ("icon", str), ("order", int), ("access", str), ("default", bool)):
        if name in fields and not isinstance(fields[name], kind):
            raise InputError(f"must be a {kind.__name__}", file=rel, line=call.lineno, field=name)
        if name not in fields and name != "default":
            raise InputError("missing", file=rel, line=call.lineno, field=name)
    if fields["access"] not in get_args(Access):
        raise InputError(f"must be one of {', '.join(get_args(Access))}", file=rel, line=call.lineno, field="access")
    return PageFile(path=rel, url=url, nav=Nav(**fields))  # type: ignore[arg-type]


#: :func:`discover`'s pages already read, by (file, root) -> ((mtime_ns, size), page); guarded by :data:`_LOCK`
_READ: dict[tuple[Path, Path], tuple[tuple[int, int], PageFile | None]] = {}
_LOCK = threading.Lock()


def discover(root: Path) -> list[PageFile]:
    """The pages of ``root/pages`` (files without a leading underscore that declare ``NAV``), in navigation
    order (``order``, then URL path). Raises :class:`InputError` for a bad declaration (:func:`read_page`).

    ``app.py`` calls it on every script run, and the server runs several sessions' scripts at once, each in a
    thread: a file is parsed again only when its modification time or size changed, and the parsing holds
    a lock. CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state, so two
    threads parsing at once fail with ``SystemError: AST constructor recursion depth mismatch`` (two
    annotators labelling at once got it in place of their page)."""
    found = []
    with _LOCK:
        for path in sorted((root / "pages").glob("[!_]*.py")):
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            hit = _READ.get((path, root))
            if hit is None or hit[0] != stamp:
                hit = (stamp, read_page(path, root))
                _READ[(path, root)] = hit
            found.append(hit[1])
    return sorted((p for p in found if p is not None), key=lambda p: (p.nav.order, p.url))


def account_section(name: str, role: str) -> str:
    """The navigation's section title over a logged-in account's logout link: ``"Account (<role>): <name>"``.

    Streamlit renders a section title as Markdown (bold, KaTeX ``$...$``, ``:red[...]`` directives), and
    ``name`` is free text an admin typed, so it is :func:`~automonitor.escaping.md_escape`-d and shows
    literally. The role comes before the name: a long name is cut with an ellipsis at the sidebar's width,
    and the role must stay visible. ``role`` is a vocabulary word (``admin`` / ``annotator``), not escaped.
    """
    return f"Account ({role}): {md_escape(name)}"
