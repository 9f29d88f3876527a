"""Fixtures of the in-process ``AppTest`` tests: ``seeded`` is a small seeded SQLite store per module that the
app reads (``apptest_support.app_test`` runs ``app.py`` as a server does, with Streamlit's public API only)."""

from __future__ import annotations

import pytest

import app_seed
from apptest_support import StoreEnv, open_store


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
