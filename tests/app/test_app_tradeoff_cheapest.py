"""AppTest of the Trade-off page's "Cheapest monitor meeting a target" (pages/_ui/derived_ui.py, fresh-user trial):
the run id is shown as it is (a code span, no backslash; a backtick in it kept), and the block chooses only among
the runs drawn solid, as its caption says: a hollow run (too few judged samples) is never picked."""

from __future__ import annotations

import app_seed
from apptest_support import StoreEnv, app, ok, open_store

ODD_ID = "imp-1d8c`31_b"  # a hyphen, a backtick and an underscore: md_escape'd in a code span they showed backslashes
HOLLOW_ID = "a-hollow"  # sorts first: the tie-break (same cost, same MR + FAR) picked it before


def test_cheapest_shows_the_id_as_it_is_and_skips_hollow_runs(tmp_path):
    url = f"sqlite:///{tmp_path / 'cheapest.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=3, runs=1, hostile=False)
    gold = [r for r in info["samples"] if r["status"] == "gold" and r["split"] == "test"]
    assert len(gold) >= 40
    # two perfect rules runs (cost 0, MR 0, FAR 0): one on every sample, one on 14 (hollow at min_n 20)
    app_seed.add_run(eng, gold, monitor="rules", template="direct", run_id=ODD_ID, skill=1.0, unscored=0.0)
    app_seed.add_run(eng, gold[:14], monitor="rules", template="direct", run_id=HOLLOW_ID, skill=1.0, unscored=0.0)
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="20").run())
            at.number_input(key="tradeoff.mr_max").set_value(0.1)
            at.number_input(key="tradeoff.far_max").set_value(0.1)
            ok(at.run())
            md = [m.value for m in at.markdown if "per 1,000 samples" in m.value]
            assert len(md) == 1, [m.value for m in at.markdown]
            assert f"run ``{ODD_ID}``:" in md[0] and "\\" not in md[0].split("run ", 1)[1]
            assert HOLLOW_ID not in md[0]
            caps = " ".join(c.value for c in at.caption)
            assert "The cheapest of the " in caps and "drawn solid" in caps and "hollow runs are left out" in caps
    finally:
        eng.dispose()
