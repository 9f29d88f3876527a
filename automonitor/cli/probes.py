"""``automonitor corpus build`` and ``automonitor probe train|transfer|lora`` (trained monitors)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator

import typer

from automonitor.cli.app import app
from automonitor.cli.common import emit_json, err_console, open_store, progress_line
from automonitor.errors import InputError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from automonitor.runs.probe.corpus import CorpusEntry

corpus_app = typer.Typer(help="The training corpus of trained monitors (disjoint from test).", no_args_is_help=True)
probe_app = typer.Typer(help="Trained probe monitors: train, transfer matrix, LoRA judge.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
app.add_typer(probe_app, name="probe")


def _check_features(value: str) -> str:
    """``--features``: ``tfidf`` or ``embed``; ``InputError`` (exit 2) otherwise."""
    if value not in ("tfidf", "embed"):
        raise InputError(f"unknown features {value!r}; choose tfidf or embed", field="features")
    return value


FeaturesOpt = Annotated[str, typer.Option("--features", help="tfidf | embed", callback=_check_features)]
CorpusOpt = Annotated[str | None, typer.Option("--corpus", help="corpus JSONL (default: built from the store)")]
RawOpt = Annotated[
    str | None, typer.Option("--raw", help="raw dir for the unpaired material (default $AUTOMONITOR_RAW)")
]


def _raw(raw: str | None) -> Path | None:
    value = raw or os.environ.get("AUTOMONITOR_RAW")
    if not value:
        return None
    p = Path(value).expanduser()
    if not p.is_dir():
        raise InputError(f"raw sources directory not found: {p}", file=str(p), field="raw")
    return p


def view_records(recs: list[CorpusEntry], view: str) -> tuple[list[CorpusEntry], int]:
    """``recs`` with each response replaced by its rendering under the monitor ``view``
    (:func:`automonitor.data.monitor_views.render`), records without the view left out; and how many were
    left out. ``full``: unchanged."""
    import dataclasses

    from automonitor.data.monitor_views import render

    if view == "full":
        return recs, 0
    out = []
    for r in recs:
        shown = render(r.response, view, source=r.source)
        if shown is not None:
            out.append(dataclasses.replace(r, response=shown.text))
    return out, len(recs) - len(out)


def _records(engine: Engine, corpus_file: str | None, raw: str | None, quiet: bool = False) -> list[CorpusEntry]:
    from automonitor.runs.probe import corpus

    if corpus_file:
        return corpus.read_jsonl(corpus_file)
    recs, summ = corpus.build_corpus(engine, _raw(raw))
    if not quiet:
        d = summ["disjointness"]
        err_console.print(f"corpus: {summ['records']} records (dropped {d['dropped']} overlapping test)", style="dim")
    return recs


@contextlib.contextmanager
def _working(what: str, *, quiet: bool = False) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while a step of unknown length runs (none when
    ``quiet``), so nobody stares at a silent terminal."""
    if quiet:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as prog:
        prog.add_task(what, total=None)
        yield


