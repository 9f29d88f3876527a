"""``automonitor errata add|list``: the label errata every build applies (:mod:`automonitor.data.errata`)."""

from __future__ import annotations


import typer

from automonitor.cli.app import app
from automonitor.cli.common import emit_json, err_console, open_store, shown_url, store_exists

errata_app = typer.Typer(help="Label errata (seeds/errata.jsonl): every build applies them.", no_args_is_help=True)
app.add_typer(errata_app, name="errata")


def _store_url() -> str | None:
    """The store's URL when it exists; else ``None`` with a warning (the errata file needs no store: a
    reader may record an erratum before any build, and errata never create a store)."""
    from store.engine import db_url

    url = db_url(None)
    if store_exists(url):
        return url
    err_console.print(f"warning: no store at {shown_url(url)}: pair ids are not checked", highlight=False)
    return None


_FILE_HELP = "Errata file (default: $AUTOMONITOR_ERRATA or seeds/errata.jsonl)."


@errata_app.command("add")
def add_cmd(
    pair_id: str = typer.Argument(..., help="The pair judged (cand: prefix ignored)."),
    verdict: str = typer.Option(..., "--verdict", help="wrong | doubtful"),
    reason: str = typer.Option(..., "--reason", help="What is wrong with the label, in plain words."),
    reader: str = typer.Option("anonymous", "--reader", help="Who read the pair."),
    file: str | None = typer.Option(None, "--file", help=_FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the erratum written as JSON."),
) -> None:
    """Append an erratum; the next `automonitor build` applies it (wrong or doubtful: out of verified,
    to candidates; marked in paper). A pair the store does not hold is accepted with a warning."""
    from sqlmodel import Session

    from automonitor.data.errata import add_erratum, stored_pairs

    e = add_erratum(pair_id, verdict, reason, reader, path=file)
    url = _store_url()
    known = False
    if url is not None:
        with Session(open_store(url)) as s:
            known = e.pair_id in stored_pairs(s)
    if not known:
        err_console.print(f"warning: pair {e.pair_id} is not in the store (recorded anyway)", highlight=False)
    if json_out:
        emit_json(e.model_dump())
    else:
        typer.echo(f"erratum recorded: {e.pair_id} {e.verdict} ({e.source}); rebuild to apply it")


@errata_app.command("list")
def list_cmd(
    file: str | None = typer.Option(None, "--file", help=_FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """The errata in force, whether the store still holds each pair, and the counts per source."""
    from sqlmodel import Session

    from automonitor.data.errata import errata_counts, errata_status, load_errata

    errata = load_errata(file)
    url = _store_url()
    if url is None:
        rows = errata_status(None, errata)
    else:
        with Session(open_store(url)) as s:
            rows = errata_status(s, errata)
    missing = [r["pair_id"] for r in rows if r["in_store"] is None]
    doc = {"errata": rows, "counts": errata_counts(errata), "not_in_store": missing}
    if json_out:
        emit_json(doc)
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{len(rows)} errata in force")
    for c in ("pair_id", "source", "verdict", "reader", "date", "in store", "reason"):
        t.add_column(c)
    for r in rows:
        t.add_row(
            r["pair_id"], r["source"], r["verdict"], r["reader"], r["date"], r["in_store"] or "no", r["reason"][:80]
        )
    Console(markup=False, width=160).print(t)
    for pid in missing:
        err_console.print(f"warning: erratum on {pid}: no such pair in the store (reported, not applied)")
