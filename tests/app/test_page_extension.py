"""A page is one file under ``pages/`` plus its core view module: a toy page added to a copy of the app is
discovered with its declared title, icon and order, listed in the workbench navigation, and renders through
``app.py``; a bad declaration is refused naming file, line and field."""

from __future__ import annotations

import ast
import os
import shutil
import textwrap
import threading
import time

import pytest

from apptest_support import REPO, app_test, ok, page_path
from automonitor.errors import InputError
from automonitor.views.page_index import Nav, discover

TOY_VIEW = '''
"""The toy page's view model (core side: no Streamlit)."""
import pandas as pd


def toy_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"k": list(range(n)), "square": [i * i for i in range(n)]})
'''

TOY_PAGE = '''
"""A toy page."""
from pages._ui import nav as navigation

navigation.ensure_navigation()

import streamlit as st

import toy_views
from automonitor.views.page_index import Nav
from pages._ui import auth

PAGE = "toy"
NAV = Nav(title="Toy page", icon=":material/toys:", order=25, access="workbench")
auth.workbench_page(NAV)
st.dataframe(toy_views.toy_frame(4))
'''


@pytest.fixture
def app_copy(tmp_path, monkeypatch):
    """A copy of ``app.py``, ``assets/`` and ``pages/`` with a toy page and its view module added."""
    shutil.copy(REPO / "app.py", tmp_path / "app.py")
    shutil.copytree(REPO / "assets", tmp_path / "assets")
    shutil.copytree(REPO / "pages", tmp_path / "pages", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "pages" / "toy.py").write_text(textwrap.dedent(TOY_PAGE))
    # the view module importable; the pages package stays the repository's (tmp_path itself is not on the path)
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "toy_views.py").write_text(textwrap.dedent(TOY_VIEW))
    monkeypatch.syspath_prepend(str(tmp_path / "core"))
    return tmp_path


def test_a_toy_page_is_listed_in_order_and_renders_through_the_app(app_copy, seeded):
    pages = discover(app_copy)
    toy = next(p for p in pages if p.url == "toy")
    assert toy.path == "pages/toy.py"
    assert toy.nav == Nav(title="Toy page", icon=":material/toys:", order=25, access="workbench")
    workbench = [p.nav.title for p in pages if p.nav.access == "workbench"]
    assert workbench.index("Runs") < workbench.index("Toy page") < workbench.index("Trade-off")
    # the real pages are not listed as the toy's
    assert [p.url for p in discover(REPO)] == [p.url for p in pages if p.url != "toy"]

    at = app_test(entry=str(app_copy / "app.py"))
    ok(at.run())
    at.switch_page(page_path("pages/toy.py", app_copy))
    ok(at.run())
    assert [t.value for t in at.title] == ["Toy page"]  # the title its NAV declares
    assert list(at.dataframe[0].value["square"]) == [0, 1, 4, 9]


@pytest.mark.parametrize(
    ("declaration", "field"),
    [
        ('PAGE = "bad"\nNAV = Nav(title="X", icon="i", order=1)', "access"),
        ('PAGE = "bad"\nNAV = Nav(title="X", icon="i", order="1", access="workbench")', "order"),
        ('PAGE = "bad"\nNAV = Nav(title="X", icon="i", order=1, access="everyone")', "access"),
        ('PAGE = "bad"\nNAV = Nav(title=TITLE, icon="i", order=1, access="workbench")', "title"),
        ('PAGE = "bad"\nNAV = Nav(titel="X", icon="i", order=1, access="workbench")', "titel"),
        ('NAV = Nav(title="X", icon="i", order=1, access="workbench")', "PAGE"),
        ('PAGE = "other"\nNAV = Nav(title="X", icon="i", order=1, access="workbench")', "PAGE"),
    ],
)
def test_a_bad_page_declaration_names_file_line_and_field(tmp_path, declaration, field):
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "bad.py").write_text(declaration + "\n")
    with pytest.raises(InputError) as err:
        discover(tmp_path)
    assert err.value.file == "pages/bad.py" and err.value.field == field


def test_files_without_a_declaration_are_not_pages(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "notes.py").write_text("PAGE = 'notes'\n")
    (tmp_path / "pages" / "_helper.py").write_text("NAV = 1\n")
    assert discover(tmp_path) == []


def test_every_file_directly_under_pages_is_a_page():
    """A ``pages/`` folder beside ``app.py`` puts Streamlit in its legacy multipage mode: the first script run
    of a session lists every ``.py`` file directly under ``pages/`` (``pages_folder.glob("*.py")`` less dot
    files and ``__init__.py``; a sub-folder is not looked into) in the sidebar until ``app.py``'s
    ``st.navigation`` replaces the menu. A helper module there showed as a page ("auth", "data", ...) for
    seconds on a slow first load and said "Page not found" when clicked, so every such file is a page that
    the app's navigation declares (:func:`discover`), and the helpers live in the package ``pages/_ui/``."""
    listed = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "pages").glob("*.py")
        if not p.name.startswith(".") and p.name != "__init__.py"
    }
    declared = {p.path for p in discover(REPO)}
    assert listed - declared == set(), "not pages: move them into pages/_ui/"
    assert declared <= listed and len(declared) >= 10


ONE = 'PAGE = "one"\nNAV = Nav(title="{title}", icon="i", order=1, access="workbench")\n'


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The files ``ast.parse`` is asked to parse while the test runs (each parse slowed by 20 ms, so that
    callers in several threads overlap)."""
    seen: list[str] = []
    real = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):
        seen.append(str(filename))
        time.sleep(0.02)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    return seen


def test_discover_parses_a_page_file_again_only_when_it_changed(tmp_path, parses):
    """``app.py`` calls ``discover`` on every script run: an unchanged page file is not parsed again, a
    changed one is (its new declaration is used)."""
    (tmp_path / "pages").mkdir()
    page = tmp_path / "pages" / "one.py"
    page.write_text(ONE.format(title="One"))
    assert [p.nav.title for p in discover(tmp_path)] == ["One"]
    assert [p.nav.title for p in discover(tmp_path)] == ["One"]
    assert parses == ["pages/one.py"]
    before = page.stat().st_mtime_ns
    page.write_text(ONE.format(title="Eins"))
    os.utime(page, ns=(before + 10**9, before + 10**9))
    assert [p.nav.title for p in discover(tmp_path)] == ["Eins"]
    assert parses == ["pages/one.py", "pages/one.py"]


def test_sessions_discovering_at_once_parse_one_at_a_time(tmp_path, parses):
    """The server runs several sessions' scripts at once, each in a thread, and CPython 3.11's AST
    constructor keeps its recursion depth in interpreter-wide state (two threads parsing at once failed
    with ``SystemError: AST constructor recursion depth mismatch`` in place of an annotator's page): 8
    threads calling ``discover`` together get the same pages, and the file is parsed once, by one of them."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "one.py").write_text(ONE.format(title="One"))
    start = threading.Barrier(8)
    results: list[list[str]] = []

    def session() -> None:
        start.wait()
        results.append([p.url for p in discover(tmp_path)])

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [["one"]] * 8
    assert parses == ["pages/one.py"]
