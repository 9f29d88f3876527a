"""Developer helper: ``python -m store.revision "message"`` autogenerates a migration against a scratch
SQLite database upgraded to head. Review the generated file before committing."""

import sys
import tempfile

from alembic import command

from store.engine import alembic_config, get_engine, init_db

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        engine = get_engine(f"sqlite:///{d}/scratch.db", fresh=True)
        init_db(engine)
        command.revision(alembic_config(engine), message=sys.argv[1], autogenerate=True)
