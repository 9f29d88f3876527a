"""CLI of the annotation workflow: ``users add``, ``users list``, ``assign``, ``annotations
import|export``, ``agreement``, ``adjudications export|finalize``.

The command line acts as the trusted local admin :data:`automonitor.annotation.accounts.SYSTEM` (whoever can run
it can open the store directly); the web app always acts as the logged-in account.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from automonitor.cli.app import app
from automonitor.cli.common import CSV_EXACT_HELP, csv_mode_of, emit, emit_json, err_console, open_store
from automonitor.errors import InputError

CSV_MODE_HELP = (
    "CSV cells: safe (a cell starting = + - @ tab CR gets a leading ', for spreadsheets; import removes it) "
    "| exact (verbatim)"
)

users_app = typer.Typer(help="Annotator and admin accounts.", no_args_is_help=True)
annotations_app = typer.Typer(help="Import and export annotators' labels.", no_args_is_help=True)
adjudications_app = typer.Typer(
    help="Export adjudications; move resolved pairs into the gold set.", no_args_is_help=True
)
app.add_typer(users_app, name="users")
app.add_typer(annotations_app, name="annotations")
app.add_typer(adjudications_app, name="adjudications")
assignments_app = typer.Typer(help="Export annotators' assigned items (what each may see).", no_args_is_help=True)
app.add_typer(assignments_app, name="assignments")


def _read_password(password_stdin: bool) -> str:
    if password_stdin:
        return sys.stdin.readline().removesuffix("\n")
    if not sys.stdin.isatty():
        raise InputError("no terminal to prompt for the password; use --password-stdin", field="--password-stdin")
    password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@users_app.command("add")
def users_add(
    name: str = typer.Argument(..., help="unique user name"),
    role: str = typer.Option("annotator", "--role", help="annotator | admin"),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="read the password from the first line of stdin"
    ),
    json_out: bool = typer.Option(False, "--json", help="print the account as JSON"),
) -> None:
    """Create an account (the password is stored argon2id-hashed, never echoed)."""
    from automonitor.annotation.accounts import check_new_account, create_user

    password = _read_password(password_stdin)
    check_new_account(name, role, password)  # before a store is created for it: bad input creates nothing
    acc = create_user(open_store(create=True), name, role, password)
    emit(json_out, {"id": acc.id, "name": acc.name, "role": acc.role}, f"created {acc.role} {acc.name}")


@users_app.command("list")
def users_list(
    all_accounts: bool = typer.Option(False, "--all", help="also the deactivated accounts"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """List the accounts (active ones; --all: every one) with role, state and their last recorded action."""
    # the roster, not the accounts module: a listing needs neither argon2 nor the ORM (the same SYSTEM admin)
    from automonitor.annotation.roster import SYSTEM, account_table

    rows = account_table(open_store(), SYSTEM, include_inactive=all_accounts)
    if json_out:
        emit_json(
            [
                {
                    "id": r["id"],
                    "name": r["name"],
                    "role": r["role"],
                    "active": r["active"],
                    "last_event": None
                    if r["last_event"] is None
                    else {**r["last_event"], "at": r["last_event"]["at"].isoformat()},
                }
                for r in rows
            ]
        )
        return
    from automonitor.escaping import terminal_text

    for r in rows:
        ev = r["last_event"]
        last = f"{ev['action']} by {terminal_text(ev['actor'])} at {ev['at']:%Y-%m-%d %H:%M}" if ev else ""
        print(f"{terminal_text(r['name'])}\t{r['role']}\t{'active' if r['active'] else 'deactivated'}\t{last}")


@users_app.command("passwd")
def users_passwd(
    name: str = typer.Argument(..., help="the account"),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="read the new password from the first line of stdin"
    ),
) -> None:
    """Set a new password (at least 12 characters, not blank, not the user name); every login
    session of the account ends."""
    from automonitor.annotation.accounts import SYSTEM, set_password

    password = _read_password(password_stdin)
    set_password(open_store(), SYSTEM, name, password)
    err_console.print(f"password changed for {name}; their sessions ended")


@users_app.command("deactivate")
def users_deactivate(
    name: str = typer.Argument(..., help="the account"),
    reassign: bool = typer.Option(False, "--reassign", help="move their open assignments to other active annotators"),
    to: str | None = typer.Option(None, "--to", help="with --reassign: the annotator who takes them"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Deactivate an account: no more logins, its sessions end at once, its submitted labels stay
    (under its name). With --reassign its open assignments go to other annotators."""
    from automonitor.annotation.accounts import SYSTEM, set_active
    from automonitor.annotation.assignment import reassign_open

    if to is not None and not reassign:
        raise InputError("--to needs --reassign", field="--to")
    eng = open_store()
    set_active(eng, SYSTEM, name, False)
    doc: dict[str, Any] = {"name": name, "active": False}
    if reassign:
        doc["reassigned"] = reassign_open(eng, SYSTEM, name, to)
    if json_out:
        emit_json(doc)
    else:
        err_console.print(f"deactivated {name}")
        if reassign:
            r = doc["reassigned"]
            err_console.print(f"moved {r['moved']} open item(s); {len(r['left'])} left with nobody eligible")


