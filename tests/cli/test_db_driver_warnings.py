"""A PostgreSQL dropped under a command prints ONE line (issue 37, finding 7): psycopg's own warning on the
lost connection ("error ignored terminating <psycopg.Pipeline [BAD]>: the connection is lost", seen with a
server stopped mid-run) no longer reaches stderr next to the CLI's error line; ``--verbose`` keeps it."""

from __future__ import annotations

import logging

from automonitor.cli import logs

LOST = "error ignored terminating <psycopg.Pipeline [BAD] at 0x7f>: the connection is lost"


def test_the_drivers_lost_connection_warning_is_not_a_second_line(capsys):
    try:
        logs.configure("default")
        logging.getLogger("psycopg").warning(LOST)
        logging.getLogger("automonitor.runs").warning("a product warning still shows")
        err = capsys.readouterr().err
        assert LOST not in err and "a product warning still shows" in err
        logs.configure("verbose")
        logging.getLogger("psycopg").warning(LOST)
        assert LOST in capsys.readouterr().err
    finally:
        logs.configure("default")
        logging.getLogger("psycopg").setLevel(logging.NOTSET)
