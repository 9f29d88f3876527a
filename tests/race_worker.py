"""A worker process for the race tests (``python tests/race_worker.py OP URL START [ARGS...]``).

It imports everything and opens its store connection first, waits until the wall-clock time START
(seconds since the epoch) so that two workers really start together, then runs one operation through
the core API and prints one JSON document on stdout. START ``-``: print ``ready`` once imported and
connected, then read START from a line on stdin (the caller sends it when every worker is ready):

* ``finalize``: :func:`automonitor.annotation.finalize_pairs` as the CLI's admin -> its ``to_json()``;
* ``adjudicate ADMIN SAMPLE_ID...``: ``reject`` each item as account ADMIN ->
  ``{"ok": [ids], "refused": {id: message}}``;
* ``save ANNOTATOR LABEL SAMPLE_ID...``: save LABEL on each item as ANNOTATOR ->
  ``{"ok": [ids], "refused": {id: message}}``;
* ``errata-write N`` (START: go time): record N errata through the core, each with a long reason
  holding U+2028 and U+0085 -> ``{"written": N}``;
* ``errata-read SECONDS N``: print ``reading`` after a first read, then read the errata in force (shipped
  none: ``$AUTOMONITOR_ERRATA`` names an empty file) again and again until N are there or SECONDS
  passed -> ``{"reads": n, "counts": [n0, n1, ...] (distinct, in order), "bad": [message, ...]}``: a
  read that fails or returns an erratum not written whole is ``bad``;
* ``hold ANNOTATOR_ID LABEL SECONDS SAMPLE_ID...`` (START ignored): write what ``annotations import``
  writes (the annotator's submitted LABEL on each item, assignments marked submitted) in one
  transaction, print ``held`` once written, keep the transaction open SECONDS (``-``: until a line
  arrives on stdin, the caller's word that its other writer is waiting), then commit: a concurrent
  writer that has read the items before is caught in the middle.

``python tests/race_worker.py serve``: the same operations (all but ``hold``), one after another in one
process, so that a test module's races pay for the interpreter and its imports once (about 1 s of CPU a
process) instead of twice a race. Each line on stdin is one JSON list ``[OP, URL, ARG...]``; the worker opens
a new engine on URL, connects, prints ``ready``, reads START from the next line, runs the operation as above,
prints its JSON document on one line (``{"error": traceback}`` when it raised) and disposes of the engine (no
connection outlives the operation). It ends at the end of stdin.
"""

from __future__ import annotations

import json
import sys
import time

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from automonitor.errors import InputError
from store import get_engine, session_scope
from store.models import utcnow
from store.queries import annotation as store
from store.queries.locks import begin_write
from helpers import account_named


def hold(eng, annotator_id: int, label: str, seconds: str, items: list[str]) -> dict:
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
        if seconds == "-":
            sys.stdin.readline()
        else:
            time.sleep(float(seconds))
    return {"committed": len(items)}


ERRATUM_REASON = "line one\u2028line two\u0085and \x1b[31m red " * 20


def errata_op(eng, op: str, args: list[str]) -> dict:
    """The ``errata-write`` / ``errata-read`` operations (module doc)."""
    from automonitor.data.errata import add_erratum, errata_in_force

    if op == "errata-write":
        n = int(args[0])
        for i in range(n):
            add_erratum(eng, f"race:{i:04d}", "wrong" if i % 2 else "doubtful", f"{i} {ERRATUM_REASON}", "racer")
        return {"written": n}
    end, want = time.time() + float(args[0]), int(args[1])
    counts: list[int] = []
    bad: list[str] = []
    reads = 0
    while time.time() < end and (not counts or counts[-1] < want):
        try:
            with session_scope(eng) as s:
                errata = errata_in_force(s)
        except Exception as exc:  # noqa: BLE001 - any failed read is reported
            bad.append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        reads += 1
        for e in errata:
            if not e.reason.endswith(ERRATUM_REASON.strip()) or e.pair_id != f"race:{int(e.reason.split()[0]):04d}":
                bad.append(f"torn erratum {e.pair_id}")
        if not counts or counts[-1] != len(errata):
            counts.append(len(errata))
        if reads == 1:
            print("reading", flush=True)
    return {"reads": reads, "counts": counts, "bad": bad[:5]}


def main(argv: list[str]) -> int:
    if argv == ["serve"]:
        return serve()
    op, url, args = argv[0], argv[1], argv[3:]
    eng = get_engine(url)
    with eng.connect():
        pass
    if argv[2] == "-":  # START from stdin: say "ready" (imported, connected), then read it
        print("ready", flush=True)
        start = float(sys.stdin.readline())
    else:
        start = float(argv[2])
    if op == "hold":
        print(json.dumps(hold(eng, int(args[0]), args[1], args[2], args[3:])))
        return 0
    print(json.dumps(run_op(eng, op, args, start)))
    return 0


def serve() -> int:
    """The ``serve`` mode (module doc): operations read from stdin one after another, each on a new engine."""
    import traceback

    while line := sys.stdin.readline():
        op, url, *args = json.loads(line)
        eng = get_engine(url, fresh=True)
        try:
            with eng.connect():
                pass
            print("ready", flush=True)
            start = float(sys.stdin.readline())
            out = run_op(eng, op, args, start)
        except Exception:  # noqa: BLE001 - reported to the caller, which fails the test with it
            out = {"error": traceback.format_exc()}
        finally:
            eng.dispose()
        print(json.dumps(out), flush=True)
    return 0


def run_op(eng, op: str, args: list[str], start: float) -> dict:
    """Run operation ``op`` (not ``hold``) with ``args`` on ``eng`` at wall-clock time ``start``; its JSON
    document."""
    if op.startswith("errata-"):
        while time.time() < start:
            time.sleep(0.0005)
        return errata_op(eng, op, args)
    actor = account_named(eng, args[0]) if op in ("adjudicate", "save") else SYSTEM
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
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
