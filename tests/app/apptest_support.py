"""Helpers for the in-process Streamlit ``AppTest`` tests of the pages (``tests/app``): the app's entry
file, a store opened fresh, the store the app reads for the length of a block, a fresh session on a page.
The fixtures (served mode, the seeded store) are in ``tests/app/conftest.py``."""

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


def app(page: str | None = None, **params):
    """A fresh AppTest session, optionally switched to ``page`` with query ``params`` (not run yet)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page)
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
