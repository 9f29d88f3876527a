"""A worker process for the race tests (``python tests/race_worker.py OP URL START [ARGS...]``).

It imports everything and opens its store connection first, waits until the wall-clock time START
(seconds since the epoch) so that two workers really start together, then runs one operation through
the core API and prints one JSON document on stdout:

* ``finalize``: :func:`automonitor.annotation.finalize_pairs` as the CLI's admin -> its ``to_json()``;
* ``adjudicate ADMIN SAMPLE_ID...``: ``reject`` each item as account ADMIN ->
  ``{"ok": [ids], "refused": {id: message}}``;
* ``save ANNOTATOR LABEL SAMPLE_ID...``: save LABEL on each item as ANNOTATOR ->
  ``{"ok": [ids], "refused": {id: message}}``;
* ``hold ANNOTATOR_ID LABEL SECONDS SAMPLE_ID...`` (START ignored): write what ``annotations import``
  writes (the annotator's submitted LABEL on each item, assignments marked submitted) in one
  transaction, print ``held`` once written, keep the transaction open SECONDS, then commit: a
  concurrent writer that has read the items before is caught in the middle.
"""

from __future__ import annotations

import json
import sys
import time

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM, get_account
from automonitor.errors import InputError
from store import get_engine, session_scope
from store.models import utcnow
from store.queries import annotation as store
from store.queries.locks import begin_write


def hold(eng, annotator_id: int, label: str, seconds: float, items: list[str]) -> dict:
    """The ``hold`` operation (module doc)."""
    with session_scope(eng) as s:
        begin_write(s)
        now = utcnow()
        for sid in items:
            store.upsert_label(
                s,
                {"annotator_id": annotator_id, "sample_id": sid, "label": label, "note": "import", "submitted_at": now},
            )
        store.mark_submitted(s, annotator_id, items, now)
        s.flush()
        print("held", flush=True)
        time.sleep(seconds)
    return {"committed": len(items)}


def main(argv: list[str]) -> int:
    op, url, start, args = argv[0], argv[1], float(argv[2]), argv[3:]
    eng = get_engine(url)
    with eng.connect():
        pass
    if op == "hold":
        print(json.dumps(hold(eng, int(args[0]), args[1], float(args[2]), args[3:])))
        return 0
    actor = get_account(eng, SYSTEM, args[0]) if op in ("adjudicate", "save") else SYSTEM
    while time.time() < start:
        time.sleep(0.0005)
    if op == "finalize":
        out: dict = ann.finalize_pairs(eng, SYSTEM).to_json()
    elif op in ("adjudicate", "save"):
        ok: list[str] = []
        refused: dict[str, str] = {}
        items = args[1:] if op == "adjudicate" else args[2:]
        for sid in items:
            try:
                if op == "adjudicate":
                    ann.adjudicate(eng, actor, sid, "reject", note="race: rejected")
                else:
                    ann.save_label(eng, actor, sid, args[1], note="race: saved")
                ok.append(sid)
            except InputError as exc:
                refused[sid] = str(exc)
        out = {"ok": ok, "refused": refused}
    else:
        raise SystemExit(f"unknown op {op}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
