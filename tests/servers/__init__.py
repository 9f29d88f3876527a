"""Loopback servers and fixture data used by the monitor-run tests (never mocks of our own code)."""
