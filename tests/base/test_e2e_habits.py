"""Habits of the browser tests that a flaky CI run taught: a visibility check waits for Streamlit's
rerun (``expect(locator).to_be_visible()``); a bare ``assert locator.is_visible()`` reads the page once,
so it fails whenever the rerun is still drawing (CI failed on one such check)."""

from __future__ import annotations

import re
from pathlib import Path

E2E = Path(__file__).resolve().parents[1] / "e2e"
BARE = re.compile(r"^\s*assert\s+(?!not\b).*\.is_visible\(\)")


def test_no_browser_test_asserts_a_bare_is_visible():
    bad = [
        f"{p.name}:{i}: {line.strip()}"
        for p in sorted(E2E.glob("test_*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if BARE.match(line)
    ]
    assert not bad, "use expect(locator).to_be_visible():\n" + "\n".join(bad)


def test_the_rule_sees_a_bare_check():
    assert BARE.match('    assert page.get_by_role("heading", name="Label").is_visible()')
    assert not BARE.match('    expect(page.get_by_role("heading", name="Label")).to_be_visible()')
