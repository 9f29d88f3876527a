"""Fixtures of the in-process ``AppTest`` tests: every test here runs in served mode; ``seeded`` is a
small seeded SQLite store per module that the app reads."""

from __future__ import annotations

import pytest

import app_seed
from apptest_support import StoreEnv, open_store


@pytest.fixture(autouse=True)
def served_mode(monkeypatch):
    """Run AppTest the way a server runs once ``app.py`` has executed ``st.navigation``.

    ``AppTest`` re-derives Streamlit's legacy ``pages/``-directory flag on every run (a real server
    decides it once per process and ``st.navigation`` clears it for good), so without this every
    AppTest run would start in legacy mode and ``navigation.ensure_navigation()`` (``pages/_nav.py``) would rerun it, dropping
    widget clicks. The legacy first-request case is covered by the browser suite."""
    from streamlit.runtime.pages_manager import PagesManager

    orig = PagesManager.__init__

    def init(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """``{"url", "engine", ...seed info}``: a store seeded by ``app_seed.seed_store`` (2 pairs a cell,
    3 runs), the app pointed at it for the module."""
    url = f"sqlite:///{tmp_path_factory.mktemp('app') / 'store.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=2, runs=3)
    with StoreEnv(url):
        yield {"url": url, "engine": eng, **info}
    eng.dispose()
