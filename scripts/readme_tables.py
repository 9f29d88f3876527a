"""Regenerate (or check) the docs' generated tables from the seed-0 build, so they never drift from the code.

The blocks between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in the docs pages of :data:`FILES`
(they lived in README.md before the docs site) are exactly what the commands print on a store built with
``automonitor build --seed 0``:

- ``gate-table``: ``automonitor build --report-markdown``;
- ``audit-table:verified`` / ``audit-table:paper``: ``automonitor audit --edition E --format markdown``.

Usage: ``python scripts/readme_tables.py [--check]`` (``AUTOMONITOR_RAW`` must point at the raw data;
the build goes to a temporary SQLite store). ``tests/data/test_readme_tables.py`` runs :func:`generated` and
fails when a page differs.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: where each generated block lives
FILES = {
    "gate-table": DOCS / "explanation" / "editions.md",
    "audit-table:verified": DOCS / "explanation" / "audit.md",
    "audit-table:paper": DOCS / "explanation" / "audit.md",
}
BLOCKS = tuple(FILES)


def current_blocks() -> dict[str, str]:
    """The current content of every generated block, read from its page (a missing block is absent)."""
    out: dict[str, str] = {}
    for path in sorted(set(FILES.values())):
        out |= {k: v for k, v in readme_blocks(path.read_text(encoding="utf-8")).items() if FILES[k] == path}
    return out


#: the editions whose audit tables the docs show (``audit-table:E``)
AUDITED = ("verified", "paper")


def generated(
    raw: str | Path | None = None,
    built: tuple[Any, dict[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """``{block name: markdown}`` from a fresh seed-0 build in a temporary store (the build keeps the audits of
    :data:`AUDITED`, as ``automonitor build --edition verified`` keeps paper's and verified's), or from ``built``:
    ``(engine, report)`` of a seed-0 build made already (the test suite's shared one, which keeps them too).
    Each audit table is what ``automonitor audit --edition E --format markdown`` prints: the audit read
    through :func:`automonitor.data.audit.cached_audit` (the copy the store keeps for its samples, else
    computed). ``progress``, when given, gets :func:`~automonitor.data.audit.cached_audit`'s line per audit
    (where it came from). Raises ``InputError`` for an unreadable raw dir or errata file."""
    from automonitor.data import audit
    from automonitor.data.build import build
    from automonitor.data.build.report_md import gates_markdown
    from store import get_engine, init_db

    def blocks(eng: Any, report: dict[str, Any]) -> dict[str, str]:
        out = {"gate-table": gates_markdown(report)}
        for ed in AUDITED:
            out[f"audit-table:{ed}"] = audit.markdown(audit.cached_audit(eng, ed, progress=progress))
        return out

    if built is not None:
        return blocks(*built)
    with tempfile.TemporaryDirectory() as tmp:
        eng = init_db(get_engine(f"sqlite:///{tmp}/readme.db", fresh=True))
        try:
            return blocks(eng, build(eng, raw, 0, audits=AUDITED))
        finally:
            eng.dispose()


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {re.escape(name)}:start -->\n)(.*?)(<!-- {re.escape(name)}:end -->)", re.S)


def readme_blocks(text: str) -> dict[str, str]:
    """The current content of each generated block of ``text`` (a docs page); a missing block is absent."""
    out = {}
    for name in BLOCKS:
        m = _pattern(name).search(text)
        if m:
            out[name] = m.group(2)
    return out


def replace_blocks(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each block's content replaced by ``blocks[name]``."""
    for name, body in blocks.items():
        text = _pattern(name).sub(lambda m, b=body: m.group(1) + b + m.group(3), text)
    return text


def main(argv: list[str]) -> int:
    gen = generated()
    if "--check" in argv:
        stale = [k for k, v in gen.items() if current_blocks().get(k) != v]
        print("docs tables up to date" if not stale else f"stale docs blocks: {', '.join(stale)}")
        return 1 if stale else 0
    for path in sorted(set(FILES.values())):
        mine = {k: v for k, v in gen.items() if FILES[k] == path}
        path.write_text(replace_blocks(path.read_text(encoding="utf-8"), mine), encoding="utf-8")
    print(f"wrote {', '.join(gen)} into {', '.join(str(p) for p in sorted(set(FILES.values())))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
