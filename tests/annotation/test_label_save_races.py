"""A label save or import never silently changes nothing. A save racing a writer that submits the
item (``annotations import``, the annotator's own batch submit in another tab) raises
:class:`ChangedElsewhere` and the stored label stays the other writer's; an import caught the same
way re-reads and refuses the locked labels (exit 2), never reports them written; two REAL processes
(tests/race_worker.py), SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.errors import ChangedElsewhere, InputError
from store import session_scope
from store.models import Annotation
from store.queries.samples import insert_samples

from helpers import PG_ADMIN_URL, REPO, account_named, candidate_row, fast_user

WORKER = Path(__file__).resolve().parents[1] / "race_worker.py"


@pytest.fixture
def queue(engine):
    a = fast_user(engine, "ann", "annotator")
    admin = fast_user(engine, "boss", "admin")
    rows = [
        candidate_row(
            id=f"q{p}{lab[0]}",
            pair_id=f"q{p}",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request=f"Question {p}",
            response=f"{lab} answer {p}",
        )
        for p in range(3)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, admin, k=1, seed=2)
    items = [q.sample_id for q in ann.my_queue(engine, a)]
    for sid in items:
        ann.save_label(engine, a, sid, "misbehavior", note="draft")
    return engine, a, items


def _stored(engine, items):
    with engine.connect() as c:
        return {
            r.sample_id: (r.label, r.note, r.submitted_at is not None)
            for r in c.execute(sa.select(Annotation).where(Annotation.sample_id.in_(items)))
        }


def _worker(db_url, *args, start: str | None = None):
    """A race worker process (stdin a pipe); ``start="-"``: it says ``ready`` and waits for its start time."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), args[0], db_url, start or str(time.time()), *args[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _holder(db_url, annotator_id: int, items):
    """A worker that writes what an import writes (the annotator's submitted ``benign`` on each item) in one
    transaction and keeps it open until :func:`_release` (it has printed ``held``)."""
    return _worker(db_url, "hold", str(annotator_id), "benign", "-", *items)


def _release(holder, db_url: str) -> None:
    """Commit the holder's transaction once the other writer waits for it: on PostgreSQL once a session of
    the store's database waits on a lock (the other writer's ``SELECT ... FOR UPDATE`` of an item the holder
    wrote); SQLite shows no waiter from outside (its busy handler sleeps inside the process), so there the
    other writer, started already, gets half a second to reach its ``BEGIN IMMEDIATE``."""
    url = sa.engine.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        time.sleep(0.5)
    else:
        admin = sa.create_engine(PG_ADMIN_URL)
        try:
            deadline = time.monotonic() + 60
            while True:
                with admin.connect() as c:
                    waiting = c.execute(
                        sa.text(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND wait_event_type = 'Lock'"
                        ),
                        {"db": url.database},
                    ).scalar()
                if waiting or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        finally:
            admin.dispose()
    holder.stdin.write("commit\n")
    holder.stdin.flush()


def test_a_save_caught_behind_a_submitting_writer_raises_and_keeps_the_stored_label(queue, db_url):
    engine, a, items = queue
    holder = _holder(db_url, a.id, items)
    saver = _worker(db_url, "save", a.name, "unsure", *items, start="-")  # both start up at once
    assert holder.stdout.readline().strip() == "held", holder.stderr.read()[-2000:]
    assert saver.stdout.readline().strip() == "ready", saver.stderr.read()[-2000:]
    saver.stdin.write(f"{time.time()}\n")  # go: it reads the items while the import is open
    saver.stdin.flush()
    _release(holder, db_url)
    out, err = saver.communicate(timeout=120)
    assert saver.returncode == 0, err[-2000:]
    hold_out, hold_err = holder.communicate(timeout=60)
    assert holder.returncode == 0, hold_err[-2000:]
    res = json.loads(out)
    assert res["ok"] == [], res  # no save "succeeded" without saving
    assert set(res["refused"]) == set(items)
    stored = _stored(engine, items)
    assert stored == {sid: ("benign", "import", True) for sid in items}  # the import's labels, untouched


def test_a_save_that_updates_no_row_raises_changed_elsewhere(queue):
    engine, a, items = queue
    with session_scope(engine) as s:  # the label was submitted elsewhere; the assignment still reads open
        s.execute(
            sa.update(Annotation).where(Annotation.sample_id == items[0]).values(label="benign", note="other tab")
        )
        s.execute(
            sa.update(Annotation)
            .where(Annotation.sample_id == items[0])
            .values(submitted_at=sa.func.current_timestamp())
        )
    with pytest.raises(ChangedElsewhere, match="changed elsewhere.*stored label is 'benign'"):
        ann.save_label(engine, a, items[0], "misbehavior", note="mine")
    assert _stored(engine, items[:1])[items[0]][:2] == ("benign", "other tab")


def test_save_on_a_submitted_batch_raises_changed_elsewhere(queue):
    engine, a, items = queue
    ann.submit_batch(engine, a)
    with pytest.raises(ChangedElsewhere, match="submitted batch"):
        ann.save_label(engine, a, items[0], "benign")


def _import_file(tmp_path, annotator, items, label):
    path = tmp_path / f"labels-{label}.jsonl"
    rows = [{"annotator": annotator, "sample_id": sid, "label": label, "note": "second file"} for sid in items]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_import_caught_behind_a_submitting_writer_is_refused_not_reported_written(queue, db_url, tmp_path):
    """Two ``annotations import`` of different labels for the same locked items at once: the one that
    read the items before the other committed must not report its labels written (they were not); it
    re-reads and refuses them as locked, naming file, line and field."""
    engine, a, items = queue
    admin = account_named(engine, "boss")
    holder = _holder(db_url, a.id, items)
    assert holder.stdout.readline().strip() == "held", holder.stderr.read()[-2000:]
    path = _import_file(tmp_path, a.name, items, "misbehavior")
    release = threading.Thread(target=_release, args=(holder, db_url))  # the import below waits for the holder
    release.start()
    try:
        with pytest.raises(InputError, match="already submitted and locked") as err:
            ann.import_annotations(engine, admin, path)
    finally:
        release.join(90)
    assert err.value.file == str(path) and err.value.line == 1 and err.value.field == "label, note"
    assert holder.communicate(timeout=60)[0]
    assert holder.returncode == 0
    assert _stored(engine, items) == {sid: ("benign", "import", True) for sid in items}


def test_an_import_onto_a_label_submitted_elsewhere_is_refused(queue, tmp_path):
    """A label submitted in another tab while its assignment still reads open is locked for an import
    too (refused at once, not retried until the retries run out)."""
    engine, a, items = queue
    admin = account_named(engine, "boss")
    with session_scope(engine) as s:
        s.execute(
            sa.update(Annotation)
            .where(Annotation.sample_id == items[0])
            .values(label="benign", note="other tab", submitted_at=sa.func.current_timestamp())
        )
    with pytest.raises(InputError, match="already submitted and locked"):
        ann.import_annotations(engine, admin, _import_file(tmp_path, a.name, items[:1], "misbehavior"))
    assert _stored(engine, items[:1])[items[0]] == ("benign", "other tab", True)
