"""The README's first screen: the two commands and the Trade-off screenshot the browser test writes."""

from __future__ import annotations

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
