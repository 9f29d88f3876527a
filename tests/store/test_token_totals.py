"""A run's token totals are sums over its predictions, each below 2**31 (a judge's per-call count is held to
[0, 2**31)): the ``run`` columns hold sums past 2**31 - 1 (BIGINT on PostgreSQL, migration
r13_run_token_totals_bigint; SQLite's INTEGER is 64-bit already), so a run whose calls came near the cap
finishes with its totals instead of failing its final write (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import select

from automonitor.runs.status import finalize, run_info
from store import init_db, session_scope
from store.models import Monitor, Prediction, Run, Sample
from store.queries.generation import save_progress

from helpers import store_sample

CAP = 2**31 - 1  # the most tokens one call may report
BEFORE = "r12_monitor_name_unique"
HEAD = "r15_account_login_event"  # the newest revision: init_db upgrades to it


def _run_with_capped_predictions(engine, run_id: str, n: int) -> None:
    """A running run of ``n`` judged predictions, each with ``CAP`` tokens in and ``CAP - 1`` out."""
    with session_scope(engine) as s:
        if s.get(Sample, "s0") is None:
            s.add_all([store_sample(i) for i in range(3)])
        m = s.exec(select(Monitor).where(Monitor.name == "judge")).first()
        if m is None:
            m = Monitor(name="judge", backend="external")
            s.add(m)
            s.flush()
        s.add(Run(id=run_id, monitor_id=m.id, monitor="judge", template="direct", status="running", n=n))
        s.flush()
        for i in range(n):
            s.add(
                Prediction(
                    run_id=run_id,
                    sample_id=f"s{i}",
                    outcome="benign",
                    score=0.1,
                    tokens_in=CAP,
                    tokens_out=CAP - 1,
                    cost_usd=0.5,
                )
            )


def _version(engine) -> str:
    with engine.connect() as c:
        return c.execute(sa.text("select version_num from alembic_version")).scalar()


@pytest.mark.parametrize("n", [2, 3])
def test_a_run_whose_predictions_carry_the_per_call_cap_finishes_with_the_right_totals(engine, n):
    _run_with_capped_predictions(engine, "r-big", n)
    finalize(engine, "r-big", cancelled=False)
    with session_scope(engine) as s:
        run = s.get(Run, "r-big")
        assert run is not None
        assert (run.status, run.error) == ("finished", None)
        assert (run.tokens_in, run.tokens_out, run.cost_usd) == (n * CAP, n * (CAP - 1), 0.5 * n)
        assert n * CAP > CAP
    with engine.connect() as c:  # the stored values themselves, read past the model
        assert c.execute(sa.text("select tokens_in, tokens_out from run where id = 'r-big'")).one() == (
            n * CAP,
            n * (CAP - 1),
        )
    info = run_info(engine, "r-big")
    assert (info["tokens_in"], info["tokens_out"]) == (n * CAP, n * (CAP - 1))


def test_a_generation_runs_call_totals_past_2_31_are_stored(engine):
    """A generation run's columns hold the sums over its calls (``save_progress``)."""
    with session_scope(engine) as s:
        m = Monitor(name="gen", backend="external")
        s.add(m)
        s.flush()
        s.add(Run(id="g1", monitor_id=m.id, monitor="gen", template="gen", kind="generation", status="running"))
    stats = {
        "prompts": 3,
        "kept": 3,
        "dropped": {},
        "candidates_added": 0,
        "calls": 3,
        "cache_hits": 0,
        "tokens_in": 3 * CAP,
        "tokens_out": 2 * CAP,
        "cost_usd": 1.0,
    }
    with session_scope(engine) as s:
        save_progress(s, "g1", stats, [], 3, 3)  # type: ignore[arg-type]
    with session_scope(engine) as s:
        run = s.get(Run, "g1")
        assert run is not None and (run.tokens_in, run.tokens_out) == (3 * CAP, 2 * CAP)


def test_the_upgrade_keeps_a_stores_runs_and_widens_the_totals_and_the_downgrade_refuses_wide_ones(engine):
    """From r12 on a store with data: the upgrade keeps every run's totals and then takes sums past 2**31 - 1
    (PostgreSQL: the columns become BIGINT). The downgrade refuses, changing nothing and naming the run, while a
    total does not fit INTEGER; once it fits, it goes through and the upgrade after it again (SQLite: the
    columns were 64-bit all along, and both steps change nothing)."""
    from alembic import command

    from store.engine import alembic_config, head_revisions

    pg = engine.dialect.name == "postgresql"
    assert head_revisions() == (HEAD,)
    cfg = alembic_config(engine)
    command.downgrade(cfg, BEFORE)
    assert _version(engine) == BEFORE
    with session_scope(engine) as s:
        s.add_all([store_sample(i) for i in range(3)])
        m = Monitor(name="judge", backend="external")
        s.add(m)
        s.flush()
        s.add(
            Run(
                id="old",
                monitor_id=m.id,
                monitor="judge",
                template="direct",
                status="finished",
                tokens_in=CAP,
                tokens_out=7,
            )
        )
        s.flush()
        s.add(Prediction(run_id="old", sample_id="s0", outcome="benign", tokens_in=CAP, tokens_out=7))
    if pg:  # before r13 a total past INTEGER's range is refused: the fault this migration fixes
        with pytest.raises(sa.exc.DBAPIError, match="out of range"):
            with engine.begin() as c:
                c.execute(sa.text("update run set tokens_in = :v where id = 'old'"), {"v": CAP + 1})
    init_db(engine)
    assert _version(engine) == HEAD
    cols = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns("run")}
    for name in ("tokens_in", "tokens_out"):
        assert isinstance(cols[name], sa.BigInteger if pg else sa.Integer), (name, cols[name])
    with engine.connect() as c:
        assert c.execute(sa.text("select tokens_in, tokens_out from run where id = 'old'")).one() == (CAP, 7)
    _run_with_capped_predictions(engine, "new", 2)
    finalize(engine, "new", cancelled=False)
    with engine.connect() as c:
        assert c.execute(sa.text("select status, tokens_in from run where id = 'new'")).one() == ("finished", 2 * CAP)

    if pg:
        with pytest.raises(RuntimeError, match="token total of 2\\*\\*31 or more: new"):
            command.downgrade(cfg, BEFORE)
        assert _version(engine) == HEAD
        with engine.connect() as c:
            assert c.execute(sa.text("select tokens_in from run where id = 'new'")).scalar() == 2 * CAP
        with engine.begin() as c:
            c.execute(sa.text("update run set tokens_in = 0, tokens_out = 0 where id = 'new'"))
    command.downgrade(cfg, BEFORE)
    assert _version(engine) == BEFORE
    with engine.connect() as c:
        assert c.execute(sa.text("select tokens_in, tokens_out from run where id = 'old'")).one() == (CAP, 7)
    init_db(engine)
    assert _version(engine) == HEAD
