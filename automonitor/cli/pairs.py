"""``automonitor import`` and ``automonitor export``: the generic pair file (JSONL, CSV, Parquet).

See ``automonitor.data.pairfiles`` for the format, the validation rules and the line numbering of errors.
"""

from __future__ import annotations


import typer

from automonitor.cli.app import app
from automonitor.cli.common import CSV_EXACT_HELP, csv_mode_of, edition_choices, emit_json, err_console, open_store


@app.command("import")
def import_cmd(
    file: str = typer.Argument(..., help="Pair file: .jsonl/.json (one sample a line), .csv or .parquet."),
    as_candidates: bool = typer.Option(
        False, "--as-candidates", help="Store as candidates for annotation (status 'candidate', no split)."
    ),
    split: str | None = typer.Option(None, "--split", help="Split of gold samples: test (default) | train."),
    fmt: str | None = typer.Option(
        None, "--format", help="jsonl | csv | parquet (default: from the extension, else sniffed)."
    ),
    source: str = typer.Option("import", "--source", help="Source name for rows without a 'source'."),
    max_errors: int = typer.Option(
        20, "--max-errors", min=1, help="How many problems to list (every malformed line and field is counted)."
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="A pair repeating the request and responses of another pair is an error (exit 2), not skipped.",
    ),
    csv_mode: str = typer.Option(
        "safe", "--csv-mode", help="How a CSV file's cells were written: safe (export default) | exact."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Import user pairs as gold samples (or candidates), all or nothing; re-importing adds nothing.

    Columns: pair_id, category, task, request, response, label, optional sample_id, source, meta,
    label_source (label provenance; default user).
    Bad input exits 2 naming the file, line and field, and leaves the store unchanged.
    """
    from automonitor.data.pairfiles.importing import apply_import, prepare_import

    plan = prepare_import(
        file,
        fmt=fmt,
        as_candidates=as_candidates,
        split=split,
        default_source=source,
        max_errors=max_errors,
        strict=strict,
        csv_mode=csv_mode,
    )  # validate the file before opening the store
    result = apply_import(open_store(create=True), plan)
    for w in result["warnings"]:
        err_console.print(f"warning: {w}", style="yellow")
    if json_out:
        emit_json(result)
    else:
        where = "candidates" if as_candidates else f"gold samples (split {result['split']})"
        typer.echo(
            f"{result['file']}: {result['rows']} samples in {result['pairs']} pair(s) as {where}: "
            f"{result['inserted']} inserted, {result['skipped_existing']} already in the store, "
            f"{result['duplicates_skipped']} duplicate pair(s) skipped"
        )


SPLIT_HELP = (
    "test | train | controls (the benign-only controls, for the report's controls FAR) | all (filters gold samples)."
)
CSV_MODE_HELP = (
    "CSV cells: safe (a cell starting = + - @ tab CR gets a leading ', for spreadsheets; import removes it) "
    "| exact (verbatim, for other tools)."
)


@app.command("export")
def export_cmd(
    file: str = typer.Argument(..., help="Output file; the format follows the extension."),
    fmt: str | None = typer.Option(None, "--format", help="jsonl | csv | parquet (default: from the extension)."),
    split: str = typer.Option("test", "--split", help=SPLIT_HELP),
    status: str = typer.Option("gold", "--status", help="gold | candidate | rejected | all."),
    edition: str = typer.Option("paper", "--edition", help=f"{edition_choices()} (gold test samples of that edition)."),
    label_source: str | None = typer.Option(None, "--label-source", help="Only samples with this label provenance."),
    csv_mode: str = typer.Option("safe", "--csv-mode", help=CSV_MODE_HELP),
    csv_exact: bool = typer.Option(False, "--csv-exact", help=CSV_EXACT_HELP),
    blind: bool = typer.Option(
        False,
        "--blind",
        help="Only sample_id, category, task, request and response, in sample-id order: the file to give "
        "the system under test (no label, label source, pair id, source, spans or meta).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Export stored samples as a pair file, always with sample_id, source and meta (lossless round trip);
    with --blind, only what a system under test may see."""
    from automonitor.data.pairfiles.export import check_export_options, export_pairs

    from automonitor.vocab import LABEL_SOURCES
    from store.queries.samples import check_edition

    check_edition(edition)
    if label_source is not None and label_source not in LABEL_SOURCES:
        from automonitor.errors import InputError

        raise InputError(
            f"unknown label source {label_source!r} (use one of: {', '.join(LABEL_SOURCES)})", field="--label-source"
        )
    csv_mode = csv_mode_of(csv_mode, csv_exact)
    check_export_options(file, fmt=fmt, split=split, status=status)
    result = export_pairs(
        open_store(),
        file,
        fmt=fmt,
        split=split,
        status=status,
        edition=edition,
        label_source=label_source,
        csv_mode=csv_mode,
        blind=blind,
    )
    if json_out:
        emit_json(result)
    else:
        typer.echo(
            f"{result['file']}: wrote {result['rows']} samples in {result['pairs']} pair(s) "
            f"({result['format']}, status {status}, split {split})"
        )
