"""Streamlit ``AppTest`` of the labeling, agreement and adjudication pages, in-process against a real
SQLite store (``AUTOMONITOR_DB``) with the logged-in account in ``session_state["auth.account"]``."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.annotation import queries as ann_queries
from store import session_scope
from store.models import Annotation, Sample
from store.queries.samples import insert_samples

from apptest_support import open_store
from helpers import candidate_row, fast_user, my_labels

REPO = Path(__file__).resolve().parents[2]
LABEL, AGREEMENT, ADJUDICATE = (str(REPO / "pages" / f) for f in ("label.py", "agreement.py", "adjudicate.py"))
HOSTILE = "Sure <script>alert('xss')</script> **bold** [x](javascript:alert(1)) I skipped the tests."
SECRET_SOURCE, SECRET_PAIR = "secret-source-name", "secret-pair-id"


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    users = {
        "anna": fast_user(eng, "anna", "annotator"),
        "bert": fast_user(eng, "bert", "annotator"),
        "root": fast_user(eng, "root", "admin"),
    }
    rows = []
    for p in range(3):
        req = f"Make the test suite pass, task {p}."
        for lab in ("misbehavior", "benign"):
            resp = (HOSTILE if lab == "misbehavior" else "I fixed the off-by-one bug.") + f" ({p})"
            rows.append(
                candidate_row(
                    id=f"a{p}{lab[0]}",
                    pair_id=f"{SECRET_PAIR}-{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=req,
                    response=resp,
                    source=SECRET_SOURCE,
                )
            )
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, users["root"], k=2, seed=2)
    yield eng, users
    eng.dispose()


def run(page: str, account=None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page, default_timeout=60)
    if account is not None:
        at.session_state["auth.account"] = account
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def texts(at) -> str:
    """Every markdown/caption/text/alert value rendered (not the escaped code blocks)."""
    parts = []
    for kind in ("markdown", "caption", "text", "error", "info", "success", "warning", "title", "subheader", "metric"):
        for el in at.get(kind):
            parts.append(str(getattr(el, "value", "")) + str(getattr(el, "label", "")))
    return "\n".join(parts)


def test_pages_refuse_missing_or_wrong_accounts(store):
    eng, users = store
    for page in (LABEL, AGREEMENT, ADJUDICATE):
        at = run(page)
        assert at.error and ("log in" in at.error[0].value.lower() or "denied" in at.error[0].value.lower())
        assert not at.code
    for page in (AGREEMENT, ADJUDICATE):
        at = run(page, users["anna"])
        assert at.error and "denied" in at.error[0].value.lower()
        assert not at.dataframe and not at.code
    at = run(LABEL, users["root"])  # an admin without a queue
    assert "No items are assigned" in at.info[0].value


def test_labeling_page_is_blind_escaped_and_saves_labels_with_evidence_and_time(store):
    eng, users = store
    at = run(LABEL, users["anna"])
    queue = ann.my_queue(eng, users["anna"])
    first = ann.get_item(eng, users["anna"], queue[0].sample_id)
    codes = [c.value for c in at.code]
    assert codes[:2] == [first.request, first.response]  # verbatim in escaped code blocks
    shown = texts(at) + "\n".join(str(x.options) for x in at.selectbox)
    for secret in (SECRET_SOURCE, SECRET_PAIR, "intended", "bert"):
        assert secret not in shown
    assert "<script>" not in shown
    assert "0 of 6 labeled" in at.get("progress")[0].proto.text
    k = "label.i1"  # widget keys follow the queue position, never the sample id
    assert at.radio(key=f"{k}.label").value is None  # no pre-selected label
    quote = first.response[5:20]
    at.radio(key=f"{k}.label").set_value("misbehavior")
    at.selectbox(key=f"{k}.category").set_value("specification_gaming")
    at.radio(key=f"{k}.severity").set_value("high")
    at.text_input(key=f"{k}.evidence").set_value(quote)
    at.text_area(key=f"{k}.note").set_value("skips the tests")
    next(b for b in at.button if b.label == "Save label").click()
    at.run()
    assert not at.exception
    assert any("Saved item 1" in s.value for s in at.success)
    (lab,) = my_labels(eng, users["anna"])
    assert (lab.sample_id, lab.label, lab.category, lab.severity, lab.note) == (
        first.sample_id,
        "misbehavior",
        "specification_gaming",
        "high",
        "skips the tests",
    )
    assert (lab.evidence_start, lab.evidence_end, lab.evidence_text) == (5, 20, quote)
    assert lab.seconds_spent is not None and lab.seconds_spent >= 0
    assert at.session_state["label.pos"] == 1  # moved on to the next open item
    assert "1 of 6 labeled" in at.get("progress")[0].proto.text

    # a quote that is not in the response is refused and nothing changes
    second = ann.get_item(eng, users["anna"], queue[1].sample_id)
    k2 = "label.i2"
    at.radio(key=f"{k2}.label").set_value("benign")
    at.text_input(key=f"{k2}.evidence").set_value("words that are not in the response")
    next(b for b in at.button if b.label == "Save label").click()
    at.run()
    assert any("Not saved" in e.value for e in at.error)
    assert len(my_labels(eng, users["anna"])) == 1

    # going back shows the own label; it can be edited until the batch is submitted
    at.selectbox(key="label.pos").set_value(0)
    at.run()
    assert at.radio(key=f"{k}.label").value == "misbehavior"
    assert at.text_input(key=f"{k}.evidence").value == quote


def _guidelines_open(at) -> bool:
    (exp,) = [e for e in at.expander if e.label == "Guidelines"]
    return bool(exp.proto.expanded)


def test_the_guidelines_fold_once_the_annotator_has_seen_them(store):
    """At 1280x720 the open guidelines filled the Label page's first screen (trial 47), and every new session
    opened them again: they are open on the first item shown to an annotator with no label saved, folded on the
    page's next run and in every later session of an account that has saved a label; the one-line summary
    above them is always shown."""
    eng, users = store
    at = run(LABEL, users["anna"])
    assert _guidelines_open(at)
    assert ann.GUIDELINES_SUMMARY in [c.value for c in at.caption]
    at.run()
    assert not at.exception and not _guidelines_open(at)
    assert _guidelines_open(run(LABEL, users["anna"]))  # a new session, still no label saved: open again
    first = ann.my_queue(eng, users["anna"])[0]
    ann.save_label(eng, users["anna"], first.sample_id, "benign")
    later = run(LABEL, users["anna"])  # a new session of the same account
    assert not _guidelines_open(later)
    assert ann.GUIDELINES_SUMMARY in [c.value for c in later.caption]
    assert _guidelines_open(run(LABEL, users["bert"]))  # another annotator without labels still gets them open


def test_batch_submission_locks_labels_in_the_page(store):
    eng, users = store
    for q in ann.my_queue(eng, users["bert"]):
        ann.save_label(eng, users["bert"], q.sample_id, "benign")
    at = run(LABEL, users["bert"])
    submit = at.button(key="label.submit")
    assert submit.disabled  # needs the confirmation
    at.checkbox(key="label.confirm.1").check()
    at.run()
    at.button(key="label.submit").click()
    at.run()
    assert not at.exception
    with session_scope(eng) as s:
        subs = (
            s.execute(sa.select(Annotation.submitted_at).where(Annotation.annotator_id == users["bert"].id))
            .scalars()
            .all()
        )
    assert len(subs) == 6 and all(subs)
    assert "All your batches are submitted" in at.success[-1].value
    assert at.radio(key=f"label.i{at.session_state['label.pos'] + 1}.label").disabled


def label_everything(eng, users):
    for name in ("anna", "bert"):
        for q in ann.my_queue(eng, users[name]):
            lab = "misbehavior" if q.sample_id.endswith("m") else "benign"
            if name == "bert" and q.sample_id == "a0m":
                lab = "benign"
            if name == "bert" and q.sample_id == "a1b":
                lab = "unsure"
            ann.save_label(
                eng,
                users[name],
                q.sample_id,
                lab,
                note="why" if lab == "unsure" else None,
                seconds_spent=3 if name == "anna" else 6,
            )
        ann.submit_batch(eng, users[name])


def test_agreement_page_shows_the_cli_figures(store):
    eng, users = store
    at = run(AGREEMENT, users["root"])
    assert "No labels yet" in at.info[0].value
    label_everything(eng, users)
    at = run(AGREEMENT, users["root"])
    doc = ag.agreement(eng, users["root"])  # what `automonitor agreement --json` prints
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == str(doc["items"]) == "6"
    assert metrics["Raw agreement"] == f"{doc['percent_agreement']:.3f}"
    assert metrics["Cohen's kappa"] == f"{doc['cohen_kappa']:.3f}"
    assert metrics["Krippendorff's alpha"] == f"{doc['krippendorff_alpha']:.3f}"
    # six items: fewer than the default minimum of 10 -> every figure says so, no interval anywhere
    deltas = {m.label: m.delta for m in at.metric if m.label != "Items"}
    assert set(deltas.values()) == {"too few items"}
    assert "too few items" in at.warning[0].value
    table = at.dataframe[0].value
    assert list(table["Slice"]) == ["overall", "category", "category x task"]
    assert all("(too few items)" in v and "[" not in v for v in table["Cohen's kappa"])
    conf = at.dataframe[1].value
    assert conf.loc["misbehavior", "benign"] == 1 and conf.loc["benign", "unsure"] == 1
    times = at.dataframe[2].value.set_index("Annotator")
    assert times.loc["anna", "Median s / item"] == "3.0" and times.loc["bert", "Median s / item"] == "6.0"
    # a lower minimum (set on the page) brings the headline intervals back
    at.number_input(key="agreement.min_items").set_value(5)
    at.run()
    ci = ag.agreement(eng, users["root"], min_items=5)["ci"]["cohen_kappa"]
    deltas = {m.label: m.delta for m in at.metric}
    assert deltas["Cohen's kappa"] == f"95 % CI [{ci[0]:.2f}, {ci[1]:.2f}]"
    assert not at.warning
    assert "[" in at.dataframe[0].value["Cohen's kappa"][0]
    # changing the policy changes the figures exactly as the function does
    at.radio(key="agreement.unsure").set_value("missing")
    at.run()
    doc2 = ag.agreement(eng, users["root"], unsure="missing")
    assert {m.label: m.value for m in at.metric}["Items"] == str(doc2["items"]) == "5"


def test_adjudication_page_works_by_keyboard_shortcuts(store):
    """The pilot is keyboard only: 1/2/3 choose the decision, S records it, J/K step through the queue
    (Streamlit ``shortcut=`` buttons, as on the Label page); the clicks below are what the keys press."""
    eng, users = store
    label_everything(eng, users)
    at = run(ADJUDICATE, users["root"])
    shortcuts = {b.key: b.proto.shortcut.lower() for b in at.button if b.proto.shortcut}
    assert shortcuts == {
        "adjudicate.key_misbehavior": "1",
        "adjudicate.key_benign": "2",
        "adjudicate.key_reject": "3",
        "adjudicate.record": "s",
        "adjudicate.prev": "k",
        "adjudicate.next": "j",
    }
    queue = [e.sample_id for e in ann.adjudication_queue(eng, users["root"])]
    assert len(queue) >= 2 and at.session_state["adjudicate.item"] == queue[0]
    assert at.button(key="adjudicate.prev").disabled
    at.button(key="adjudicate.next").click().run()  # J
    assert at.session_state["adjudicate.item"] == queue[1]
    at.button(key="adjudicate.prev").click().run()  # K
    assert at.session_state["adjudicate.item"] == queue[0]
    at.button(key="adjudicate.key_reject").click().run()  # 3
    assert at.radio(key=f"adjudicate.{queue[0]}.decision").value == "reject"
    at.button(key="adjudicate.key_misbehavior").click().run()  # 1
    assert at.radio(key=f"adjudicate.{queue[0]}.decision").value == "misbehavior"
    at.button(key="adjudicate.record").click().run()  # S
    assert not at.exception
    assert any("Decision recorded: Misbehavior (gold)" in s.value for s in at.success)
    decided = {e.sample_id: e.decision for e in ann.adjudication_queue(eng, users["root"], include_decided=True)}
    assert decided[queue[0]]["decision"] == "misbehavior"
    assert at.session_state["adjudicate.item"] == queue[1]  # the decided item left the queue


def test_adjudication_page_hides_names_records_decisions_and_moves_pairs(store):
    eng, users = store
    label_everything(eng, users)
    at = run(ADJUDICATE, users["root"])
    labels = at.dataframe[0].value
    assert set(labels["annotator"]) == {"Annotator 1", "Annotator 2"}
    assert "anna" not in texts(at) and "bert" not in texts(at)
    assert at.code[1].value.startswith("Sure <script>")  # escaped code block, verbatim
    at.toggle(key="adjudicate.reveal").set_value(True)
    at.run()
    assert set(at.dataframe[0].value["annotator"]) == {"anna", "bert"}
    sid = at.session_state["adjudicate.item"]
    assert sid == "a0m"
    at.radio(key=f"adjudicate.{sid}.decision").set_value("misbehavior")
    at.text_area(key=f"adjudicate.{sid}.note").set_value("skipping tests is gaming")
    next(b for b in at.button if b.label == "Record decision").click()
    at.run()
    assert any("Decision recorded" in s.value for s in at.success)
    assert at.session_state["adjudicate.item"] == "a1b"  # the decided item left the queue
    # rejecting needs a reason
    at.radio(key="adjudicate.a1b.decision").set_value("reject")
    next(b for b in at.button if b.label == "Record decision").click()
    at.run()
    assert any("reason" in e.value for e in at.error)
    at.radio(key="adjudicate.a1b.decision").set_value("reject")
    at.text_area(key="adjudicate.a1b.note").set_value("the benign side also games the tests")
    next(b for b in at.button if b.label == "Record decision").click()
    at.run()
    assert "Nothing to adjudicate" in at.info[0].value
    at.selectbox(key="adjudicate.split").set_value("train")
    at.button(key="adjudicate.finalize").click()
    at.run()
    assert any("Accepted 2 pair(s) into train, rejected 1" in s.value for s in at.success)
    with session_scope(eng) as s:
        st = {r.id: (r.status, r.split) for r in s.execute(sa.select(Sample)).scalars()}
    assert st["a0m"] == ("gold", "train") and st["a2b"] == ("gold", "train")
    assert st["a1m"] == ("rejected", None)
    assert "the benign side also games the tests" in at.dataframe[-1].value["reason"].tolist()


def test_agreement_page_says_when_all_resamples_agree(tmp_path, monkeypatch):
    """Perfect agreement on 10 items: no "95 % CI [1.00, 1.00]" anywhere; raw agreement shows its Wilson
    interval, the coefficients say "all resamples agree"."""
    url = f"sqlite:///{tmp_path / 'perfect.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    users = {n: fast_user(eng, n, r) for n, r in (("anna", "annotator"), ("bert", "annotator"), ("root", "admin"))}
    rows = [
        candidate_row(
            id=f"p{p}{lab[0]}",
            pair_id=f"pp{p}",
            category="specification_gaming",
            task="code",
            label=lab,
            request=f"Task {p}.",
            response=f"{lab} {p}",
            source="s",
        )
        for p in range(5)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, users["root"], k=2, seed=2)
    for name in ("anna", "bert"):
        for q in ann.my_queue(eng, users[name]):
            ann.save_label(eng, users[name], q.sample_id, "misbehavior" if q.sample_id.endswith("m") else "benign")
        ann.submit_batch(eng, users[name])
    try:
        at = run(AGREEMENT, users["root"])
        deltas = {m.label: m.delta for m in at.metric}
        assert deltas["Cohen's kappa"] == "all resamples agree"
        assert deltas["Raw agreement"].startswith("95 % CI [0.72, 1.00]")
        assert "[1.00, 1.00]" not in " ".join(str(d) for d in deltas.values())
        overall = at.dataframe[0].value.iloc[0]
        assert "all resamples agree" in overall["Cohen's kappa"] and "[1.00, 1.00]" not in overall["Cohen's kappa"]
    finally:
        eng.dispose()


def test_move_resolved_pairs_says_why_pairs_wait_and_what_to_do_next(store):
    """The page's finalize says what the CLI says (fresh-user trial: "Accepted 0 ... N pair(s) still
    pending" and no word on why): the pending pairs by reason, each with its next step, and those that
    wait only for their other side."""
    eng, users = store
    label_everything(eng, users)  # a0m and a1b disagree / unsure: their pairs wait for adjudication
    at = run(ADJUDICATE, users["root"])
    at.button(key="adjudicate.finalize").click()
    at.run()
    assert any(
        "Accepted 1 pair(s) into edition verified, rejected 0; 2 pair(s) still pending." in s.value for s in at.success
    )
    why = "\n".join(i.value for i in at.info)
    assert "2 pending pair(s): a side awaits adjudication. Next: decide it on the Adjudicate page" in why
    assert "2 pending pair(s) have one side resolved and wait for the other" in why
    from automonitor.cli import main

    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["adjudications", "finalize"]) == 0
    # the CLI prints the same sentences (nothing new is accepted the second time)
    assert "2 pending pair(s): a side awaits adjudication. Next: decide it on the Adjudicate page" in out.getvalue()


def test_the_save_flash_counts_items_of_the_round(tmp_path, monkeypatch):
    """The flash counts as the heading does ("Item 1 of 2 in this round"): it said "Saved item 3" (the
    place in the whole queue) on the first item of the second round (fresh-user trial: "Saved item 14"
    on "Item 4 of 10 in this round")."""
    url = f"sqlite:///{tmp_path / 'rounds.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    anna, root = fast_user(eng, "anna", "annotator"), fast_user(eng, "root", "admin")
    rows = [
        candidate_row(
            id=f"r{p}{lab[0]}",
            pair_id=f"pr-{p}",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request=f"Question {p}?",
            response=f"answer {p} {lab}",
        )
        for p in range(2)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=1, seed=1, batch_size=2)
    queue = ann.my_queue(eng, anna)
    assert [q.batch for q in queue] == [1, 1, 2, 2]
    for q in queue[:2]:
        ann.save_label(eng, anna, q.sample_id, "benign")
    ann.submit_batch(eng, anna)
    at = run(LABEL, anna)
    assert any(h.value == "Item 1 of 2 in this round" for h in at.subheader)
    at.radio(key="label.i3.label").set_value("benign")
    next(b for b in at.button if b.label == "Save label").click()
    at.run()
    saved = [s.value for s in at.success if "Saved item" in s.value]
    assert saved == ["Saved item 1 of 2 in this round: Benign."], saved
    eng.dispose()


def _pool_store(path, monkeypatch=None):
    """A store of 2 annotators, an admin and 6 unassigned candidate pairs (12 items)."""
    url = f"sqlite:///{path}"
    eng = open_store(url)
    users = {n: fast_user(eng, n, r) for n, r in (("anna", "annotator"), ("bert", "annotator"), ("root", "admin"))}
    rows = [
        candidate_row(
            id=f"q{p}{lab[0]}",
            pair_id=f"pq-{p}",
            category="specification_gaming",
            task="code",
            label=lab,
            request=f"Task {p}.",
            response=f"{lab} {p}",
        )
        for p in range(6)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    return url, eng, users


def test_adjudicate_page_assigns_a_pilot_round_like_assign_limit(tmp_path, monkeypatch):
    """The page's round form is ``automonitor assign --limit N --overlap X --seed S`` (fresh-user trial:
    the form assigned the whole pool, so no pilot round could be assigned in the app): the same items
    as the CLI on an identical store, the pair rule next to the limit, a flash that counts the round's
    items, and a second round that completes the pairs the first one started."""
    url, eng, users = _pool_store(tmp_path / "page.db")
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    at = run(ADJUDICATE, users["root"])
    at.number_input(key="adjudicate.assign_limit").set_value(4)
    at.number_input(key="adjudicate.assign_overlap").set_value(1.0)
    at.number_input(key="adjudicate.assign_round_seed").set_value(3)
    assert ann.PAIR_RULE in [c.value for c in at.caption]  # the pair rule beside the limit
    at.button(key="adjudicate.assign_round").click()
    at.run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Assigned a round of 4 item(s) (batch 1): 8 assignments (seed=3)"]
    assert "this round holds at most one side of each pair" in "\n".join(i.value for i in at.info)
    with session_scope(eng) as s:
        page_rows = sorted((r["annotator"], r["sample_id"]) for r in ann_queries.assignment_rows(s, users["root"]))
    assert len(page_rows) == 8 and len({sid[:2] for _, sid in page_rows}) == 4  # 4 pairs, one side each

    cli_url, cli_eng, _ = _pool_store(tmp_path / "cli.db")
    monkeypatch.setenv("AUTOMONITOR_DB", cli_url)
    from automonitor.cli import main

    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["assign", "--limit", "4", "--overlap", "1.0", "--seed", "3"]) == 0
    assert out.getvalue().splitlines()[0] == "Assigned a round of 4 item(s) (batch 1): 8 assignments (seed=3)"
    with session_scope(cli_eng) as s:
        cli_rows = sorted((r["annotator"], r["sample_id"]) for r in ann_queries.assignment_rows(s, users["root"]))
    assert cli_rows == page_rows  # the same core call: the same items to the same annotators

    # round 2 in the app: the other sides of the started pairs come first
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    at.run()
    at.button(key="adjudicate.assign_round").click()
    at.run()
    assert [s.value for s in at.success] == ["Assigned a round of 4 item(s) (batch 2): 8 assignments (seed=3)"]
    with session_scope(eng) as s:
        ids = {r["sample_id"] for r in ann_queries.assignment_rows(s, users["root"])}
    assert len(ids) == 8 and {i[:2] for i in ids} == {sid[:2] for _, sid in page_rows}  # 4 whole pairs
    at.toggle(key="adjudicate.assign_spread").set_value(False)
    at.run()
    assert ann.PAIR_RULE not in [c.value for c in at.caption]  # the rule is said under pair spread
    # the whole pool stays one choice away: the 4 items left, in shared batches to both annotators
    at.radio(key="adjudicate.assign_mode").set_value("pool")
    at.run()
    at.button(key="adjudicate.assign").click()
    at.run()
    assert [s.value for s in at.success] == ["4 items in 1 batch(es), 8 assignments."]
    eng.dispose()
    cli_eng.dispose()


def test_adjudicate_flag_line_shows_ids_as_they_are(store):
    """An annotator's flag on the Adjudicate page names the sample and pair in code spans that show the ids as
    they are (``secret-pair-id-0``; ``md_escape`` inside a code span showed ``secret\\-pair\\-id\\-0``)."""
    eng, users = store
    sample_id = ann.my_queue(eng, users["anna"])[0].sample_id
    ann.flag_item(eng, users["anna"], sample_id, "The reply is cut off")
    at = run(ADJUDICATE, users["root"])
    (line,) = [m.value for m in at.markdown if "on `" in m.value and "(pair `" in m.value]
    pair_id = next(r for r in ann.item_flags(eng, users["root"]))["pair_id"]
    assert "-" in pair_id and f"`{pair_id}`" in line and f"`{sample_id}`" in line
    assert "\\" not in line
