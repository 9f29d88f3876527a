"""AppTest: the Trade-off page names, under the plane, the runs it leaves out for having no MR/FAR (every call failed,
every answer invalid) with why, in the report's words; before, only the "Runs shown" tooltip counted them."""

from __future__ import annotations

import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


def test_runs_without_mr_far_are_named_under_the_plane(tmp_path):
    url = f"sqlite:///{tmp_path / 'unplotted.db'}"
    eng = open_store(url)
    ids = app_seed.seed_store(eng, pairs_per_cell=1, runs=3, hostile=False)["run_ids"]
    with eng.begin() as c:
        c.execute(sa.text("update prediction set outcome = 'error' where run_id = :i"), {"i": ids[0]})
        c.execute(sa.text("update run set status = 'failed', monitor = '<b>x</b>' where id = :i"), {"i": ids[0]})
        c.execute(sa.text("update prediction set outcome = 'invalid' where run_id = :i"), {"i": ids[1]})
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())
            (cap,) = [c.value for c in at.caption if c.value.startswith("Not on the plane")]
            plain = cap.replace("\\", "")
            assert f"{ids[0]} (failed, errors 100%)" in plain and f"{ids[1]} (unscored 100%)" in plain
            assert ids[2] not in plain and "\\<b\\>x\\</b\\>" in cap  # the plotted run is not named; text escaped
    finally:
        eng.dispose()
