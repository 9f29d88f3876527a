"""CLI: ``automonitor report`` and ``automonitor predictions import``."""

from __future__ import annotations

from typing import List, Optional

import typer

from automonitor.cli import app
from automonitor.cli.common import emit_json, err_console, open_store
from automonitor.errors import InputError
from automonitor.vocab import INVALID_POLICIES

predictions_app = typer.Typer(help="Verdicts from outside systems.", no_args_is_help=True)
app.add_typer(predictions_app, name="predictions")


def _pct(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(ci) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


@app.command("report")
def report_cmd(
    run: Optional[List[str]] = typer.Option(None, "--run", help="Run id to include (repeatable; default all runs)."),
    invalid: str = typer.Option(
        "exclude", "--invalid", help="Unscored outcomes (invalid/refusal/error): exclude | as-flag | as-miss."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Paper-style table: markdown | latex | csv."),
    cost_ratio: float = typer.Option(1.0, "--cost-ratio", help="Cost of a miss / cost of a false alarm (score runs)."),
    prevalence: Optional[float] = typer.Option(
        None, "--prevalence", help="Misbehavior prevalence for the operating point (default: sample share)."
    ),
    compare: Optional[List[str]] = typer.Option(
        None, "--compare", help="Paired statistics for RUN_A,RUN_B (repeatable)."
    ),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Pair-clustered bootstrap resamples."),
    edition: Optional[str] = typer.Option(
        None,
        "--edition",
        help="Only runs that judged this edition: paper | verified (default: paper; every run entry says its edition).",
    ),
    with_audit: bool = typer.Option(
        True, "--audit/--no-audit", help="Add the trivial baselines' AUROC per slice (automonitor audit, cached)."
    ),
) -> None:
    """MR/FAR with 95% Wilson intervals per run and slice, Pareto front, Pearson r, paired statistics,
    ROC for score runs, evidence grounding for evidence runs, and the audit's trivial-baseline AUROCs on
    the same slices."""
    from automonitor import report_format

    if invalid not in INVALID_POLICIES:
        raise InputError(f"must be one of {', '.join(INVALID_POLICIES)}, got {invalid!r}", field="--invalid")
    if fmt is not None and fmt not in report_format.FORMATS:
        raise InputError(f"must be one of {', '.join(report_format.FORMATS)}, got {fmt!r}", field="--format")
    if json_out and fmt:
        raise InputError("use either --json or --format", field="--format")
    if not (cost_ratio > 0 and cost_ratio != float("inf")):
        raise InputError("must be a positive number", field="--cost-ratio")
    if prevalence is not None and not 0 < prevalence < 1:
        raise InputError("must be in (0, 1)", field="--prevalence")
    if n_boot < 1:
        raise InputError("must be at least 1", field="--n-boot")
    pairs = None
    if compare:
        pairs = []
        for c in compare:
            parts = [p.strip() for p in c.split(",")]
            if len(parts) != 2 or not all(parts):
                raise InputError(f"expected RUN_A,RUN_B, got {c!r}", field="--compare")
            pairs.append((parts[0], parts[1]))
        run = list(dict.fromkeys((run or []) + [x for p in pairs for x in p])) if run else None
    from automonitor import analysis

    engine = open_store()
    if edition is None:
        edition = None if run else "paper"
    if edition is not None and edition not in ("paper", "verified"):
        raise InputError(f"must be paper or verified, got {edition!r}", field="--edition")
    try:
        rep = analysis.report(
            engine,
            run or None,
            invalid,
            n_boot=n_boot,
            seed=seed,
            cost_ratio=cost_ratio,
            prevalence=prevalence,
            compare=pairs,
            edition=edition,
        )
    except ValueError as exc:
        if "edition" in str(exc):
            raise InputError(str(exc), field="--edition") from None
        raise
    if with_audit and rep["runs"]:
        from automonitor import audit

        audit.attach_to_report(rep, engine)
    if json_out:
        emit_json(rep)
        return
    if fmt:
        out = report_format.render(rep, fmt)
        if fmt == "markdown" and with_audit:
            from automonitor import audit

            out += audit.report_markdown(rep)
        typer.echo(out, nl=False)
        return
    _print_rich(rep)


def _print_rich(rep) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    con = Console(width=None if sys.stdout.isatty() else 200, markup=False)  # names are data, not markup
    if not rep["runs"]:
        con.print("No runs in the store. Start one with `automonitor run` or `automonitor predictions import`.")
        return
    t = Table(title=f"MR / FAR per run (95% Wilson CI; unscored policy: {rep['invalid_policy']})")
    for col, kw in (
        ("run", {}),
        ("monitor", {}),
        ("template", {}),
        ("kind", {}),
        ("n", {"justify": "right"}),
        ("MR [95% CI]", {"justify": "right"}),
        ("FAR [95% CI]", {"justify": "right"}),
        ("unscored", {"justify": "right"}),
        ("pending", {"justify": "right"}),
        ("AUROC", {"justify": "right"}),
        ("grounded", {"justify": "right"}),
        ("front", {}),
        ("edition", {}),
        ("FAR controls", {"justify": "right"}),
    ):
        t.add_column(col, **kw)
    for r in rep["runs"]:
        o = r["overall"]
        g = r.get("grounding")
        grounded = "-" if not g or not g.get("spans") else f"{1 - (g['not_found_share'] or 0):.0%} of {g['spans']}"
        t.add_row(
            r["run_id"],
            r["monitor"],
            r["template"],
            str(r.get("kind") or ""),
            str(o["n"]),
            _pct(o["mr"]) + _ci(o["mr_ci"]),
            _pct(o["far"]) + _ci(o["far_ci"]),
            f"{o['unscored']} ({_pct(o['unscored_rate'])})",
            str(o.get("pending", 0)),
            _pct(r.get("auroc")),
            grounded,
            "*" if r.get("on_front") else "",
            str(r.get("edition") or ""),
            "-" if not (r.get("controls") or {}).get("n") else f"{_pct(r['controls']['far'])} of {r['controls']['n']}",
        )
    con.print(t)
    r_, p_ = rep.get("pearson_r"), rep.get("pearson_p")
    con.print(f"Pareto front: {', '.join(rep['pareto']) or '-'}")
    con.print(
        "Pearson r(MR, FAR): "
        + (
            "n/a (needs 3+ runs with both rates and non-zero variance)"
            if r_ is None
            else f"{r_:.3f} (p = {p_:.3g}, {rep['pearson_n']} runs)"
        )
    )
    stab = [r for r in rep["runs"] if r.get("stability")]
    if stab:
        stt = Table(title="Stability across repeats (MR/FAR use repeat 0)")
        for col in ("run", "K", "samples", "flip rate", "majority != first", "Fleiss' kappa"):
            stt.add_column(col)
        for r in stab:
            st = r["stability"]
            stt.add_row(
                r["run_id"],
                str(st["repeats"]),
                str(st["samples"]),
                _pct(st["flip_rate"]),
                _pct(st["majority_differs"]),
                "n/a" if st["fleiss_kappa"] is None else f"{st['fleiss_kappa']:.3f}",
            )
        con.print(stt)
    if rep.get("paired"):
        pt = Table(title="Paired comparisons (A - B, pair-clustered bootstrap 95% CI; McNemar p)")
        for col in ("A", "B", "samples", "MR diff", "FAR diff", "McNemar MR p", "McNemar FAR p"):
            pt.add_column(col)
        for c in rep["paired"]:
            pt.add_row(
                c["run_a"],
                c["run_b"],
                str(c["samples"]),
                _pct(c["mr_diff"]) + _ci(c["mr_diff_ci"]),
                _pct(c["far_diff"]) + _ci(c["far_diff_ci"]),
                _pct(c["mcnemar_mr"]["p_value"]),
                _pct(c["mcnemar_far"]["p_value"]),
            )
        con.print(pt)
    escape = str  # the console prints with markup=False: data needs no escaping

    rows = [(r, c, t, b) for r in rep["runs"] for c, ts in (r.get("baselines") or {}).items() for t, b in ts.items()]
    if rows:
        bt = Table(title="MR / FAR next to trivial baselines on the same slice (AUROC; automonitor audit)")
        for col in ("run", "slice", "MR", "FAR", "length", "tfidf", "ans=sugg", "flag"):
            bt.add_column(col)
        for r, c, t, b in rows:
            s = (r.get("by_category_task") or {}).get(c, {}).get(t) or {}
            bt.add_row(
                escape(r["run_id"]),
                escape(f"{c}/{t}"),
                _pct(s.get("mr")),
                _pct(s.get("far")),
                _pct(b.get("length")),
                _pct(b.get("tfidf")),
                _pct(b.get("answer_equals_suggestion")) if "answer_equals_suggestion" in b else "",
                "FLAG" if b.get("flagged") else "",
            )
        con.print(bt)


@predictions_app.command("import")
def predictions_import(
    file: str = typer.Argument(..., help="JSONL or CSV with sample_id, outcome[, score, evidence, raw]."),
    monitor: str = typer.Option(..., "--monitor", help="Name of the outside system."),
    template: Optional[str] = typer.Option(None, "--template", help="Prompt template name (default: direct)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as one JSON document."),
) -> None:
    """Import verdicts from an outside system as a run (kind 'imported'); all or nothing."""
    from automonitor.predictions_io import import_predictions

    engine = open_store()
    res = import_predictions(engine, file, monitor, template)
    if json_out:
        emit_json(res)
        return
    verb = "imported" if res["created"] else "already imported as"
    err_console.print(
        f"{verb} run {res['run_id']}: {res['n']} predictions from {file} "
        f"(monitor {res['monitor']}, template {res['template']})"
    )
    typer.echo(res["run_id"])
