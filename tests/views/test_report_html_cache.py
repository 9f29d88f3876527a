"""`automonitor report --format html` on an unchanged store: the page kept per store version
(``report_cache.cached_text``) is written with the time of this write on its Generated line; a changed store
builds it again."""

from __future__ import annotations

import json
import os
import re
import time

import sqlalchemy as sa
from helpers import run_cli
from report_html_seed import seed_store

from automonitor.timestamps import utcnow

GENERATED = re.compile(r"Generated (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC")


def _settle(engine) -> None:
    """Close the connections and date the store file a minute back, as a store last written a while ago."""
    engine.dispose()
    path = engine.url.database
    past = time.time() - 60
    for p in (path, f"{path}-wal"):
        if os.path.exists(p):
            os.utime(p, (past, past))


def _undated(html: str) -> str:
    return GENERATED.sub("Generated -", html)


def _kept_pages(folder) -> list:
    return [p for p in folder.glob("*.json") if isinstance(json.loads(p.read_text()), str)]


def test_an_unchanged_store_writes_its_kept_page_with_the_time_of_the_write(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = seed_store(url)  # runs and monitors named with markup: the Generated line stays the template's
    _settle(engine)
    env = {"AUTOMONITOR_CACHE_DIR": str(tmp_path / "c")}
    out = tmp_path / "rep.html"
    args = ["report", "--format", "html", "--no-audit", "--output", str(out)]
    first = run_cli(args, db=url, env=env)
    assert first.returncode == 0, first.stderr
    page = out.read_text(encoding="utf-8")
    assert page.count('<p class="meta">Generated ') == 1  # only the header writes it (data and figures escape <)
    kept = _kept_pages(tmp_path / "c" / "reports")
    assert len(kept) == 1 and _undated(json.loads(kept[0].read_text())) == _undated(page)

    marked = json.loads(kept[0].read_text()).replace("<h1>", "<h1>KEPT ", 1)  # only a read of the kept page gives this
    kept[0].write_text(json.dumps(marked))
    before = utcnow().strftime("%Y-%m-%d %H:%M")
    again = run_cli(args, db=url, env=env)
    after = utcnow().strftime("%Y-%m-%d %H:%M")
    assert again.returncode == 0, again.stderr
    second = out.read_text(encoding="utf-8")
    assert _undated(second) == _undated(page).replace("<h1>", "<h1>KEPT ", 1)
    stamp = GENERATED.search(second)
    assert stamp is not None and before <= stamp.group(1) <= after  # this write's minute, not the kept page's
    assert again.stderr.split(":", 1)[1] == first.stderr.split(":", 1)[1]  # the same size and number of runs

    from store import get_engine
    from store.models import Prediction

    engine = get_engine(url)
    with engine.begin() as c:  # one verdict changes: another store version, built again
        c.execute(sa.update(Prediction).where(Prediction.sample_id == "s0m").values(outcome="benign"))
    _settle(engine)
    changed = run_cli(args, db=url, env=env)
    assert changed.returncode == 0, changed.stderr
    rebuilt = out.read_text(encoding="utf-8")
    fresh_out = tmp_path / "fresh.html"
    fresh = run_cli([*args[:-1], str(fresh_out)], db=url, env={"AUTOMONITOR_CACHE_DIR": str(tmp_path / "d")})
    assert fresh.returncode == 0, fresh.stderr
    assert "KEPT" not in rebuilt and _undated(rebuilt) == _undated(fresh_out.read_text(encoding="utf-8"))
    assert _undated(rebuilt) != _undated(page)
