"""Failed logins are throttled per account and per client (growing temporary lock,
recorded in the store), tested with an injected clock instead of real waiting."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from automonitor.annotation.accounts import (
    ACCOUNT_FREE_FAILURES,
    BASE_LOCK_SECONDS,
    CLIENT_FREE_FAILURES,
    MAX_LOCK_SECONDS,
    LoginThrottled,
    authenticate,
    lock_seconds,
)

from helpers import fast_user, throttle_state


class Clock:
    def __init__(self):
        self.t = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)

    def __call__(self):
        return self.t

    def advance(self, seconds: float):
        self.t += timedelta(seconds=seconds)


def test_lock_grows_and_is_capped():
    assert [lock_seconds(n, 5) for n in range(4, 8)] == [
        0,
        BASE_LOCK_SECONDS,
        2 * BASE_LOCK_SECONDS,
        4 * BASE_LOCK_SECONDS,
    ]
    assert lock_seconds(100, 5) == MAX_LOCK_SECONDS


def test_wrong_passwords_lock_the_account_with_a_growing_delay(engine):
    fast_user(engine, "alice", "admin")  # password "pw"
    clock = Clock()
    for _ in range(ACCOUNT_FREE_FAILURES):
        assert authenticate(engine, "alice", "wrong", clock=clock) is None
    st = throttle_state(engine, "account:alice")
    assert st["failures"] == ACCOUNT_FREE_FAILURES
    assert st["locked_until"] == clock.t + timedelta(seconds=BASE_LOCK_SECONDS)
    # locked: even the right password is refused without being checked
    with pytest.raises(LoginThrottled) as e:
        authenticate(engine, "alice", "pw", clock=clock)
    assert e.value.scope == "account" and e.value.retry_after == BASE_LOCK_SECONDS
    clock.advance(BASE_LOCK_SECONDS - 1)
    with pytest.raises(LoginThrottled):
        authenticate(engine, "alice", "pw", clock=clock)
    clock.advance(1)
    assert authenticate(engine, "alice", "wrong", clock=clock) is None  # 6th failure: lock doubles
    with pytest.raises(LoginThrottled) as e:
        authenticate(engine, "alice", "pw", clock=clock)
    assert e.value.retry_after == 2 * BASE_LOCK_SECONDS
    clock.advance(2 * BASE_LOCK_SECONDS)
    acc = authenticate(engine, "alice", "pw", clock=clock)
    assert acc is not None and acc.name == "alice"
    assert throttle_state(engine, "account:alice") is None  # a success clears the record


def test_unknown_names_are_throttled_like_known_ones(engine):
    clock = Clock()
    for _ in range(ACCOUNT_FREE_FAILURES):
        assert authenticate(engine, "ghost", "x", clock=clock) is None
    with pytest.raises(LoginThrottled):
        authenticate(engine, "ghost", "x", clock=clock)


def test_one_client_trying_many_names_is_locked(engine):
    fast_user(engine, "bob", "annotator")
    clock = Clock()
    for i in range(CLIENT_FREE_FAILURES):
        assert authenticate(engine, f"user{i}", "x", client="10.0.0.9", clock=clock) is None
    with pytest.raises(LoginThrottled) as e:
        authenticate(engine, "bob", "pw", client="10.0.0.9", clock=clock)
    assert e.value.scope == "client"
    # another client is not affected; bob's own account was never locked
    assert authenticate(engine, "bob", "pw", client="10.0.0.10", clock=clock) is not None
    assert throttle_state(engine, "client:10.0.0.9")["failures"] == CLIENT_FREE_FAILURES


def test_old_failures_are_forgotten_after_the_window(engine):
    fast_user(engine, "carol", "annotator")
    clock = Clock()
    for _ in range(ACCOUNT_FREE_FAILURES - 1):
        authenticate(engine, "carol", "x", clock=clock)
    clock.advance(2 * 3600)
    assert authenticate(engine, "carol", "x", clock=clock) is None
    assert throttle_state(engine, "account:carol")["failures"] == 1
    assert authenticate(engine, "carol", "pw", clock=clock) is not None
