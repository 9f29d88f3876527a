"""``app.py``'s page runs freeze the heap once (``pages/_ui/nav.settled_heap``): at the start of the first run
after a full collection that followed an earlier run (a server's ``runner.postScriptGC``), never without one (an
``AppTest`` run), and only once; what later runs leave in cycles is still collected."""

from __future__ import annotations

import subprocess
import sys

from apptest_support import REPO

CODE = """
import gc, weakref
from pages._ui import nav

def run():
    with nav.settled_heap():
        pass

run(); first = gc.get_freeze_count()
run(); no_collection = gc.get_freeze_count()  # no full collection since the last run: nothing frozen
gc.collect(2)  # what Streamlit does after each run
run(); frozen = gc.get_freeze_count()

class Node:
    pass

a = Node(); a.me = a; alive = weakref.ref(a); del a  # a cycle left by a later run
gc.collect(2)
run(); again = gc.get_freeze_count()
print(first, no_collection, frozen > 0, again == frozen, alive() is None)
"""


def test_the_heap_is_frozen_once_after_a_full_collection():
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.split()
    assert out == ["0", "0", "True", "True", "True"]
