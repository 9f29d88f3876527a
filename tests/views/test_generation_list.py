"""The generation runs as ``automonitor generate list`` prints them and the Generation page lists them: one
core view (``views.generation_list_rows``) with status, source, generator, kept and dropped items, start and
end; the CLI's line and the page's table are made from it."""

from __future__ import annotations

from automonitor import views
from automonitor.views.cells import MISSING

FINISHED = {
    "generation_id": "gen-20260105-142301-a1b2c3",
    "status": "finished",
    "kind": "sycophancy",
    "generator": "openai:scripted-gen",
    "source": "bct_truthfulqa_cues",
    "cue": "suggested_answer",
    "incentive": None,
    "prompts": 4,
    "kept": 2,
    "dropped": {"cued_right": 1, "uncued_wrong": 1},
    "candidates_added": 2,
    "calls": 8,
    "cache_hits": 0,
    "cost_usd": 0.0,
    "created_at": "2026-01-05T14:23:01+00:00",
    "started_at": "2026-01-05T14:23:02+00:00",
    "finished_at": "2026-01-05T14:23:09+00:00",
}
PENDING = FINISHED | {
    "generation_id": "gen-20260105-150000-ffee00",
    "status": "pending",
    "kind": "gaming",
    "source": "mbpp",
    "cue": None,
    "incentive": "tests_only",
    "prompts": 0,
    "kept": 0,
    "dropped": {},
    "candidates_added": 0,
    "started_at": None,
    "finished_at": None,
}


def test_generation_list_rows_line_and_page_table_agree():
    rows = views.generation_list_rows([PENDING, FINISHED])
    assert [list(r) for r in rows] == [views.runs.GENERATION_LIST_COLUMNS] * 2
    assert rows[1] == {
        "generation_id": FINISHED["generation_id"],
        "status": "finished",
        "kind": "sycophancy",
        "generator": "openai:scripted-gen",
        "source": "bct_truthfulqa_cues",
        "prompts": 4,
        "kept": 2,
        "candidates_added": 2,
        "dropped": 2,
        "started_at": "2026-01-05T14:23:02+00:00",
        "finished_at": "2026-01-05T14:23:09+00:00",
    }
    assert rows[0]["dropped"] == 0 and rows[0]["started_at"] is rows[0]["finished_at"] is None
    # the CLI's line: its first eight fields as before, then dropped, start and end
    assert views.generation_list_line(rows[1]).split("\t") == [
        FINISHED["generation_id"],
        "finished",
        "sycophancy",
        "openai:scripted-gen",
        "bct_truthfulqa_cues",
        "4 prompts",
        "2 kept",
        "2 added",
        "2 dropped",
        "started 2026-01-05T14:23:02+00:00",
        "finished 2026-01-05T14:23:09+00:00",
    ]
    assert views.generation_list_line(rows[0]).split("\t")[-3:] == ["0 dropped", "started -", "finished -"]
    # the page's table: the same rows first (newest first), then the filter statistics
    table = views.generation_stats_frame([PENDING, FINISHED])
    assert list(table.columns[: len(rows[0])]) == views.runs.GENERATION_LIST_COLUMNS
    assert {"cue/incentive", "kept_rate", "dropped: cued_right", "dropped: uncued_wrong"} <= set(table.columns)
    shown = table[views.runs.GENERATION_LIST_COLUMNS].to_dict("records")
    assert shown[1] == rows[1]
    assert shown[0] == rows[0] | {"started_at": MISSING, "finished_at": MISSING}
