"""The README's generated tables (gate counts, audits of both editions) equal what the seed-0 build prints:
``python scripts/readme_tables.py`` regenerates them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_tables.py"


def _module():
    spec = importlib.util.spec_from_file_location("readme_tables", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_block_helpers_replace_only_between_markers():
    mod = _module()
    text = "a\n<!-- gate-table:start -->\nold\n<!-- gate-table:end -->\nb\n"
    assert mod.readme_blocks(text) == {"gate-table": "old\n"}
    assert mod.replace_blocks(text, {"gate-table": "new|x\n"}) == text.replace("old", "new|x")


@pytest.mark.slow
def test_readme_tables_match_the_seed0_build(built_sqlite):
    """Against the run's seed-0 build (``built_sqlite``: analysers and the filter ran for real in this run's
    own cache directory, tests/conftest.py)."""
    from store import get_engine

    mod = _module()
    current = mod.readme_blocks(mod.README.read_text(encoding="utf-8"))
    assert set(current) == set(mod.BLOCKS), "README lost a generated block's markers"
    eng = get_engine(f"sqlite:///{built_sqlite[0]}", fresh=True)
    try:
        generated = mod.generated(built=(eng, built_sqlite[1]))
    finally:
        eng.dispose()
    for name in mod.BLOCKS:
        assert current[name] == generated[name], f"README block {name} is stale: run python scripts/readme_tables.py"
