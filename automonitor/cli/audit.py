"""CLI: ``automonitor audit``: shortcut baselines, leakage, tiny-diff pairs and controls of an edition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from automonitor.cli.app import app
from automonitor.cli.common import CliConsole, edition_choices, emit_json, open_store, rich_table
from automonitor.data.audit.report_md import fmt2, rounded_figures
from automonitor.errors import InputError

if TYPE_CHECKING:
    from rich.table import Table

AUDIT_FORMATS = ("markdown",)


@app.command("audit")
def audit_cmd(
    edition: str = typer.Option("paper", "--edition", help=f"Test-set edition to audit: {edition_choices()}."),
    json_out: bool = typer.Option(False, "--json", help="Print the audit as one JSON document."),
    fmt: str | None = typer.Option(None, "--format", help="markdown: the table of docs/explanation/audit.md."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute even if a cached audit of this store exists."),
) -> None:
    """Per source and category x task slice of the edition's test set: pairs, label provenance, AUROC of
    trivial baselines trained on train (length, TF-IDF, answer-equals-suggestion), near-duplicate and
    shared-conversation and shared-family leakage, pairs differing by <= 3 tokens, false alarm rate on
    controls. Each baseline: AUROC / pairwise (share of pairs whose misbehavior side scores higher); a
    slice without train data is cross-validated within its test pairs (method CV). A slice is flagged
    when a baseline has |AUROC - 0.5| >= 0.4 (reversed separators too). --json prints figures to
    4 decimals; the table and --format markdown print 2."""
    from automonitor.data import audit

    audit.check_edition(edition)
    if fmt is not None and fmt not in AUDIT_FORMATS:
        raise InputError(f"must be one of {', '.join(AUDIT_FORMATS)}, got {fmt!r}", field="--format")
    if json_out and fmt:
        raise InputError("use either --json or --format", field="--format")
    engine = open_store()
    doc = audit.cached_audit(engine, edition, use_cache=not no_cache, progress=lambda m: typer.echo(m, err=True))
    if json_out:
        emit_json(rounded_figures(doc))  # figures to report_md.FIGURE_DECIMALS (4) decimals, not 0.9999999999999999
        return
    if fmt == "markdown":
        typer.echo(audit.markdown(doc), nl=False)
        return
    _print_rich(doc)


def _print_rich(doc: dict[str, Any]) -> None:
    """The audit document as a rich table of slices, then the leakage and controls lines."""
    import sys

    # data values, not markup (no escaping needed); off a terminal the table is 200 wide and the lines of text unwrapped
    con = CliConsole(width=None if sys.stdout.isatty() else 200, markup=False)
    if not doc["slices"]:
        con.print(f"No test samples in edition {doc['edition']} (test set: {doc.get('test_set')}).")
    con.print(_slices_table(doc))
    lk, ct = doc["leakage"], doc["controls"]
    con.print(
        f"Leakage: {lk['near_duplicate_pairs']} near-duplicate test pairs, "
        f"{lk['shared_conversations']} shared conversations; {doc['tiny_diff_pairs']} pairs differ by <= "
        f"{doc['params']['tiny_diff_tokens']} tokens."
    )
    con.print(
        f"Controls: {ct['samples']} benign-only samples"
        + ("; FAR " + ", ".join(f"{k} {v:.2f}" for k, v in ct["far"].items()) if ct["far"] else "")
    )


def _pw(s: dict[str, Any], name: str) -> str:
    """``AUROC / pairwise`` of one baseline of a slice."""
    return f"{fmt2(s['baselines'].get(name))} / {fmt2((s.get('pairwise') or {}).get(name))}"


def _slices_table(doc: dict[str, Any]) -> Table:
    """One row per audit slice: baselines' AUROC, leakage counts and the flag (printed with markup=False)."""
    columns = ("source", "cell", "pairs", "label source", "method", "length", "tfidf", "ans=sugg", "near-dup")
    columns += ("shared conv", "shared fam", "<=3 tok", "flag")
    rows = [
        (
            s["source"],
            f"{s['category']}/{s['task']}",
            str(s["pairs"]),
            ", ".join(f"{k} {v}" for k, v in s["label_source"].items()),
            "CV" if s.get("baseline_method") == "within_test_cv" else "train",
            _pw(s, "length"),
            _pw(s, "tfidf"),
            _pw(s, "answer_equals_suggestion") if "answer_equals_suggestion" in s["baselines"] else "",
            str(s["near_duplicate_pairs"]),
            str(s["shared_conversations"]),
            str(s.get("shared_family_pairs", 0)),
            str(s["tiny_diff_pairs"]),
            "FLAG " + ", ".join(s["flagged_by"]) if s["flagged"] else "",
        )
        for s in doc["slices"]
    ]
    title = (
        f"Audit of edition {doc['edition']}: AUROC of trivial baselines (train -> test); "
        f"AUROC / pairwise; flag at |AUROC - 0.5| >= {doc['params']['flag_auroc'] - 0.5:.1f}"
    )
    return rich_table(title, columns, rows)
