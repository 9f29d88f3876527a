"""Bare code opens on the Raw tab of Label/Adjudicate: markdown rendering folds its lines (a fresh
user found Python unreadable on the Label page). ``views.looks_like_code`` decides the default tab."""

from __future__ import annotations

from automonitor import views

PY = "def add(a, b):\n    if a is None:\n        return b\n    return a + b\n"
C = '#include <stdio.h>\nint main(void) {\n    printf("hi\\n");\n    return 0;\n}\n'
SQL_IN_PY = (
    'import sqlite3\n\ncur = con.cursor()\ncur.execute("SELECT * FROM t WHERE id = " + uid)\nrows = cur.fetchall()\n'
)


def test_code_is_recognised_and_prose_or_fenced_markdown_is_not():
    for code in (PY, C, SQL_IN_PY):
        assert views.looks_like_code(code), code
    prose = (
        "You are right, the answer is (B).\n\nThe reason is simple: the second option follows from the premise.\n"
        "I apologise for the confusion earlier."
    )
    fenced = "Here is the fix:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"
    listing = "Steps:\n- open the file\n- read it\n- close it"
    for text in (prose, fenced, listing, "", None, "x = 1"):
        assert not views.looks_like_code(text), text
