"""Alembic environment: runs migrations on the engine handed over by ``store.engine.init_db``.

SQLite: the migrations run with foreign keys off, as SQLite's procedure for schema changes says
(https://www.sqlite.org/lang_altertable.html#otheralter). A revision that rebuilds a table in batch mode (a copy,
``DROP TABLE`` of the old one, a rename) would otherwise fail on a store with data: with foreign keys on, the drop
deletes every row first, and the rows that reference them (predictions, annotations, edition rows) stop it. Before
the transaction ends, ``PRAGMA foreign_key_check`` must find no row that references a missing one, else the
migration fails naming them; foreign keys are switched on again on the connection whatever happened.
"""

from alembic import context
from sqlmodel import SQLModel

import store.models  # noqa: F401  (registers the tables)
from store.models import schema_objects_of

config = context.config
target_metadata = SQLModel.metadata


def _check_foreign_keys(connection) -> None:
    """``RuntimeError`` naming the rows (up to 5) that reference a missing row, when any does (SQLite)."""
    bad = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if bad:
        said = "; ".join(f"{t} row {rowid} -> {parent}" for t, rowid, parent, _fk in bad[:5])
        raise RuntimeError(f"the migration would leave {len(bad)} row(s) referencing a missing row: {said}")


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from sqlalchemy import create_engine

        engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:  # only outside a transaction does the pragma take effect
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                include_object=schema_objects_of(connection.dialect.name),  # a SQLite-only index is not PostgreSQL's
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    _check_foreign_keys(connection)
            connection.commit()
        finally:
            if sqlite:
                connection.rollback()
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
