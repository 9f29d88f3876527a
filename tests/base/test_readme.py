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
    assert path.is_file(), f"{target} is missing: run tests/e2e/test_app_browser.py"
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] >= 1280 and im.size[1] >= 700
