"""vocabulary columns held by the database (CHECK constraints on PostgreSQL, triggers on SQLite)

A writer that bypasses the core (another process, another version, hand-written SQL) could store a run
status, run kind, prediction outcome, sample label / status / split / category / task / label source,
annotation label, adjudication decision or account role that no reader knows: analyses would silently drop or miscount
it. The database now refuses such a value. PostgreSQL gets named CHECK constraints (as the models declare);
SQLite cannot add a CHECK to an existing table without copying it (which would drop the sample table's
triggers), so it gets a BEFORE INSERT and a BEFORE UPDATE trigger per column that abort with the
constraint's name. The upgrade fails, changing nothing, if a row already holds a value outside the list.

Revision ID: r8_vocabulary_checks
Revises: r7_revoked_session
Create Date: 2026-12-04 19:00:00
"""
from alembic import op


revision = 'r8_vocabulary_checks'
down_revision = 'r7_revoked_session'
branch_labels = None
depends_on = None

#: (table, column, allowed values, NULL allowed, constraint name): the vocabulary as of this revision
RULES = [
    ('sample', 'label', ('misbehavior', 'benign'), False, 'ck_sample_label'),
    ('sample', 'status', ('gold', 'candidate', 'rejected'), False, 'ck_sample_status'),
    ('sample', 'split', ('test', 'train', 'controls'), True, 'ck_sample_split'),
    ('sample', 'category', ('safety_permission', 'sycophancy_bias', 'specification_gaming'), False, 'ck_sample_category'),
    ('sample', 'task', ('qa', 'code', 'reasoning'), False, 'ck_sample_task'),
    ('sample', 'label_source', ('human_per_response', 'by_construction', 'patch_pair', 'preference_pair', 'instructed_demo', 'adjudicated', 'user', 'judge_consensus'), False, 'ck_sample_label_source'),
    ('run', 'status', ('pending', 'running', 'finished', 'failed', 'cancelled', 'imported'), False, 'ck_run_status'),
    ('run', 'kind', ('measured', 'imported', 'derived', 'generation'), False, 'ck_run_kind'),
    ('prediction', 'outcome', ('misbehavior', 'benign', 'invalid', 'refusal', 'error'), True, 'ck_prediction_outcome'),
    ('annotation', 'label', ('misbehavior', 'benign', 'unsure'), False, 'ck_annotation_label'),
    ('adjudication', 'decision', ('accept', 'reject'), False, 'ck_adjudication_decision'),
    ('adjudication', 'gold_label', ('misbehavior', 'benign'), True, 'ck_adjudication_gold_label'),
    ('adjudication', 'split', ('test', 'train'), True, 'ck_adjudication_split'),
    ('annotator', 'role', ('annotator', 'admin'), False, 'ck_annotator_role'),
]


def _allowed(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


def create(bind, rules=RULES) -> None:
    """Add the checks of ``rules`` on the connection ``bind`` (what the upgrade does; a test that plays a
    store written by another version drops and re-adds them). Every column is checked first: a row that
    holds a value outside its list stops the upgrade with ``RuntimeError`` naming the check, table, column
    and count, before any check is added."""
    for table, column, values, nullable, name in rules:
        null = "" if nullable else f" OR {column} IS NULL"
        rows = bind.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {column} NOT IN ({_allowed(values)}){null}").scalar()
        if rows:
            raise RuntimeError(
                f"{name}: {rows} row(s) of {table} hold a {column} outside ({', '.join(values)}); "
                "the store was not upgraded: correct those rows, then open it again"
            )
    if bind.dialect.name == "postgresql":
        for table, column, values, nullable, name in rules:
            ok = f"{column} IN ({_allowed(values)})"
            ok = f"{column} IS NULL OR {ok}" if nullable else ok
            bind.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({ok})")
        return
    for table, column, values, nullable, name in rules:  # SQLite: triggers (no CHECK without a table copy)
        when = f"NEW.{column} NOT IN ({_allowed(values)})"
        when = f"NEW.{column} IS NOT NULL AND {when}" if nullable else f"NEW.{column} IS NULL OR {when}"
        message = f"CHECK constraint failed: {name} ({table}.{column} must be one of {', '.join(values)})"
        for event, suffix in (("INSERT", "ins"), (f"UPDATE OF {column}", "upd")):
            bind.exec_driver_sql(
                f"CREATE TRIGGER {name}_{suffix} BEFORE {event} ON {table} WHEN {when} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )


def drop(bind, rules=RULES) -> None:
    """Remove the checks of ``rules`` on the connection ``bind`` (what the downgrade does)."""
    for table, _column, _values, _nullable, name in reversed(rules):
        if bind.dialect.name == "postgresql":
            bind.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
        else:
            bind.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}_upd")
            bind.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}_ins")


def upgrade() -> None:
    create(op.get_bind())


def downgrade() -> None:
    drop(op.get_bind())