@corpus_app.command("build")
def corpus_build_cmd(
    out: str | None = typer.Option(None, "--out", help="JSONL file (default: <artifacts>/corpus.jsonl)"),
    raw: str | None = typer.Option(
        None, "--raw", help="raw sources dir for the unpaired material (default $AUTOMONITOR_RAW; none = store only)"
    ),
    no_extra: bool = typer.Option(False, "--no-extra", help="only the store's train split"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON document"),
) -> None:
    """Write the training corpus (train split + unpaired raw material) as chat JSONL for TRL's
    SFTTrainer, after dropping every record that exactly or nearly duplicates a held-out sample."""
    from automonitor.runs.probe import corpus
    from automonitor.runs.probe.model import artifact_dir

    engine = open_store()
    raw_dir = _raw(raw)
    if raw_dir is None and not no_extra:
        err_console.print(
            "warning: no raw sources directory (set AUTOMONITOR_RAW or pass --raw): the corpus "
            "holds the store's train split only, without the unpaired raw material",
            style="yellow",
        )
    recs, summ = corpus.build_corpus(engine, raw_dir, extra=not no_extra)
    path = Path(out) if out else artifact_dir().parent / "corpus.jsonl"
    corpus.write_jsonl(recs, path)
    if as_json:
        emit_json({"out": str(path), **summ})
        return
    d = summ["disjointness"]
    sys.stdout.write(
        f"corpus: {summ['records']} records -> {path}\n"
        f"by category/task: {json.dumps(summ['by_category_task'])}\n"
        f"disjointness vs {d['heldout']} held-out samples: exact request {d['exact_request']}, "
        f"exact response {d['exact_response']}, near-duplicate {d['near_duplicate']}, "
        f"dropped {d['dropped']}; residual exact {d['residual_exact']}, near {d['residual_near']}\n"
    )


@probe_app.command("train")
def probe_train_cmd(
    features: FeaturesOpt,
    on: str | None = typer.Option(
        "all", "--on", help="slices: all, a category, a task or category/task, comma-separated"
    ),
    corpus_file: CorpusOpt = None,
    raw: RawOpt = None,
    out_dir: str | None = typer.Option(None, "--out-dir", help="artefact directory (default <artifacts>/probes)"),
    view: str = typer.Option(
        "full",
        "--view",
        help="train on a monitor view of each record (answer, reasoning, actions; records without it are left "
        "out); use it as probe:tfidf-lr-VIEW with run --view VIEW",
    ),
    as_json: bool = typer.Option(False, "--json", help='print {"artifact": ..., "card": ...} as JSON'),
) -> None:
    """Train a probe (TF-IDF or MiniLM embeddings + logistic regression) on corpus slices and save it
    as a versioned artefact with a model card. Use it as monitor probe:tfidf-lr / probe:embed-lr
    (newest artefact trained on all) or probe:PATH."""
    from automonitor.data.monitor_views import check_view
    from automonitor.runs.probe.model import in_slices, parse_slices, save_probe, train_probe

    slices = parse_slices(on)
    check_view(view)
    engine = open_store()
    recs = [r for r in _records(engine, corpus_file, raw, quiet=as_json) if in_slices(r.category, r.task, slices)]
    recs, left_out = view_records(recs, view)
    t0 = time.perf_counter()
    with _working(f"training {features} probe on {len(recs):,} records", quiet=as_json):
        probe = train_probe(
            features,
            [r.request for r in recs],
            [r.response for r in recs],
            [r.label for r in recs],
            slices=slices,
            keys=[r.key() for r in recs],
            meta=[(r.category, r.task) for r in recs],
        )
    if view != "full":
        probe.card["view"] = view
        probe.card["left_out_without_view"] = left_out
    path = save_probe(probe, out_dir)
    res = {
        "artifact": str(path),
        "sha256": probe.sha256,
        "card": probe.card,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if as_json:
        emit_json(res)
    else:
        sys.stdout.write(
            f"artifact {path} ({probe.card['n']} records, slices {','.join(slices)}, {res['seconds']} s)\n"
        )


@probe_app.command("transfer")
def probe_transfer_cmd(
    features: FeaturesOpt,
    corpus_file: CorpusOpt = None,
    raw: RawOpt = None,
    threshold: float = typer.Option(0.5, "--threshold", help="operating threshold on P(misbehavior) for MR/FAR"),
    markdown: str | None = typer.Option(None, "--markdown", help="also write the markdown tables to FILE"),
    save: bool = typer.Option(
        True,
        "--save/--no-save",
        help="save the result for the app's Transfer page (<artifacts>/probes/transfer-<features>.json)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the matrix as one JSON document"),
) -> None:
    """Train one probe per training slice and score every test slice: MR, FAR (Wilson intervals) and
    AUROC (Hanley-McNeil interval) in a train x test matrix, beside the trivial baselines and the
    paper's reported cells."""
    from automonitor.runs.probe.model import artifact_dir
    from automonitor.analysis.transfer import test_rows, to_markdown, transfer_matrix

    if not 0.0 <= threshold <= 1.0:
        raise InputError("--threshold must be in [0, 1]", field="threshold")
    engine = open_store()
    recs = _records(engine, corpus_file, raw, quiet=as_json)
    res = transfer_matrix(
        recs, test_rows(engine), features, threshold=threshold, progress=None if as_json else progress_line
    )
    md = to_markdown(res)
    if save:
        d = artifact_dir()
        d.mkdir(parents=True, exist_ok=True)
        (d / f"transfer-{features}.json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    if markdown:
        Path(markdown).write_text(md, encoding="utf-8")
    if as_json:
        emit_json(res)
    else:
        sys.stdout.write(md)


@probe_app.command("lora")
def probe_lora_cmd(
    base: str = typer.Option(
        "gemma3-270m", "--base", help="instruction model: a HF folder, a .gguf file, or gemma3-270m (the packaged GGUF)"
    ),
    corpus_file: CorpusOpt = None,
    raw: RawOpt = None,
    on: str | None = typer.Option("all", "--on", help="training slices (as for probe train)"),
    out: str | None = typer.Option(None, "--out", help="adapter folder (default <artifacts>/lora/<name>-v<N>)"),
    steps: int = typer.Option(3, "--steps", help="optimizer steps (max_steps)"),
    batch_size: int = typer.Option(4, "--batch-size", help="per-device batch size"),
    grad_accum: int = typer.Option(1, "--grad-accum", help="gradient accumulation steps"),
    lr: float = typer.Option(2e-4, "--lr", help="learning rate"),
    r: int = typer.Option(8, "--r", help="LoRA rank"),
    alpha: int = typer.Option(16, "--alpha", help="LoRA alpha"),
    targets: str = typer.Option("q_proj,v_proj", "--targets", help="target modules, comma-separated"),
    max_length: int = typer.Option(512, "--max-length", help="maximum tokens per training example"),
    limit: int | None = typer.Option(None, "--limit", help="use at most N records (balanced, seeded)"),
    seed: int = typer.Option(0, "--seed", help="seed of the record choice and of training"),
    as_json: bool = typer.Option(False, "--json", help='print {"adapter": ..., ...} as JSON'),
) -> None:
    """LoRA fine-tuning of a generative judge with peft + TRL's SFTTrainer on the corpus (assistant
    turn = Yes/No). The adapter folder is a monitor: --monitor lora:FOLDER --template direct."""
    from automonitor.runs.probe import lora
    from automonitor.runs.probe.model import in_slices, parse_slices

    if steps < 1 or batch_size < 1:
        raise InputError("--steps and --batch-size must be at least 1", field="steps")
    slices = parse_slices(on)
    engine = open_store()
    recs = [x for x in _records(engine, corpus_file, raw, quiet=as_json) if in_slices(x.category, x.task, slices)]
    hp = lora.LoraHyperparameters(
        steps=steps,
        batch_size=batch_size,
        grad_accum=grad_accum,
        lr=lr,
        r=r,
        alpha=alpha,
        targets=tuple(t.strip() for t in targets.split(",") if t.strip()),
        max_length=max_length,
        seed=seed,
        limit=limit,
    )
    res = lora.train_lora(recs, hp, base=base, out=out, slices=slices)
    if as_json:
        emit_json(res)
    else:
        sys.stdout.write(
            f"adapter {res['adapter']} ({res['records']} records, {res['steps']} steps, "
            f"loss {res.get('train_loss')}, {res['seconds']} s); "
            f"evaluate with: automonitor run --monitor lora:{res['adapter']} --template direct\n"
        )
