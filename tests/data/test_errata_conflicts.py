"""Conflicting errata (issue 37): two readers who disagree on one pair are no longer both "recorded" silently.

The declared rule (:mod:`automonitor.data.errata`, :func:`~automonitor.data.errata.current`): a reader's later
erratum replaces their earlier one; between readers the strictest verdict is in force (``wrong`` over
``doubtful``), whichever was entered first. ``errata add`` warns naming the other reader's verdict and the
pair, ``errata list`` shows the conflict (JSON ``conflicts``, a column and a warning), ``stats`` counts the
verdict in force."""

from __future__ import annotations

import json

import pytest

from automonitor.data.errata import (
    conflicts,
    current,
    errata_counts,
    make_erratum,
    other_readings,
)

from helpers import run_cli

PAIR = "xstest:v2-7"


def _e(verdict: str, reader: str, reason: str = "r", date: str = "2026-12-01", pair: str = PAIR):
    return make_erratum(pair, verdict, reason, reader, date=date)


@pytest.mark.parametrize("order", ["wrong first", "doubtful first"])
def test_between_readers_the_strictest_verdict_is_in_force_whatever_the_order(order):
    wrong, doubtful = _e("wrong", "alice", "unsafe side is safe"), _e("doubtful", "bob", "unclear")
    errata = [wrong, doubtful] if order == "wrong first" else [doubtful, wrong]
    cur = current(errata)
    assert cur[PAIR] == wrong  # the strictest wins: a later 'doubtful' does not soften a 'wrong'
    assert conflicts(errata) == {PAIR: [doubtful]}
    assert errata_counts(errata)["wrong"] == 1 and errata_counts(errata)["doubtful"] == 0
    assert other_readings(errata, PAIR, "bob") == [wrong] and other_readings(errata, PAIR, "alice") == [doubtful]


def test_a_readers_rereading_replaces_their_own_and_agreement_is_no_conflict():
    first, second = _e("wrong", "alice", "first"), _e("doubtful", "alice", "read again", "2026-12-02")
    assert current([first, second])[PAIR] == second and conflicts([first, second]) == {}  # a re-reading
    # alice now says doubtful: bob's doubtful agrees (no conflict); the latest of the verdict in force is shown
    bob = _e("doubtful", "bob", "agree", "2026-12-03")
    assert current([first, second, bob])[PAIR] == bob and conflicts([first, second, bob]) == {}
    # carol says wrong: wrong is in force, alice's and bob's doubtful are its conflicts (oldest first)
    carol = _e("wrong", "carol", "wrong indeed", "2026-12-04")
    errata = [first, second, bob, carol]
    assert current(errata)[PAIR] == carol and conflicts(errata) == {PAIR: [second, bob]}
    # other pairs are untouched
    other = _e("doubtful", "bob", pair="xstest:v2-8")
    assert current([*errata, other])["xstest:v2-8"] == other and "xstest:v2-8" not in conflicts([*errata, other])


def test_cli_warns_on_a_conflicting_second_report_and_list_shows_it(engine, db_url, tmp_path):
    env = {"AUTOMONITOR_ERRATA": str(tmp_path / "none.jsonl")}
    first = run_cli(
        ["errata", "add", PAIR, "--verdict", "wrong", "--reason", "benign side is unsafe", "--reader", "alice"],
        db=db_url,
        env=env,
    )
    assert first.returncode == 0 and "conflicting" not in first.stderr, first.stderr
    same = run_cli(  # another reader agreeing is no conflict
        ["errata", "add", PAIR, "--verdict", "wrong", "--reason", "agreed", "--reader", "dan"], db=db_url, env=env
    )
    assert same.returncode == 0 and "conflicting" not in same.stderr, same.stderr
    second = run_cli(
        ["errata", "add", PAIR, "--verdict", "doubtful", "--reason", "maybe fine", "--reader", "bob"],
        db=db_url,
        env=env,
    )
    assert second.returncode == 0, second.stderr
    (line,) = [x for x in second.stderr.splitlines() if x.startswith("warning: conflicting")]
    assert f"pair {PAIR}" in line and "bob says doubtful" in line and "alice said wrong" in line
    assert "dan said wrong" in line and "in force: wrong" in line and "strictest" in line
    assert "erratum recorded" in second.stdout  # recorded anyway: both readings are kept

    listed = run_cli(["errata", "list", "--json"], db=db_url, env=env)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["errata"]
    assert (row["pair_id"], row["verdict"], row["reader"]) == (PAIR, "wrong", "dan")  # latest of the strictest
    assert [(c["reader"], c["verdict"], c["reason"]) for c in row["conflicts"]] == [("bob", "doubtful", "maybe fine")]
    table = run_cli(["errata", "list"], db=db_url, env=env)
    assert table.returncode == 0 and "bob: doubtful" in table.stdout, table.stdout
    assert any(x.startswith(f"warning: conflicting errata on pair {PAIR}") for x in table.stderr.splitlines())

    stats = run_cli(["stats", "--json"], db=db_url, env=env)
    assert json.loads(stats.stdout)["errata"]["wrong"] == 1 and json.loads(stats.stdout)["errata"]["doubtful"] == 0
