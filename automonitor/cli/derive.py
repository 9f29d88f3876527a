"""``automonitor derive ensemble|thresholds|cascade``: derived runs from existing runs (no API call)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from automonitor.cli.app import app
from automonitor.cli.common import emit_json, err_console, open_store
from automonitor.cli.logs import is_quiet

if TYPE_CHECKING:
    from automonitor.analysis.derive import DerivedRun

derive_app = typer.Typer(
    help="Combine existing runs into a derived run (ensembles, task-aware thresholds, "
    "cascades); stored like any run, no API call.",
    no_args_is_help=True,
)
app.add_typer(derive_app, name="derive")


def _out(res: DerivedRun, as_json: bool) -> None:
    """Print a derived run (JSON, or one line with a cascade's escalated share: ``12.5% escalated (15 of
    120)``); its warnings (a cascade escalating every sample or none) go to stderr unless ``--quiet``."""
    if not is_quiet():
        for w in res.get("warnings") or []:
            err_console.print(f"warning: {w}")
    if as_json:
        emit_json(res)
        return
    r = res["recipe"]
    extra = f", {r['share_escalated']:.1%} escalated ({r['escalated']} of {r['n']})" if r["kind"] == "cascade" else ""
    sys.stdout.write(f"derived run {res['run_id']}: {r['kind']} of {', '.join(r['inputs'])}, n={r['n']}{extra}\n")


@derive_app.command("ensemble")
def ensemble_cmd(
    runs: list[str] = typer.Option(..., "--runs", help="input run ids (two or more; repeat or space-separate)"),
    rule: str = typer.Option(..., "--rule", help="or | and | vote | mean"),
    k: int | None = typer.Option(None, "--k", help="votes needed (rule vote)"),
    threshold: float | None = typer.Option(None, "--threshold", help="flag when mean score >= T (rule mean)"),
    reuse: bool = typer.Option(False, "--reuse", help="return an existing derived run with the same recipe"),
    as_json: bool = typer.Option(False, "--json", help='print {"run_id", "recipe"}'),
) -> None:
    """OR, AND, k-of-n vote or mean-of-scores ensemble over runs on the same samples."""
    from automonitor.analysis import derive

    ids = [x for r in runs for x in r.replace(",", " ").split()]
    _out(derive.derive_ensemble(open_store(), ids, rule, k=k, threshold=threshold, reuse=reuse), as_json)


@derive_app.command("thresholds")
def thresholds_cmd(
    run: str = typer.Option(..., "--run", help="a score-producing run"),
    target: str = typer.Option(..., "--target", help="far<=X (min MR at FAR <= X) or cost:R (min expected cost)"),
    by: str = typer.Option("category", "--by", help="category | category_task"),
    folds: int = typer.Option(5, "--folds", help="K of the K-fold cross-validation by pair"),
    seed: int = typer.Option(0, "--seed", help="seed of the fold assignment"),
    reuse: bool = typer.Option(False, "--reuse", help="return an existing derived run with the same recipe"),
    as_json: bool = typer.Option(False, "--json", help='print {"run_id", "recipe"}'),
) -> None:
    """Task-aware thresholds per category (or category x task), cross-validated by pair."""
    from automonitor.analysis import derive

    _out(derive.derive_thresholds(open_store(), run, target, by=by, folds=folds, seed=seed, reuse=reuse), as_json)


@derive_app.command("cascade")
def cascade_cmd(
    cheap: str = typer.Option(..., "--cheap", help="cheap score run (first stage)"),
    expensive: str = typer.Option(..., "--expensive", help="expensive run (called for the undecided rest)"),
    low: float = typer.Option(..., "--low", help="cheap decides benign when score <= LOW"),
    high: float = typer.Option(..., "--high", help="cheap decides misbehavior when score >= HIGH"),
    reuse: bool = typer.Option(False, "--reuse", help="return an existing derived run with the same recipe"),
    as_json: bool = typer.Option(False, "--json", help='print {"run_id", "recipe"}'),
) -> None:
    """Cheap monitor decides the confident cases, the expensive one the rest (share escalated = cost)."""
    from automonitor.analysis import derive

    _out(derive.derive_cascade(open_store(), cheap, expensive, low, high, reuse=reuse), as_json)
