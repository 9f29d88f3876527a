"""vocabulary columns held by the database (CHECK constraints on PostgreSQL, triggers on SQLite)

A writer that bypasses the core (another process, another version, hand-written SQL) could store a run
status, run kind, prediction outcome, sample label / status / split / category / task / label source,
annotation label, adjudication decision or account role that no reader knows, or a score outside [0, 1]
or a negative sample count: analyses would silently drop, miscount or fail on it. The database now
refuses such a value (the judge cache's outcome excludes ``error``: errors are never cached). PostgreSQL gets named CHECK constraints (as the models declare);
SQLite cannot add a CHECK to an existing table without copying it (which would drop the sample table's
triggers), so it gets a BEFORE INSERT and a BEFORE UPDATE trigger per column that abort with the
constraint's name. The upgrade fails, changing nothing, if a row already holds a value outside the list.

Create Date: 2026-12-04 19:00:00
"""
from alembic import op


revision = 'r8_vocabulary_checks'
down_revision = 'r7_revoked_session'

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
    ('cache_entry', 'outcome', ('misbehavior', 'benign', 'invalid', 'refusal', 'generated'), False, 'ck_cache_entry_outcome'),
    ('annotation', 'label', ('misbehavior', 'benign', 'unsure'), False, 'ck_annotation_label'),
    ('adjudication', 'decision', ('accept', 'reject'), False, 'ck_adjudication_decision'),
    ('adjudication', 'gold_label', ('misbehavior', 'benign'), True, 'ck_adjudication_gold_label'),
    ('adjudication', 'split', ('test', 'train'), True, 'ck_adjudication_split'),
    ('annotator', 'role', ('annotator', 'admin'), False, 'ck_annotator_role'),
]


#: (table, column, condition on ``{c}``, constraint name): number ranges, held the same way
RANGES = [
    ('prediction', 'score', '{c} IS NULL OR ({c} >= 0 AND {c} <= 1)', 'ck_prediction_score'),
    ('cache_entry', 'score', '{c} IS NULL OR ({c} >= 0 AND {c} <= 1)', 'ck_cache_entry_score'),
    ('run', 'n', '{c} >= 0', 'ck_run_n'),
]


def _allowed(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


def create(bind, rules=RULES, ranges=RANGES) -> None:
    """Add the checks of ``rules`` and ``ranges`` on the connection ``bind`` (what the upgrade does; a test
    that plays a store written by another version drops and re-adds them). Every column is checked first:
    a row that holds a value outside its list or range stops the upgrade with ``RuntimeError`` naming the
    check, table, column and count, before any check is added."""
    conditions = [
        (table, column, _one_of("{c}", values, nullable), name, f"one of ({', '.join(values)})")
        for table, column, values, nullable, name in rules
    ] + [(table, column, cond, name, cond.format(c=column)) for table, column, cond, name in ranges]
    for table, column, cond, name, said in conditions:
        ok = cond.format(c=column)
        rows = bind.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE NOT ({ok}) OR ({ok}) IS NULL").scalar()
        if rows:
            raise RuntimeError(
                f"{name}: {rows} row(s) of {table} hold a {column} that is not {said}; "
                "the store was not upgraded: correct those rows, then open it again"
            )
    for table, column, cond, name, said in conditions:
        if bind.dialect.name == "postgresql":
            bind.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({cond.format(c=column)})")
            continue
        # SQLite: triggers (no CHECK without a table copy); "IS NOT 1" also refuses a NULL (unknown) result
        new_ok = cond.format(c=f"NEW.{column}")
        message = f"CHECK constraint failed: {name} ({table}.{column} must be {said})"
        for event, suffix in (("INSERT", "ins"), (f"UPDATE OF {column}", "upd")):
            bind.exec_driver_sql(
                f"CREATE TRIGGER {name}_{suffix} BEFORE {event} ON {table} WHEN ({new_ok}) IS NOT 1 "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )


def _one_of(column, values, nullable) -> str:
    ok = f"{column} IN ({_allowed(values)})"
    return f"{column} IS NULL OR {ok}" if nullable else ok


def drop(bind, rules=RULES, ranges=RANGES) -> None:
    """Remove the checks of ``rules`` and ``ranges`` on the connection ``bind`` (what the downgrade does)."""
    names = [(r[0], r[-1]) for r in rules] + [(r[0], r[-1]) for r in ranges]
    for table, name in reversed(names):
        if bind.dialect.name == "postgresql":
            bind.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
        else:
            bind.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}_upd")
            bind.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}_ins")


def grown(rules, name, value):
    """``(old, new, rules')``: the rule ``name`` of ``rules``, that rule with ``value`` added to its allowed
    values, and ``rules`` with it in the old one's place (what a later revision that widens one
    vocabulary check holds as its ``RULES``)."""
    old = next(r for r in rules if r[-1] == name)
    new = (*old[:2], (*old[2], value), *old[3:])
    return old, new, [new if r is old else r for r in rules]


def replace(bind, old, new) -> None:
    """Swap the check of rule ``old`` for that of rule ``new`` on the connection ``bind`` (:func:`drop`, then
    :func:`create`, which fails, changing nothing, while a row holds a value ``new`` refuses)."""
    drop(bind, rules=[old], ranges=[])
    create(bind, rules=[new], ranges=[])


def widened(rules, name, value):
    """``(rules', upgrade, downgrade)`` of a later revision that widens one vocabulary check: ``rules'`` is
    ``rules`` with ``value`` added to the allowed values of the rule ``name`` (:func:`grown`), ``upgrade``
    swaps that rule's check for the widened one and ``downgrade`` swaps it back (:func:`replace`: the
    downgrade fails, changing nothing, while a row holds ``value``)."""
    old, new, rules = grown(rules, name, value)

    def upgrade() -> None:
        replace(op.get_bind(), old, new)

    def downgrade() -> None:
        replace(op.get_bind(), new, old)

    return rules, upgrade, downgrade


def upgrade() -> None:
    create(op.get_bind())


def downgrade() -> None:
    drop(op.get_bind())
