"""Counts that name what they count (trial: the Overview's "Gold samples (test) 2,966" beside the Samples page's
"17,818 matching", every split and every edition's members): the Overview's tile names its split and edition, the
Samples page's count line its split and status filters."""

from __future__ import annotations

from automonitor import views


def test_the_overview_tile_names_split_and_edition():
    assert views.gold_tile_label("test", "paper") == "Gold samples (test, edition paper)"
    assert views.gold_tile_label("test", "verified") == "Gold samples (test, edition verified)"
    assert views.gold_tile_label("test") == "Gold samples (test, edition paper)"  # the default edition
    assert views.gold_tile_label("train", "paper") == "Gold samples (train)"  # editions are of the test split
    assert views.gold_tile_label("all", "paper") == "Gold samples (all splits)"


def test_the_samples_count_line_names_its_split_and_status_filters():
    line, tip = views.matching_line(17818, [], ["gold"])
    assert line == "**17,818** matching samples · split: all · status: gold"
    assert "every edition" in tip and "paper, verified, paper-r2, hard" in tip and "Overview" in tip
    assert views.matching_line(2966, ["test"], ["gold"])[0] == "**2,966** matching samples · split: test · status: gold"
    assert (
        views.matching_line(3, ["test", "train"], [])[0] == "**3** matching samples · split: test, train · status: any"
    )
    # the values are markdown-escaped (they come from the URL through the filters, still: never markup)
    assert views.matching_line(1, ["*x*"], ["a_b"])[0] == "**1** matching samples · split: \\*x\\* · status: a\\_b"
