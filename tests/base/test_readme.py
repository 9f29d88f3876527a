"""The README's first screen: the two commands and the Trade-off screenshot that ``scripts/screenshot.py``
draws from what ``make demo`` runs (checked from the picture's provenance file, without a browser)."""

from __future__ import annotations

import hashlib
import json
import re

from PIL import Image

from helpers import REPO


def test_readme_first_screen_has_the_two_commands_and_a_current_screenshot():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:30])
    assert "make demo" in first and "make test" in first
    (target,) = re.findall(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.png)\)", first)
    path = REPO / target
    assert path.is_file(), f"{target} is missing: run python scripts/screenshot.py"
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] >= 1280 and im.size[1] >= 700


def test_readme_is_a_short_manual_that_links_into_the_docs():
    """The README was a 1,669-line design log (fresh-user trial): now under 200 lines, every link into
    the docs resolves, and no "was X, now Y" history (that goes to CHANGELOG.md)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 15 and all((REPO / link).is_file() for link in links), links
    for history in (r"\(was\b", r"\bwas [^.]*, now\b", r"\bbefore this\b", r"\bno longer\b"):
        assert not re.search(history, text, re.I), history
    for cmd in ("--base-url http://", "--monitor anthropic:", "predictions import"):
        assert cmd in text  # the one "evaluate your monitor" block: URL, Anthropic, predictions file


def test_the_readme_picture_is_drawn_from_runs_the_demo_makes():
    """The README's picture showed the browser tests' seeded store, where a run named ``gpt-4o-mini
    evid.`` sat below every paper point: a measurement nobody made (fresh-user trial). Now
    ``scripts/screenshot.py`` writes ``<picture>.provenance.json`` beside it: the picture's hash (so it
    is the one described) and every run of the store it was drawn from. Each is a monitor that
    ``scripts/demo_runs.sh`` runs, judged for real (finished, samples with outcomes), or a derivation the
    demo makes from such runs of the same store; its label on the plane comes from its monitor."""
    from automonitor.views.honest_points import short_label

    text = (REPO / "README.md").read_text(encoding="utf-8")
    (target,) = re.findall(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.png)\)", text)
    png = REPO / target
    side = png.with_name(f"{png.stem}.provenance.json")
    assert side.is_file(), f"{side.name} is missing: run python scripts/screenshot.py"
    doc = json.loads(side.read_text(encoding="utf-8"))
    assert doc["drawn_by"] == "scripts/screenshot.py" and doc["picture"] == png.name
    assert doc["png_sha256"] == hashlib.sha256(png.read_bytes()).hexdigest(), "the picture is not the one described"

    demo = (REPO / "scripts" / "demo_runs.sh").read_text(encoding="utf-8")
    monitors = set(re.findall(r"--monitor (\S+)", demo))
    recipes = set(re.findall(r"derive (\w+)", demo))
    assert {"rules", "probe:tfidf-lr"} <= monitors and {"ensemble", "thresholds", "cascade"} <= recipes
    runs = doc["runs"]
    measured = [r for r in runs if r["kind"] == "measured"]
    assert measured and all(r["kind"] in ("measured", "derived") for r in runs), runs

    def by_demo(monitor: str) -> bool:  # a monitor spec of the demo, as stored (`rules` -> `rules:rules-v1`)
        return any(monitor == m or monitor.startswith(f"{m}:") for m in monitors)

    for r in runs:
        assert r["status"] == "finished" and r["judged"] > 0, r  # really judged, not seeded
        assert r["label"] == short_label(r["monitor"], r["template"]), r  # named after its monitor
        if r["kind"] == "measured":
            assert by_demo(r["monitor"]), f"{r['monitor']!r}: a monitor make demo does not run"
        else:
            assert r["monitor"].split(" ", 1)[0] in recipes, r
            inputs = re.findall(r"([^\s(+]+)@([0-9A-Za-z]{6})", r["monitor"])
            assert inputs, r
            for monitor, tail in inputs:  # its inputs: measured runs of the same store
                assert any(m["monitor"] == monitor and m["run_id"].endswith(tail) for m in measured), (r, monitor)
