"""monitor name unique when base_url is NULL: a unique index on (name, coalesce(base_url, ''))

The unique constraint ``uq_monitor_name_url`` on (name, base_url) let any number of rows share a name when
``base_url`` is NULL (NULLs are distinct in SQLite and PostgreSQL): three ``predictions import ... --monitor
race`` started together made two ``monitor`` rows named ``race`` and two runs (fresh-user trial). The index
``uq_monitor_name_url_any`` treats a NULL base URL as one value, so the database holds one row per name and
base URL, and a concurrent creator gets an ``IntegrityError`` and reads the row the other one made.

The upgrade first merges duplicate rows that such a race left: rows of one (name, base URL) that agree on
backend and model are one monitor; the oldest (lowest id) is kept and the others' runs are moved to it. Rows
that disagree on backend or model (e.g. an imported ``rules`` next to the built-in rules baseline) are not
merged: the upgrade stops, changing nothing, naming the rows; rename one (``UPDATE monitor SET name = ...
WHERE id = ...`` and its runs' ``monitor`` column) and upgrade again.

Create Date: 2026-12-05 23:55:00
"""
from typing import Any

from alembic import op
import sqlalchemy as sa


revision = 'r12_monitor_name_unique'
down_revision = 'r11_derived_document'

INDEX = 'uq_monitor_name_url_any'


def _merge_duplicates(bind) -> None:
    """Merge the duplicate monitor rows that agree on backend and model (runs moved to the lowest id);
    ``RuntimeError`` naming the rows (nothing changed) when a group disagrees."""
    rows = bind.execute(sa.text("SELECT id, name, base_url, backend, model FROM monitor ORDER BY id")).all()
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        groups.setdefault((r.name, r.base_url or ''), []).append(r)
    groups = {k: g for k, g in groups.items() if len(g) > 1}
    unsafe = [g for g in groups.values() if len({(r.backend, r.model) for r in g}) > 1]
    if unsafe:
        named = "; ".join(
            f"{g[0].name!r}" + (f" at {g[0].base_url!r}" if g[0].base_url else "") + ": "
            + ", ".join(f"id {r.id} (backend {r.backend}, model {r.model})" for r in g)
            for g in unsafe
        )
        raise RuntimeError(
            "cannot make monitor names unique: monitor rows share a name and base URL but differ in backend or "
            f"model, so they are not one monitor: {named}. Rename all but one (UPDATE monitor SET name = 'NEW' "
            "WHERE id = ID; UPDATE run SET monitor = 'NEW' WHERE monitor_id = ID) and upgrade again."
        )
    for g in groups.values():
        keep = g[0].id
        for r in g[1:]:
            bind.execute(sa.text("UPDATE run SET monitor_id = :keep WHERE monitor_id = :old"), {"keep": keep, "old": r.id})
            bind.execute(sa.text("DELETE FROM monitor WHERE id = :old"), {"old": r.id})


def upgrade() -> None:
    _merge_duplicates(op.get_bind())
    op.create_index(INDEX, 'monitor', ['name', sa.text("coalesce(base_url, '')")], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name='monitor')
