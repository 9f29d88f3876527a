"""Helpers for the in-process Streamlit ``AppTest`` tests of the pages (``tests/app``): the app's entry
file, a store opened fresh, the store the app reads for the length of a block, a fresh session on a page.
The seeded store fixture is in ``tests/app/conftest.py``."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
WORKBENCH = ["pages/overview.py", "pages/runs.py", "pages/tradeoff.py", "pages/drilldown.py", "pages/samples.py"]


def open_store(url: str):
    """A fresh engine on ``url`` with the schema created (``store.init_db``)."""
    from store import get_engine, init_db

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
