"""``automonitor errata add|list|export|import``: the label errata every build applies
(:mod:`automonitor.data.errata`): the ones shipped with the package and those entered into the store."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import typer

from automonitor.cli.app import app
from automonitor.cli.common import emit, emit_json, err_console, open_store, rich_table, shown_url, store_exists

if TYPE_CHECKING:
    from sqlmodel import Session

errata_app = typer.Typer(
    help="Label errata (shipped with the package and entered into the store): every build applies them.",
    no_args_is_help=True,
)
app.add_typer(errata_app, name="errata")


@contextmanager
def _store_session() -> Iterator[Session | None]:
    """A session on the store when it exists; else ``None`` with a warning (the shipped errata need no
    store: reading them never creates one)."""
    from sqlmodel import Session

    from store.engine import db_url

    url = db_url(None)
    if not store_exists(url):
        err_console.print(f"warning: no store at {shown_url(url)}: only the shipped errata; pair ids are not checked")
        yield None
        return
    with Session(open_store(url)) as s:
        yield s


_FILE_HELP = "Shipped errata file to read (default: $AUTOMONITOR_ERRATA or the package's errata.jsonl)."


@errata_app.command("add")
def add_cmd(
    pair_id: str = typer.Argument(..., help="The pair judged (cand: prefix ignored)."),
    verdict: str = typer.Option(..., "--verdict", help="wrong | doubtful"),
    reason: str = typer.Option(..., "--reason", help="What is wrong with the label, in plain words (at most 4 KB)."),
    reader: str = typer.Option("anonymous", "--reader", help="Who read the pair."),
    json_out: bool = typer.Option(False, "--json", help="Print the erratum recorded as JSON."),
) -> None:
    """Record an erratum in the store (created if missing, saying so); the next `automonitor build`
    applies it (wrong or doubtful: out of verified, to candidates; marked in paper). A pair the store
    does not hold is accepted with a warning. A reader's new erratum replaces their earlier one for the
    pair; when another reader's verdict differs, a warning names it (both are kept; the strictest
    verdict, wrong over doubtful, is in force)."""
    from sqlmodel import Session

    from automonitor.data.errata import add_erratum, conflict_warning, erratum_conflicts, make_erratum, stored_pairs
    from automonitor.escaping import terminal_text

    make_erratum(pair_id, verdict, reason, reader)  # bad input: exit 2 before any store is opened
    engine = open_store(create=True)
    e = add_erratum(engine, pair_id, verdict, reason, reader, origin="cli")
    with Session(engine) as s:
        known = e.pair_id in stored_pairs(s)
    others, in_force = erratum_conflicts(engine, e)
    if others:  # another reader disagrees: say so (both kept; the strictest verdict is in force)
        err_console.print(
            "warning: " + terminal_text(conflict_warning(e, others, in_force)),
            soft_wrap=True,
        )
    if not known:
        err_console.print(f"warning: pair {terminal_text(e.pair_id)} is not in the store (recorded anyway)")
    if json_out:
        emit_json(e.model_dump())
    else:
        typer.echo(
            f"erratum recorded: {terminal_text(e.pair_id)} {e.verdict} ({terminal_text(e.source)}); rebuild to apply it"
        )


@errata_app.command("list")
def list_cmd(
    file: str | None = typer.Option(None, "--file", help=_FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """The errata in force (shipped and stored), whether the store still holds each pair, and the counts
    per source; a pair whose readers disagree shows the other readers' verdicts (JSON: "conflicts") and a
    warning. Every text is printed with its control characters marked (no terminal escape passes)."""
    from automonitor.data.errata import errata_counts, errata_in_force, errata_status
    from automonitor.escaping import terminal_text

    with _store_session() as s:
        errata = errata_in_force(s, file)
        rows = errata_status(s, errata)
    missing = [r["pair_id"] for r in rows if r["in_store"] is None]
    doc = {"errata": rows, "counts": errata_counts(errata), "not_in_store": missing}
    if json_out:
        emit_json(doc)
        return
    from rich.console import Console

    t = rich_table(
        f"{len(rows)} errata in force",
        ("pair_id", "source", "verdict", "reader", "date", "in store", "reason", "other readers"),
        [
            (
                *(terminal_text(r[k]) for k in ("pair_id", "source", "verdict", "reader", "date")),
                terminal_text(r["in_store"] or "no"),
                reason if len(reason := terminal_text(r["reason"])) <= 80 else reason[:79] + "…",
                ", ".join(terminal_text(f"{c['reader']}: {c['verdict']}") for c in r["conflicts"]),
            )
            for r in rows
        ],
    )
    Console(markup=False, highlight=False, emoji=False, width=180).print(t)
    for r in rows:
        if r["conflicts"]:
            said = "; ".join(f"{c['reader']} said {c['verdict']}" for c in r["conflicts"])
            err_console.print(
                "warning: "
                + terminal_text(
                    f"conflicting errata on pair {r['pair_id']}: in force {r['verdict']} ({r['reader']}); {said} "
                    "(between readers the strictest verdict wins)"
                ),
                soft_wrap=True,
            )
    for r in rows:
        if r["in_store"] is None:
            err_console.print(
                f"warning: erratum on {terminal_text(r['pair_id'])}: {terminal_text(r['why_not_in_store'])}"
            )


@errata_app.command("export")
def export_cmd(
    out: str = typer.Argument(
        ..., help="The errata file to write (JSONL, the shipped format), e.g. seeds/errata.jsonl."
    ),
    file: str | None = typer.Option(None, "--file", help=_FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help='Print {"file", "errata"} as JSON.'),
) -> None:
    """Write every erratum in force (shipped, then those entered into the store) as the versioned errata
    file, for review in git."""
    from automonitor.data.errata import export_errata

    with _store_session() as s:
        n = export_errata(s, out, file)
    emit(json_out, {"file": out, "errata": n}, f"wrote {n} errata to {out}")


@errata_app.command("import")
def import_cmd(
    src: str = typer.Argument(..., help="A reviewed errata file (JSONL, the shipped format)."),
    file: str | None = typer.Option(None, "--file", help=_FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help='Print {"read", "added", "already"} as JSON.'),
) -> None:
    """Add a reviewed errata file's errata to the store (all or nothing; lines already in force are
    skipped); the next build applies them."""
    from pathlib import Path

    from automonitor.data.errata import import_errata, load_errata
    from automonitor.errors import InputError

    if not Path(src).is_file():
        raise InputError(f"no such file: {src}", file=src)
    load_errata(src)  # a bad file: exit 2 naming line and field, before any store is opened
    doc = import_errata(open_store(create=True), src, path=file)
    emit(json_out, doc, f"read {doc['read']} errata: {doc['added']} added, {doc['already']} already in force")
