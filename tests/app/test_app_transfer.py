"""AppTest of the Transfer page (``pages/transfer.py``): no saved matrix -> a hint; a saved matrix -> the
heatmap, baselines and paper cells; untrusted text in the saved file is escaped in the hovers."""

from __future__ import annotations

import json
from pathlib import Path
from apptest_support import app_test, page_path


REPO = Path(__file__).resolve().parents[2]


def saved_transfer(features: str = "tfidf") -> dict:
    cells = []
    for tr in ("safety_permission/code", "all", "<img src=x onerror=alert(1)>"):
        for te in ("specification_gaming/code", "all"):
            cells.append(
                {
                    "train": tr,
                    "test": te,
                    "mr": 0.7,
                    "far": 0.2,
                    "auroc": 0.41,
                    "n": 10,
                    "mr_ci": [0.4, 0.9],
                    "far_ci": [0.05, 0.5],
                    "auroc_ci": [0.2, 0.6],
                    "highlight": tr == "safety_permission/code" and te == "specification_gaming/code",
                }
            )
    return {
        "features": features,
        "threshold": 0.5,
        "slices": ["safety_permission/code", "specification_gaming/code", "all"],
        "train_slices": ["safety_permission/code", "all", "<img src=x onerror=alert(1)>"],
        "test_slices": ["specification_gaming/code", "all"],
        "cells": cells,
        "baselines": {"all": {"length": 0.5, "tfidf": 0.7}},
        "paper": [
            {
                "train": "safety_permission/code",
                "test": "specification_gaming/code",
                "mr": 0.86,
                "far": None,
                "note": "<img src=x onerror=alert(1)>",
            }
        ],
        "highlight": {"train": "safety_permission/code", "test": "specification_gaming/code"},
    }


def test_transfer_page(tmp_path, monkeypatch):

    monkeypatch.setenv("AUTOMONITOR_DB", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("AUTOMONITOR_ARTIFACTS", str(tmp_path / "art"))
    at = app_test(60)
    at.run()
    at.switch_page(page_path("pages/transfer.py"))
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Cross-category transfer of trained monitors"  # its heading, not its NAV title
    assert any("probe transfer --features tfidf" in i.value for i in at.info)
    # the paper's Figure 8 is shown without any measured matrix: MR by default, 7 x 6, and the table
    paper = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(paper["z"]) == 7 and all(len(r) == 6 for r in paper["z"])
    assert paper["y"][1] == "S&amp;PV Code" and paper["x"][4] == "SG Code" and paper["z"][1][4] == 0.86
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 42

    d = tmp_path / "art" / "probes"
    d.mkdir(parents=True)
    (d / "transfer-tfidf.json").write_text(json.dumps(saved_transfer()))
    at.run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 2  # ours beside the paper's Figure 8
    spec = json.loads(charts[0].proto.spec)
    hovers = json.dumps(spec["data"][0]["customdata"])
    assert "&lt;img src=x onerror=alert(1)&gt;" in hovers and "<img" not in hovers
    assert "paper Fig. 8 (S&amp;PV Code; LoRA Qwen3-4B): AUROC" not in hovers  # Figure 8 has no AUROC
    assert spec["layout"]["shapes"], "the paper's cell is outlined"
    assert len(at.dataframe) == 2
    frame = at.dataframe[1].value  # Figure 8 cell for cell; ours where the slices match
    hit = frame[(frame["paper trained on"] == "S&PV Code") & (frame["paper tested on"] == "SG Code")].iloc[0]
    assert hit["paper MR"] == 0.86 and hit["probe MR"] == "0.700"  # a column with unmeasured cells is text
    assert (frame["probe MR"] != "—").sum() == 2  # S&PV Code -> SG Code and All -> SG Code; "—" elsewhere
    assert frame["probe MR"].notna().all()
    at.selectbox(key="transfer.metric").select("mr")
    at.run()
    hovers = json.dumps(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["customdata"])
    assert "paper Fig. 8 (S&amp;PV Code; LoRA Qwen3-4B): MR 0.86" in hovers


def test_transfer_page_shows_the_background_notice_while_make_demo_computes_the_matrix(tmp_path, monkeypatch):
    """While `make demo`'s background phase runs (a fresh demo-llm.log in the working directory) the page
    says so, as the Runs page does, instead of asking for the `probe transfer` run already under way."""

    monkeypatch.setenv("AUTOMONITOR_DB", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("AUTOMONITOR_ARTIFACTS", str(tmp_path / "art"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo-llm.log").write_text("== transfer table (Transfer page): one TF-IDF probe per slice <b>x</b>\n")
    at = app_test(60)
    at.run()
    at.switch_page(page_path("pages/transfer.py"))
    at.run()
    assert not at.exception, at.exception
    info = "\n".join(i.value for i in at.info)
    assert "`make demo`'s background phase is running" in info and "computing the transfer matrix" in info
    assert "run `automonitor probe transfer" not in info
    assert "<b>" not in info  # the log line is escaped