@users_app.command("reactivate")
def users_reactivate(name: str = typer.Argument(..., help="the account")) -> None:
    """Reactivate a deactivated account (it may log in again with its password)."""
    from automonitor.annotation.accounts import SYSTEM, set_active

    set_active(open_store(), SYSTEM, name, True)
    err_console.print(f"reactivated {name}")


@users_app.command("end-sessions")
def users_end_sessions(name: str = typer.Argument(..., help="the account")) -> None:
    """End every login session of the account now (each open page lands on the login page)."""
    from automonitor.annotation.accounts import SYSTEM, end_sessions

    end_sessions(open_store(), SYSTEM, name)
    err_console.print(f"ended every session of {name}")


@users_app.command("history")
def users_history(
    name: str | None = typer.Argument(None, help="one account (default: all)"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """The recorded account actions (who did what to which account, and when), oldest first."""
    from automonitor.annotation.accounts import SYSTEM, account_events

    rows = account_events(open_store(), SYSTEM, name)
    if json_out:
        emit_json([{**r, "at": r["at"].isoformat()} for r in rows])
        return
    from automonitor.escaping import terminal_text

    for r in rows:
        print(
            f"{r['at']:%Y-%m-%d %H:%M:%S}\t{terminal_text(r['account'])}\t{r['action']}\t"
            f"{terminal_text(r['actor'])}\t{terminal_text(r['detail'] or '')}"
        )


@app.command("assign")
def assign_cmd(
    k: int = typer.Option(2, "--k", help="annotators per item"),
    seed: int | None = typer.Option(None, "--seed", help="shuffle seed (random when omitted; recorded)"),
    batch_size: int | None = typer.Option(
        None,
        "--batch-size",
        help="rounds: shared batches of at most N items (whole pairs), each to k annotators in the same order",
    ),
    calibration: int = typer.Option(
        0, "--calibration", help="pairs in a first calibration batch every annotator labels (needs --batch-size)"
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        help="small session: assign only N items (one round), in a seeded random order; with pair spread "
        "(the default) a round holds one side of a pair, and a pair reaches gold only when both sides are "
        "resolved, so run a second round for the other sides",
    ),
    sample: int | None = typer.Option(
        None, "--sample", help="small session: N items stratified by category x task (seeded by --seed)"
    ),
    overlap: float | None = typer.Option(
        None,
        "--overlap",
        help="small session: share of its items every annotator labels (the rest labelled once); default 1.0",
    ),
    pair_spread: bool = typer.Option(
        True,
        "--pair-spread/--no-pair-spread",
        help="small session: at most one side of a pair per round; a side labelled once goes to an "
        "annotator who holds no other side of its pair",
    ),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Assign every unassigned candidate item to k annotators (balanced, shuffled, sides of a pair
    never adjacent); with --batch-size in shared rounds; with --limit/--sample a small session (one
    round of N items, --overlap shared by every annotator, sides of a pair spread apart)."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation import assign

    if limit is not None and sample is not None:
        raise InputError("give --limit N or --sample N, not both", field="--sample")
    n = sample if sample is not None else limit
    if n is None and (overlap is not None or not pair_spread):
        raise InputError(
            "--overlap and --no-pair-spread need a small session (--limit N or --sample N)", field="--overlap"
        )
    res = assign(
        open_store(),
        SYSTEM,
        k=k,
        seed=seed,
        batch_size=batch_size,
        calibration=calibration,
        limit=n,
        overlap=1.0 if overlap is None else overlap,
        stratify=sample is not None,
        pair_spread=pair_spread,
    )
    if json_out:
        emit_json(res.to_json())
    else:
        head, *more = res.explain()  # the Adjudicate page's round form shows the same lines
        print(head)
        for line in more:
            print(f"  {line}")
        for name, n in sorted(res.by_annotator.items()):
            print(f"  {name}\t{n}")
        for r in res.rounds:
            kind = "calibration batch" if r["calibration"] else "batch"
            print(f"  {kind} {r['batch']}: {r['items']} items -> {', '.join(r['annotators'])}")


@app.command("unassign")
def unassign_cmd(
    annotator: str | None = typer.Option(None, "--annotator", help="only this account's assignments"),
    batch: int | None = typer.Option(None, "--batch", help="only this batch (round)"),
    everything: bool = typer.Option(False, "--all", help="every open assignment"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Take back open assignments (no label yet, not submitted); labeled ones are kept."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation import unassign

    res = unassign(open_store(), SYSTEM, annotator=annotator, batch=batch, everything=everything)
    if json_out:
        emit_json(res.to_json())
    else:
        print(f"removed {res.removed} open assignment(s); kept {res.kept} labeled or submitted")
        for name, n in sorted(res.by_annotator.items()):
            print(f"  {name}\t{n}")


@annotations_app.command("import")
def annotations_import(
    file: Path = typer.Argument(..., help="JSONL or CSV: annotator, sample_id, label, [note, ...]"),
    fmt: str | None = typer.Option(None, "--format", help="jsonl | csv (default: from the suffix)"),
    draft: bool = typer.Option(False, "--draft", help="keep the labels editable (default: submitted)"),
    csv_mode: str = typer.Option("safe", "--csv-mode", help="how a CSV file's cells were written: safe | exact"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Import labels, all or nothing; refuses a label for an item not assigned to that annotator."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation import import_annotations
    from automonitor.data.records import check_csv_mode  # pydantic: not at --help

    res = import_annotations(open_store(), SYSTEM, file, fmt, submit=not draft, csv_mode=check_csv_mode(csv_mode))
    emit(json_out, res.to_json(), f"imported {res.written} label(s), {res.unchanged} unchanged")


@assignments_app.command("export")
def assignments_export(
    file: Path = typer.Argument(..., help="Output JSONL: annotator, sample_id, request, response, batch."),
    annotator: str | None = typer.Option(None, "--annotator", help="Only this account's queue."),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Export assigned items exactly as the annotator sees them (never source, intended label or pair)."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation.assignment_files import export_assignments

    res = export_assignments(open_store(), SYSTEM, file, annotator)
    emit(json_out, res, f"wrote {res['rows']} assigned item(s) to {res['file']}")


def _export_command(what: str, doc: str) -> Callable[..., None]:
    """The ``annotations export`` (``what="labels"``) or ``adjudications export`` (``"adjudications"``)
    command, with help text ``doc``."""

    def export_cmd(
        file: Path = typer.Argument(..., help="output .jsonl or .csv"),
        fmt: str | None = typer.Option(None, "--format", help="jsonl | csv (default: from the suffix)"),
        csv_mode: str = typer.Option("safe", "--csv-mode", help=CSV_MODE_HELP),
        csv_exact: bool = typer.Option(False, "--csv-exact", help=CSV_EXACT_HELP),
        json_out: bool = typer.Option(False, "--json"),
    ) -> None:
        from automonitor.annotation.accounts import SYSTEM
        from automonitor.annotation import export_adjudications, export_annotations

        export = export_annotations if what == "labels" else export_adjudications
        n = export(open_store(), SYSTEM, file, fmt, csv_mode=csv_mode_of(csv_mode, csv_exact))
        emit(json_out, {"file": str(file), what: n}, f"wrote {n} {what.removesuffix('s')}(s) to {file}")

    export_cmd.__doc__ = doc
    return export_cmd


annotations_app.command("export")(
    _export_command("labels", "Export every label with provenance (who, when, guideline version, batch, time spent).")
)
adjudications_app.command("export")(
    _export_command(
        "adjudications", "Export every adjudication (history included) with provenance and the annotators' labels."
    )
)


@adjudications_app.command("finalize")
def adjudications_finalize(
    split: str = typer.Option("test", "--split", help="gold split for accepted pairs: test | train"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Move resolved candidate pairs into the gold set (accepted) or keep them as rejected."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation import finalize_pairs

    res = finalize_pairs(open_store(), SYSTEM, split)
    if json_out:
        emit_json(res.to_json())
    else:
        print("\n".join(res.explain()))


@app.command("agreement")
def agreement_cmd(
    json_out: bool = typer.Option(False, "--json"),
    unsure: str = typer.Option(
        "category", "--unsure", help="category: 'unsure' is its own label; missing: drop unsure labels"
    ),
    n_boot: int = typer.Option(1000, "--bootstrap", help="bootstrap replicates (0 = no intervals)"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
    submitted_only: bool = typer.Option(
        False, "--submitted-only", help="count submitted labels only (the default; kept for existing scripts)"
    ),
    include_drafts: bool = typer.Option(
        False, "--include-drafts", help="count draft (not yet submitted) labels too: the pre-round-2 view"
    ),
    min_items: int = typer.Option(
        10, "--min-items", help="slices with fewer items are 'too few' (too_few: true, no interval)"
    ),
    run: str | None = typer.Option(
        None, "--run", help="also compare this monitor run with the resolved labels and each annotator"
    ),
) -> None:
    """Inter-annotator agreement: raw agreement, Cohen's kappa, Krippendorff's alpha, Gwet's AC1,
    PABAK with bootstrap intervals, overall and per category (x task); confusion; time per item."""
    from automonitor.annotation.accounts import SYSTEM
    from automonitor.annotation.agreement import METRICS, NONE_ALL_AGREE, WILSON_ALL_AGREE, agreement, flat_rows

    if include_drafts and submitted_only:
        raise typer.BadParameter(
            "--include-drafts and --submitted-only contradict each other", param_hint="--include-drafts"
        )
    doc = agreement(
        open_store(),
        SYSTEM,
        unsure=unsure,
        n_boot=n_boot,
        seed=seed,
        submitted_only=not include_drafts,
        min_items=min_items,
        run_id=run,
    )
    if json_out:
        emit_json(doc)
        return
    print(
        f"{doc['items']} items with >= 2 labels, annotators: {', '.join(doc['annotators']) or '-'} "
        f"(unsure as {doc['unsure']})"
    )

    def fmt(v):
        return "   -  " if v is None else f"{v:6.3f}"

    def with_ci(d, k):
        v, ci, how = d[k], d["ci"][k], d.get("ci_method", {}).get(k)
        if v is None:
            return "n/a"
        if ci is None and how == NONE_ALL_AGREE:
            return f"{v:.3f} (all resamples agree: no interval)"
        return (
            f"{v:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + (" Wilson" if how == WILSON_ALL_AGREE else "")
        )

    head = "too few items: no interval" if doc["too_few"] else "95 % bootstrap interval"
    print(
        f"Cohen's kappa {with_ci(doc, 'cohen_kappa')} · Krippendorff's alpha {with_ci(doc, 'krippendorff_alpha')} "
        f"· raw agreement {with_ci(doc, 'percent_agreement')} ({head})"
    )
    print("slice".ljust(40) + "items  " + "  ".join(m[:12].rjust(12) for m in METRICS))
    for r in flat_rows(doc):
        name = " / ".join(str(x) for x in (r["slice"], r["category"], r["task"]) if x)
        few = "  (too few items)" if r["too_few"] else ""
        print(
            name[:39].ljust(40)
            + str(r["items"]).rjust(5)
            + "  "
            + "  ".join(fmt(r[m]).rjust(12) for m in METRICS)
            + few
        )
    mon = doc.get("monitor")
    if mon:
        print(f"monitor {mon['monitor']} · {mon['template']} ({mon['run_id']}): {mon['unscored']} unscored left out")
        for who, a in [("gold", mon["vs_gold"]), *mon["vs_annotators"].items()]:
            few = " (too few items)" if a["too_few"] else ""
            print(f"  vs {who}: {a['items']} items, Cohen's kappa {with_ci(a, 'cohen_kappa')}{few}")
    for name, t in doc["time_per_item"].items():
        med = "-" if t["median_s"] is None else f"{t['median_s']:.1f} s"
        print(f"time per item  {name}: median {med} over {t['timed']} timed label(s)")
