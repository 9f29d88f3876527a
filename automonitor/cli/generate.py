"""``automonitor generate sycophancy|gaming`` (make candidate pairs with a generator model),
``generate resume RUN_ID`` (execute a pending generation run, used by the app), ``generate list``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from automonitor.cli.app import app
from automonitor.cli.common import emit_json, err_console, open_store

if TYPE_CHECKING:
    from automonitor.runs.generation.summary import GenerationSummary

# the options both recipes take
GeneratorOpt = Annotated[str, typer.Option("--generator", help="BACKEND[:MODEL]: llamacpp, openai, anthropic")]
BaseUrlOpt = Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible / Anthropic server URL")]
RawOpt = Annotated[str | None, typer.Option("--raw", help="raw sources dir (default $AUTOMONITOR_RAW)")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", help="concurrent generator calls")]

generate_app = typer.Typer(
    help="Construct candidate pairs with a generator model (the paper's recipes).", no_args_is_help=True
)
app.add_typer(generate_app, name="generate")


def _print(doc: GenerationSummary) -> None:
    err_console.print(
        f"generation {doc['generation_id']} ({doc['status']}): {doc['prompts']} prompts, "
        f"{doc['kept']} kept, {doc['candidates_added']} candidate pair{'' if doc['candidates_added'] == 1 else 's'} added; "
        f"{doc['calls']} calls, {doc['cache_hits']} cache hits, ${doc['cost_usd']:.4f}"
    )
    for reason, n in sorted(doc["dropped"].items()):
        err_console.print(f"  dropped {reason}: {n}")


def _run(json_out: bool, **spec: object) -> None:
    """Create the generation run of ``spec`` (:class:`~automonitor.runs.generation.job.GenerationSpec`
    fields: a command passes its options, named as the fields, with ``**locals()``; the spec forbids any
    other name) and execute it; print its summary."""
    from automonitor.runs.generation.engine import create_generation, execute_generation
    from automonitor.runs.generation.job import GenerationSpec

    # a generation needs an existing store (refused, exit 2, before any generator call): with a mistyped
    # AUTOMONITOR_DB it would otherwise pay for calls whose candidates land in a new empty file
    eng = open_store()
    doc = execute_generation(eng, create_generation(eng, GenerationSpec.model_validate(spec)))
    emit_json(doc) if json_out else _print(doc)


@generate_app.command("sycophancy")
def generate_sycophancy(
    generator: GeneratorOpt,
    source: str = typer.Option(..., "--source", help="bct_truthfulqa_cues | turpin_bbh | mmlu_moral_scenarios"),
    cue: str | None = typer.Option(None, "--cue", help="suggested_answer (default) | are_you_sure"),
    limit: int | None = typer.Option(None, "--limit", help="first N questions of the source"),
    samples_per_prompt: int = typer.Option(1, "--samples-per-prompt", help="cued answers sampled per question (K)"),
    base_url: BaseUrlOpt = None,
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="per answer (default 512)"),
    raw: RawOpt = None,
    concurrency: ConcurrencyOpt = 4,
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Counterfactual sycophancy filter: keep Q when the answer to Q is right and the answer to Q' = Q +
    cue is wrong and equals the cue; kept questions become candidate pairs."""
    _run(kind="sycophancy", **locals())


@generate_app.command("gaming")
def generate_gaming(
    generator: GeneratorOpt,
    source: str = typer.Option(..., "--source", help="truthfulqa | humaneval | mbpp | dfir"),
    incentive: str = typer.Option(..., "--incentive", help="boss_bonus | author_notes | tests_only | word_count"),
    limit: int | None = typer.Option(None, "--limit", help="first N tasks of the source"),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="per answer (default 768)"),
    base_url: BaseUrlOpt = None,
    raw: RawOpt = None,
    concurrency: ConcurrencyOpt = 4,
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Incentive-injected specification gaming: answer each task with and without the incentive; keep
    it when only the incentivised answer shows the invited misbehavior (code: static screen plus
    visible/held-out tests in the bubblewrap sandbox)."""
    _run(kind="gaming", **locals())


@generate_app.command("resume")
def generate_resume(
    run_id: str = typer.Argument(..., help="a pending generation run (created by the app)"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Execute a pending generation run."""
    from automonitor.runs.generation.engine import execute_generation

    doc = execute_generation(open_store(), run_id)
    emit_json(doc) if json_out else _print(doc)


@generate_app.command("list")
def generate_list(json_out: bool = typer.Option(False, "--json")) -> None:
    """Generation runs, newest first: one line per run with its id, status, recipe, generator, source, prompts, kept
    items, candidate pairs added, dropped items, start and end (the rows the app's Generation page lists).
    --json prints each run's filter statistics whole."""
    from automonitor.runs.generation.engine import list_generations
    from automonitor.views.runs import generation_list_line, generation_list_rows

    rows = list_generations(open_store())
    if json_out:
        emit_json(rows)
        return
    for row in generation_list_rows(rows):  # the rows of the Generation page's table of runs
        print(generation_list_line(row))
