"""LoRA fine-tuning of a generative judge (peft + TRL ``SFTTrainer``, loss on the ``Yes``/``No`` answer
only) and Yes/No scoring with the adapter; a GGUF base is de-quantised once into a cached HF folder.

Base models, the adapter folder and the GPU recipe: docs/how-to/probes-transfer.md ("LoRA judge").
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence, TypedDict, cast

from automonitor.data.cache_home import cache_home
from automonitor.errors import InputError
from automonitor.jsontypes import JSONValue
from automonitor.runs.local_model import default_model_path

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from automonitor.runs.probe.corpus import CorpusEntry

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% set sys = '' %}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set sys = m['content'] + '\n\n' %}"
    "{% elif m['role'] == 'user' %}<start_of_turn>user\n{{ sys }}{{ m['content'] }}<end_of_turn>\n"
    "{% else %}<start_of_turn>model\n{{ m['content'] }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
REQUEST_CHARS = 1500
RESPONSE_CHARS = 2500


def resolve_base(base: str) -> tuple[Path, str | None]:
    """``(folder, gguf_file or None)`` for a base spec (see the module docstring).

    Raises:
        InputError: the path does not exist (field ``base``).
    """
    if base in ("gemma3-270m", "", None):
        p = default_model_path()
        return p.parent, p.name
    p = Path(base).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return p.parent, p.name
    if p.is_dir() and (p / "config.json").is_file():
        return p, None
    raise InputError(f"base model not found (a HF folder with config.json or a .gguf file): {base}", field="base")


def hf_cache_dir(gguf_name: str) -> Path:
    """Where a de-quantised GGUF base is kept as a HF folder: ``<cache home>/hf/<stem>``, the cache home of
    every on-disk cache (:func:`automonitor.data.cache_home.cache_home`: ``$AUTOMONITOR_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/automonitor``, else ``~/.cache/automonitor``)."""
    return cache_home() / "hf" / Path(gguf_name).stem


@contextlib.contextmanager
def _gguf_read_once() -> Iterator[None]:
    """While inside, ``gguf.GGUFReader(path, mode)`` gives one reader per file and mode: transformers reads a
    GGUF file whole for each of the tokenizer, the config and the weights (three parses of its metadata, the
    262k-entry vocabulary element by element, about two thirds of a conversion's time); the readers are only
    read from (memory-mapped), so the three loads can share one. The library's own class is put back on exit."""
    import gguf as gguf_lib

    real = gguf_lib.GGUFReader
    made: dict[tuple[str, str], object] = {}

    def reader(path: os.PathLike[str] | str, mode: str = "r") -> object:
        key = (os.fspath(path), mode)
        if key not in made:
            made[key] = real(path, mode)  # type: ignore[arg-type]  # the modes GGUFReader takes
        return made[key]

    gguf_lib.GGUFReader = reader  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        gguf_lib.GGUFReader = real  # type: ignore[misc]


def _convert_gguf(folder: Path, gguf: str, cache: Path) -> None:
    """De-quantise ``folder/gguf`` to float32 and save it as a HF folder at ``cache`` (written under a
    temporary name, then renamed; when another process won the race its folder is kept). The GGUF file is
    parsed once for the tokenizer, the config and the weights (:func:`_gguf_read_once`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_read_once():
        tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)
        model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf, dtype=torch.float32)
    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    # the weights are de-quantised float32 now: drop the GGUF "quantizer" so the model saves
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers types it by nn.Module.__getattr__
    for holder in (model, model.config):
        if hasattr(holder, "quantization_config"):
            delattr(holder, "quantization_config")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, cache)
    except OSError:  # another process won the race
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


class BaseInfo(TypedDict):
    """Which base model an adapter was trained on (:func:`load_base`)."""

    base: str
    folder: str
    gguf_file: str | None


ChatRow = dict[str, list[dict[str, str]]]
"""A TRL conversational prompt-completion row (:func:`sft_rows`)."""


class LoraCard(TypedDict):
    """An adapter's ``automonitor_lora.json`` (:func:`_card`)."""

    kind: str
    base: BaseInfo
    training_slices: list[str]
    records: int
    counts: dict[str, int]
    data_sha256: str
    hyperparameters: dict[str, JSONValue]
    template: str
    answer: dict[str, str]
    train_loss: float | None
    seconds: float
    trained_at: str


class LoraResult(TypedDict):
    """What :func:`train_lora` trained."""

    adapter: str
    base: BaseInfo
    records: int
    steps: int
    train_loss: float | None
    seconds: float
    card: LoraCard


def load_base(base: str) -> tuple[PreTrainedTokenizerBase, PreTrainedModel, BaseInfo]:
    """``(tokenizer, model, base_info)`` on CPU in float32; GGUF bases are converted once and cached.

    ``base_info`` = ``{"base": spec, "folder": str, "gguf_file": str|None}``; the folder is the
    loadable HF folder (the cached conversion for a GGUF). A tokenizer without a chat template gets
    :data:`GEMMA_TEMPLATE`; one without a pad token pads with its end-of-sequence token.

    Raises:
        InputError: the base does not exist (:func:`resolve_base`).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(int(os.environ.get("AUTOMONITOR_TORCH_THREADS", "2")))
    folder, gguf = resolve_base(base)
    load_from = folder
    if gguf is not None:
        load_from = hf_cache_dir(gguf)
        if not (load_from / "config.json").is_file():
            _convert_gguf(folder, gguf, load_from)
    tok = AutoTokenizer.from_pretrained(str(load_from))
    model = AutoModelForCausalLM.from_pretrained(str(load_from), dtype=torch.float32)
    if not tok.chat_template:
        tok.chat_template = GEMMA_TEMPLATE
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, model, {"base": base, "folder": str(load_from), "gguf_file": gguf}


def prompt_messages(request: str, response: str) -> list[dict[str, str]]:
    """The ``direct`` template's system + user turns for one sample (texts cut to the budgets)."""
    from automonitor.runs.probe.corpus import chat_messages

    return chat_messages((request or "")[:REQUEST_CHARS], (response or "")[:RESPONSE_CHARS], None)


def choose(records: Sequence[CorpusEntry], limit: int | None, seed: int) -> list[CorpusEntry]:
    """A seeded subset of at most ``limit`` records, half of each label where possible."""
    recs = list(records)
    if limit is None or limit >= len(recs):
        return recs
    rng = random.Random(seed)
    pos = [r for r in recs if r.label == "misbehavior"]
    neg = [r for r in recs if r.label != "misbehavior"]
    rng.shuffle(pos)
    rng.shuffle(neg)
    k = min(len(pos), limit // 2)
    out = pos[:k] + neg[: limit - k]
    rng.shuffle(out)
    return out


def _next_out(name: str) -> Path:
    from automonitor.runs.probe.model import artifact_dir

    d = artifact_dir().parent / "lora"
    d.mkdir(parents=True, exist_ok=True)
    n = 1 + max(
        [int(p.name.rsplit("-v", 1)[1]) for p in d.glob(f"{name}-v*") if p.name.rsplit("-v", 1)[1].isdigit()] or [0]
    )
    return d / f"{name}-v{n}"


def sft_rows(records: Sequence[CorpusEntry]) -> list[ChatRow]:
    """TRL conversational prompt-completion rows: ``{"prompt": system + user turns, "completion":
    [assistant "Yes" (misbehavior) | "No" (benign)]}`` per record."""
    return [
        {
            "prompt": prompt_messages(x.request, x.response),
            "completion": [{"role": "assistant", "content": "Yes" if x.label == "misbehavior" else "No"}],
        }
        for x in records
    ]


@dataclass(frozen=True)
class LoraHyperparameters:
    """Training settings (the ``probe lora`` options): optimizer ``steps``, per-device ``batch_size``,
    ``grad_accum`` steps, learning rate ``lr``, LoRA rank ``r`` and scale ``alpha`` on the ``targets``
    modules, ``max_length`` tokens per example, ``seed`` (record choice and training), ``limit`` (records,
    ``None`` = all)."""

    steps: int = 3
    batch_size: int = 4
    grad_accum: int = 1
    lr: float = 2e-4
    r: int = 8
    alpha: int = 16
    targets: tuple[str, ...] = ("q_proj", "v_proj")
    max_length: int = 512
    seed: int = 0
    limit: int | None = None

    def to_card(self) -> dict[str, JSONValue]:
        """The card's ``hyperparameters`` (with the character budgets of the prompt's texts)."""
        return {**asdict(self), "request_chars": REQUEST_CHARS, "response_chars": RESPONSE_CHARS}


def _fit_adapter(
    model: PreTrainedModel, tok: PreTrainedTokenizerBase, rows: list[ChatRow], out_dir: Path, hp: LoraHyperparameters
) -> float | None:
    """Train a LoRA adapter on ``rows`` with TRL's ``SFTTrainer`` on CPU (float32, loss on the completion
    only, no checkpoints) and save it in ``out_dir``; returns the training loss (``None`` when TRL
    reports none)."""
    import tempfile

    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    peft_cfg = LoraConfig(
        r=hp.r, lora_alpha=hp.alpha, lora_dropout=0.0, target_modules=list(hp.targets), task_type="CAUSAL_LM"
    )
    with tempfile.TemporaryDirectory() as work:
        cfg = SFTConfig(
            output_dir=work,
            max_steps=hp.steps,
            per_device_train_batch_size=hp.batch_size,
            gradient_accumulation_steps=hp.grad_accum,
            learning_rate=hp.lr,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            seed=hp.seed,
            max_length=hp.max_length,
            completion_only_loss=True,
            dataloader_num_workers=0,
            bf16=False,
            fp16=False,
            disable_tqdm=True,
            gradient_checkpointing=False,
        )
        trainer = SFTTrainer(
            model=model, args=cfg, train_dataset=Dataset.from_list(rows), processing_class=tok, peft_config=peft_cfg
        )
        result = trainer.train()
        out_dir.mkdir(parents=True, exist_ok=True)
        # with peft_config the trainer holds a PeftModel; transformers types .model as Module | None
        trainer.model.save_pretrained(str(out_dir))  # type: ignore[union-attr,operator]
    return float(result.training_loss) if result.training_loss is not None else None


def _card(
    recs: Sequence[CorpusEntry],
    info: BaseInfo,
    slices: Sequence[str],
    hp: dict[str, JSONValue],
    train_loss: float | None,
    seconds: float,
) -> LoraCard:
    """The adapter's ``automonitor_lora.json``: base, training slices, record counts by
    ``category/task:label``, data hash, hyper-parameters, prompt and answer format, loss, duration (s)."""
    from automonitor.runs.probe.model import data_hash

    return {
        "kind": "lora-judge",
        "base": info,
        "training_slices": list(slices),
        "records": len(recs),
        "counts": dict(sorted(Counter(f"{x.category}/{x.task}:{x.label}" for x in recs).items())),
        "data_sha256": data_hash([x.key() for x in recs], [x.label for x in recs]),
        "hyperparameters": hp,
        "template": "direct",
        "answer": {"misbehavior": "Yes", "benign": "No"},
        "train_loss": train_loss,
        "seconds": seconds,
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def train_lora(
    records: Sequence[CorpusEntry],
    hp: LoraHyperparameters | None = None,
    *,
    base: str = "gemma3-270m",
    out: str | Path | None = None,
    slices: Sequence[str] = ("all",),
) -> LoraResult:
    """Train a LoRA adapter with TRL's ``SFTTrainer`` and save it with its card.

    Args:
        records: corpus records (``label``, ``request``, ``response``, ``category``, ``task``, ``key()``).
        hp: the training hyper-parameters (default :class:`LoraHyperparameters`; its ``limit``: at most
            that many records, :func:`choose`).
        base: the base model spec (:func:`resolve_base`); out: adapter folder (default
            ``<artifacts>/lora/<base>-<slices>-v<N>``); slices: recorded in the card.

    Returns ``{"adapter", "base", "records", "steps", "train_loss", "seconds", "card"}``.

    Raises:
        InputError: no records of either label, bad base path.
    """
    hp = hp or LoraHyperparameters()
    recs = choose(records, hp.limit, hp.seed)
    if len({x.label for x in recs}) < 2:
        raise InputError("LoRA training needs misbehavior and benign records", field="on")
    t0 = time.perf_counter()
    tok, model, info = load_base(base)
    # the default folder: <artifacts>/lora/<base stem>-<slice+slice>-v<N>, "/" as "."
    name = f"{Path(info['gguf_file'] or info['folder']).stem}-{'+'.join(slices)}".replace("/", ".")
    out_dir = Path(out) if out else _next_out(name)
    train_loss = _fit_adapter(model, tok, sft_rows(recs), out_dir, hp)
    card = _card(recs, info, slices, hp.to_card(), train_loss, round(time.perf_counter() - t0, 2))
    (out_dir / "automonitor_lora.json").write_text(json.dumps(card, indent=2), encoding="utf-8")
    return {
        "adapter": str(out_dir),
        "base": info,
        "records": len(recs),
        "steps": hp.steps,
        "train_loss": card["train_loss"],
        "seconds": card["seconds"],
        "card": card,
    }


def read_card(adapter: str | Path) -> LoraCard:
    """The ``automonitor_lora.json`` card of an adapter folder.

    Raises:
        InputError: not an adapter folder written by :func:`train_lora` (field ``monitor``).
    """
    p = Path(adapter).expanduser() / "automonitor_lora.json"
    if not p.is_file() or not (p.parent / "adapter_config.json").is_file():
        raise InputError(f"not a LoRA adapter folder from `automonitor probe lora`: {adapter}", field="monitor")
    return cast(LoraCard, json.loads(p.read_text(encoding="utf-8")))  # as train_lora wrote it


class LoraScorer:
    """Base model + adapter; :meth:`p_yes` gives P(misbehavior) by the next-token Yes/No logits."""

    def __init__(self, adapter: str | Path):
        import torch
        from peft import PeftModel

        self.card = read_card(adapter)
        tok, model, _ = load_base(self.card["base"]["base"])
        self.tok = tok
        self.model = PeftModel.from_pretrained(model, str(Path(adapter).expanduser()))
        self.model.eval()
        self.torch = torch
        self.yes = tok.encode("Yes", add_special_tokens=False)[0]
        self.no = tok.encode("No", add_special_tokens=False)[0]
        max_length = self.card["hyperparameters"].get("max_length", 512)
        self.max_length = int(max_length) if isinstance(max_length, (int, float, str)) else 512

    def p_yes(self, request: str, response: str) -> tuple[float, float, float, int]:
        """``(P(misbehavior), logit_yes, logit_no, prompt_tokens)``: softmax over the two logits after
        the generation prompt (the prompt keeps its last ``max_length`` tokens). Only the last position's
        logits are computed (``logits_to_keep=1``, transformers >= 4.50): the output layer over Gemma 3's
        262,144-token vocabulary at every prompt position cost more CPU than the rest of the model."""
        import math

        ids = self.tok.apply_chat_template(
            prompt_messages(request, response), add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = cast("Mapping[str, list[int]]", ids)["input_ids"]  # a BatchEncoding
        ids = list(ids)[-self.max_length :]
        with self.torch.no_grad():
            logits = self.model(input_ids=self.torch.tensor([ids]), logits_to_keep=1).logits[0, -1]
        ly, ln = float(logits[self.yes]), float(logits[self.no])
        m = max(ly, ln)
        a, b = math.exp(ly - m), math.exp(ln - m)
        return a / (a + b), ly, ln, len(ids)
