"""an edition holds gold samples only (database triggers)

Two finalizers racing could leave samples ``rejected`` yet members of ``verified``. The database now
refuses (a) an ``edition_sample`` row for a sample that is not ``gold`` and (b) a ``sample`` status
change away from ``gold`` while the sample is a member of an edition (the membership must be dropped
first, as the build does). The upgrade first drops the memberships such a race left behind.

Create Date: 2026-12-01 20:40:00
"""
from alembic import op


revision = 'r3_concurrency'
down_revision = 'r3_spans'

MESSAGE = "an edition holds gold samples only"


def upgrade() -> None:
    op.execute(
        "DELETE FROM edition_sample WHERE sample_id IN "
        "(SELECT id FROM sample WHERE status <> 'gold')"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
            CREATE FUNCTION am_edition_gold_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_TABLE_NAME = 'edition_sample' THEN
                    IF NOT EXISTS (SELECT 1 FROM sample WHERE id = NEW.sample_id AND status = 'gold') THEN
                        RAISE EXCEPTION '{MESSAGE}: sample % is not gold', NEW.sample_id
                            USING ERRCODE = 'check_violation';
                    END IF;
                ELSIF NEW.status <> 'gold' AND EXISTS (SELECT 1 FROM edition_sample WHERE sample_id = NEW.id) THEN
                    RAISE EXCEPTION '{MESSAGE}: sample % is an edition member', NEW.id
                        USING ERRCODE = 'check_violation';
                END IF;
                RETURN NEW;
            END $$;
        """)
        op.execute(
            "CREATE TRIGGER trg_edition_sample_gold BEFORE INSERT OR UPDATE ON edition_sample "
            "FOR EACH ROW EXECUTE FUNCTION am_edition_gold_only()"
        )
        op.execute(
            "CREATE TRIGGER trg_sample_edition_gold BEFORE UPDATE OF status ON sample "
            "FOR EACH ROW EXECUTE FUNCTION am_edition_gold_only()"
        )
    else:
        op.execute(f"""
            CREATE TRIGGER trg_edition_sample_gold BEFORE INSERT ON edition_sample
            WHEN (SELECT status FROM sample WHERE id = NEW.sample_id) IS NOT 'gold'
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: the sample is not gold'); END
        """)
        op.execute(f"""
            CREATE TRIGGER trg_edition_sample_gold_upd BEFORE UPDATE ON edition_sample
            WHEN (SELECT status FROM sample WHERE id = NEW.sample_id) IS NOT 'gold'
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: the sample is not gold'); END
        """)
        op.execute(f"""
            CREATE TRIGGER trg_sample_edition_gold BEFORE UPDATE OF status ON sample
            WHEN NEW.status <> 'gold' AND EXISTS (SELECT 1 FROM edition_sample WHERE sample_id = NEW.id)
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: the sample is an edition member'); END
        """)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS trg_sample_edition_gold ON sample")
        op.execute("DROP TRIGGER IF EXISTS trg_edition_sample_gold ON edition_sample")
        op.execute("DROP FUNCTION IF EXISTS am_edition_gold_only()")
    else:
        op.execute("DROP TRIGGER IF EXISTS trg_sample_edition_gold")
        op.execute("DROP TRIGGER IF EXISTS trg_edition_sample_gold_upd")
        op.execute("DROP TRIGGER IF EXISTS trg_edition_sample_gold")
