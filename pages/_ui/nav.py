"""The app's navigation (Streamlit): ``st.Page`` objects for the pages of the page index
(:mod:`automonitor.views.page_index`: a page is its file, declaring ``PAGE`` and ``NAV``), and the guard that
makes a page run through ``app.py``'s navigation.

:func:`ensure_navigation` makes sure a page runs through ``app.py``'s navigation (a fresh server's legacy
``pages/`` mode would run the page file directly); a page calls it first, before its imports, so that such a
run ends at once; :func:`routed` marks the runs that do. This module imports nothing but Streamlit.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import streamlit as st

if TYPE_CHECKING:  # nothing heavy here: a page imports this module first (ensure_navigation)
    from automonitor.views.page_index import PageFile

#: the pages folder and the app's folder (``app.py`` lives beside ``pages/``)
HERE = Path(__file__).resolve().parent.parent
APP_DIR = HERE.parent

# Absolute paths of page files (for st.switch_page and st.page_link), as the navigation registers them.
PAGE_RUNS = str(HERE / "runs.py")
PAGE_TRADEOFF = str(HERE / "tradeoff.py")
PAGE_DRILLDOWN = str(HERE / "drilldown.py")


def st_pages(pages: list[PageFile], root: Path = APP_DIR, *, default: bool = True) -> list[st.Page]:
    """``st.Page`` objects for ``pages`` (their files under ``root``, by absolute path: the navigation works
    whatever folder the entry script runs from). With ``default``, the page marked ``default`` is the one served
    at the root: Streamlit serves a default page at the root, never at its own ``url_path`` (a direct
    ``/overview`` would answer "Page not found" first), so it gets an internal path (``<url>-home``) and a hidden
    page serves it at its own URL path too."""
    out, hidden = [], []
    for p in pages:
        path, title, icon = str(root / p.path), p.nav.title, p.nav.icon
        if default and p.nav.default:
            out.append(st.Page(path, title=title, icon=icon, url_path=f"{p.url}-home", default=True))
            hidden.append(st.Page(path, title=title, icon=icon, url_path=p.url, visibility="hidden"))
        else:
            out.append(st.Page(path, title=title, icon=icon, url_path=p.url))
    return out + hidden


_NAV_DECLARED = "_am_navigation_declared"  # session key: ensure_navigation reran once
_ROUTE = threading.local()  # ``on`` while app.py's navigation runs a page in this script thread


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """``app.py`` runs the selected page inside this block: :func:`ensure_navigation` then knows the page
    came through the app's role-based navigation."""
    _ROUTE.on = True
    try:
        yield
    finally:
        _ROUTE.on = False


#: ``seen``: full collections counted when app.py's last run ended; ``frozen``: the heap was frozen (once)
_HEAP: dict[str, int | bool | None] = {"seen": None, "frozen": False}


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """``app.py`` runs each page inside this block. Once per process, at the start of the first run after a full
    collection that came after an earlier run (Streamlit's ``runner.postScriptGC``: ``gc.collect(2)`` when a run
    ends, which freed what that run left), every object alive is moved to the permanent generation
    (``gc.freeze()``): the ~1,800 modules of the first page and the cached data. Streamlit's full collection
    after each later run then traverses only what was made since (30-run store: ~0.11 s of CPU a run, whatever
    the run did, ~0 s after). Nothing that was garbage is frozen (the collection just freed it); an object frozen
    here that later becomes part of a reference cycle and unreachable is not collected (once per process, bounded
    by that one heap). Where no full collection runs between runs (Streamlit's ``AppTest``), nothing is frozen."""
    full = gc.get_stats()[2]["collections"]
    seen = _HEAP["seen"]
    if not _HEAP["frozen"] and seen is not None and full > seen:
        gc.freeze()
        _HEAP["frozen"] = True
    try:
        yield
    finally:
        _HEAP["seen"] = gc.get_stats()[2]["collections"]


def ensure_navigation() -> None:
    """Make sure this script run went through ``app.py``'s ``st.navigation``.

    A ``pages/`` folder beside the entry script puts a fresh Streamlit server in its legacy multipage mode
    until some session has run ``app.py``: a first request for e.g. ``/runs`` runs ``pages/runs.py``
    directly, bypassing the app's role-based navigation. Pages call this first: a page that was not run
    by ``app.py`` (:func:`routed`) declares the pages with ``st.navigation`` (which ends the legacy mode for
    the process, as Streamlit documents: with ``st.navigation`` the ``pages/`` directory is disregarded) and
    reruns with ``st.rerun``, so the same URL is served through ``app.py``. Public API only."""
    if getattr(_ROUTE, "on", False):
        return
    # the page files by name (a page's URL path is its file's name: automonitor.views.page_index), nothing parsed
    st.navigation([st.Page(str(p)) for p in sorted(HERE.glob("[!_]*.py"))], position="hidden")
    # once per session: the rerun goes through app.py on a server; a script run that is still not routed
    # after it (an AppTest of one page file) renders the page as it is, instead of rerunning forever
    if st.session_state.get(_NAV_DECLARED):
        return
    st.session_state[_NAV_DECLARED] = True
    st.rerun()
