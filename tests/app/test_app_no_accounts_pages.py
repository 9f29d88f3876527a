"""Trial 46 (U3): in a store without accounts (the local single-user workbench) /label, /agreement,
/adjudicate and /accounts silently showed the Overview. Through ``app.py``'s navigation (a real SQLite store,
no account) each of these pages now says that it needs accounts and how to create one, writes nothing, and the
sidebar still lists only the workbench pages."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from apptest_support import app_test, ok, open_store, page_path
from automonitor.annotation import accounts


@pytest.mark.parametrize("page", ["label", "agreement", "adjudicate", "accounts"])
def test_an_accounts_page_says_why_it_is_empty(tmp_path, monkeypatch, page):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    try:
        assert not accounts.any_accounts(eng)
        with eng.connect() as c:
            before = {t: c.execute(sa.text(f"select count(*) from {t}")).scalar() for t in ("annotator", "annotation")}
        at = ok(app_test(120).run())
        at.switch_page(page_path(f"pages/{page}.py"))
        ok(at.run())
        said = [w.value for w in at.warning]
        assert any("needs accounts" in s and "automonitor users add" in s for s in said), said
        assert not at.title or at.title[0].value != "Overview"  # not the Overview under this address
        assert not [e.value for e in at.error]
        with eng.connect() as c:
            after = {t: c.execute(sa.text(f"select count(*) from {t}")).scalar() for t in ("annotator", "annotation")}
        assert after == before
    finally:
        eng.dispose()
