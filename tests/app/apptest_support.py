"""Helpers for the in-process Streamlit ``AppTest`` tests of the pages (``tests/app``): the app's entry
file, a store opened fresh, the store the app reads for the length of a block, a fresh session on a page.
The seeded store fixture is in ``tests/app/conftest.py``."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
WORKBENCH = ["pages/overview.py", "pages/runs.py", "pages/tradeoff.py", "pages/drilldown.py", "pages/samples.py"]


_MIGRATED: list[Path] = []  # this process's empty store migrated to head, made at the first open_store


def _migrated_template() -> Path:
    """An empty SQLite store migrated to head by the real ``store.init_db``, once per process (kept in a
    temporary folder for the process's life, removed when it exits; only ever read)."""
    if not _MIGRATED:
        from store import get_engine, init_db

        folder = Path(tempfile.mkdtemp(prefix="am-apptest-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # each worker left one behind in /tmp before
        path = folder / "head.db"
        init_db(get_engine(f"sqlite:///{path}", fresh=True)).dispose()
        _MIGRATED.append(path)
    return _MIGRATED[0]


def open_store(url: str):
    """A fresh engine on ``url`` with the schema created (``store.init_db``). A SQLite file that does not
    exist yet is first made a backup-API copy of :func:`_migrated_template` (one migration per process, not
    per store); ``init_db`` then finds the schema current, as a second command would."""
    from store import get_engine, init_db

    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        with sqlite3.connect(_migrated_template()) as src, sqlite3.connect(url.removeprefix("sqlite:///")) as dst:
            src.backup(dst)
        src.close()
        dst.close()
    return init_db(get_engine(url, fresh=True))


class StoreEnv:
    """Point the in-process app at a store (``AUTOMONITOR_DB``) for the duration of a ``with`` block."""

    def __init__(self, url: str):
        self.url, self.old = url, os.environ.get("AUTOMONITOR_DB")

    def __enter__(self):
        os.environ["AUTOMONITOR_DB"] = self.url
        return self

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("AUTOMONITOR_DB", None)
        else:
            os.environ["AUTOMONITOR_DB"] = self.old


def app_test(timeout: float = 60, entry: str = APP):
    """A fresh AppTest of ``entry`` (``app.py``) as a server runs it: the entry is run (``runpy``) from
    AppTest's own script folder, which has no ``pages/`` beside it, so Streamlit never enters its legacy
    ``pages/``-directory mode (which ``AppTest.from_file`` would re-derive at every run, where a server leaves
    it for good once ``app.py`` called ``st.navigation``). Public API only; switch pages with
    :func:`page_path`."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_string(
        f"import runpy\nrunpy.run_path({entry!r}, run_name='__main__')\n", default_timeout=timeout
    )


def page_path(page: str, root: Path = REPO) -> str:
    """``AppTest.switch_page``'s argument for ``page`` (``pages/runs.py``): its absolute path, as the app's
    navigation registers it (:func:`app_test` runs from another folder)."""
    return str(root / page)


def app(page: str | None = None, **params):
    """A fresh AppTest session, optionally switched to ``page`` with query ``params`` (not run yet)."""
    at = app_test()
    at.run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page_path(page))
    for k, v in params.items():
        at.query_params[k] = v
    return at


def ok(at):
    """``at`` after asserting that its run raised nothing (the exceptions' messages otherwise)."""
    assert not at.exception, [e.message for e in at.exception]
    return at


def html_bodies(at) -> list[str]:
    """The bodies of every ``st.html`` element of the last run."""
    return [h.value for h in at.get("html")]
