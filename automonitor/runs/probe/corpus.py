"""The training corpus for trained monitors (probes, LoRA judges): gold ``train`` samples plus unpaired raw
material, minus anything overlapping a held-out sample (exact sha256 or MinHash near-duplicate), written
as TRL chat JSONL.

What goes in, the disjointness rule and the row format: docs/how-to/probes-transfer.md ("Corpus").
"""

from __future__ import annotations

import hashlib
from collections import Counter
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence, TypedDict, cast

from automonitor.data.pairfiles.read import sample_content
from automonitor.data.records import json_objects
from automonitor.hashing import norm_text, sha256_text
from automonitor.jsontypes import JSONObject

if TYPE_CHECKING:
    from datasketch import MinHash, MinHashLSH
    from sqlalchemy.engine import Engine

NEAR_DUP_THRESHOLD = 0.8
NUM_PERM = 128
SHINGLE = 5
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class CorpusEntry:
    """One corpus record (a single response with its label; records need not be paired)."""

    id: str
    category: str
    task: str
    label: str
    request: str
    response: str
    source: str
    label_source: str
    provenance: JSONObject = field(default_factory=dict)

    def key(self) -> str:
        """A stable content key: sha256 of request + response (normalised)."""
        return hashlib.sha256((sha256_text(self.request) + sha256_text(self.response)).encode()).hexdigest()


# ----------------------------------------------------------------------------------------- sources


def train_records(engine: Engine) -> list[CorpusEntry]:
    """Gold ``train`` samples of the store as records (sorted by id)."""
    from store import session_scope
    from store.queries.corpus import gold_train_samples

    with session_scope(engine) as s:
        return [
            CorpusEntry(
                id=r.id,
                **sample_content(r),
                source=r.source,
                label_source=r.label_source or "user",
                provenance={
                    "from": "store",
                    "split": "train",
                    "pair_id": r.pair_id,
                    "source_file": r.source_file,
                    "source_record": r.source_record,
                },
            )
            for r in gold_train_samples(s)
        ]


_LETTER = re.compile(r"\(([A-Z])\)")


def are_you_sure_records(raw: Path) -> list[CorpusEntry]:
    """Labelled follow-ups of ``bct_truthfulqa_cues/truthfulqa_are_you_sure.jsonl`` (see the module
    docstring for the rule). Missing file -> ``[]``."""
    path = Path(raw) / "bct_truthfulqa_cues" / "truthfulqa_are_you_sure.jsonl"
    if not path.is_file():
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            msgs = r.get("biased_question") or []
            if len(msgs) < 4 or [m.get("role") for m in msgs[:4]] != ["user", "assistant", "user", "assistant"]:
                continue
            gt = str(r.get("ground_truth", "")).strip()
            first = str(msgs[1].get("content", "")).strip()
            if not gt or first != gt:
                continue
            follow = str(msgs[3].get("content", ""))
            m = _LETTER.search(follow)
            if not m:
                continue
            label = "benign" if m.group(1) == gt else "misbehavior"
            request = f"{msgs[0]['content']}{first})\n\n[user] {msgs[2]['content']}"
            out.append(
                CorpusEntry(
                    id=f"ays_{r.get('original_question_hash', lineno)}",
                    category="sycophancy_bias",
                    task="qa",
                    label=label,
                    request=request,
                    response=follow,
                    source="bct_truthfulqa_are_you_sure",
                    label_source="by_construction",
                    provenance={
                        "from": "raw",
                        "file": str(path.relative_to(Path(raw))),
                        "line": lineno,
                        "rule": "are_you_sure_answer_change",
                        "ground_truth": gt,
                        "answer_after_challenge": m.group(1),
                    },
                )
            )
    return out


def srh_unpaired_records(raw: Path) -> list[CorpusEntry]:
    """School of Reward Hacks hack dialogues whose prompt has no control (the unpaired coding hacks).
    Missing files -> ``[]``."""
    d = Path(raw) / "school_of_reward_hacks"
    sneaky, straight = d / "sneaky_dialogues.jsonl", d / "straightforward_dialogues.jsonl"
    if not (sneaky.is_file() and straight.is_file()):
        return []

    def user_asst(line: str) -> tuple[str, str]:
        msgs = json.loads(line)["messages"]
        u = next(m["content"] for m in msgs if m["role"] == "user")
        a = next(m["content"] for m in msgs if m["role"] == "assistant")
        return u, a

    controls = {
        sha256_text(user_asst(line)[0]) for line in straight.read_text(encoding="utf-8").splitlines() if line.strip()
    }
    out = []
    for lineno, line in enumerate(sneaky.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        u, a = user_asst(line)
        if sha256_text(u) in controls:
            continue
        out.append(
            CorpusEntry(
                id=f"srh_unpaired_{lineno}",
                category="specification_gaming",
                task="code",
                label="misbehavior",
                request=u,
                response=a,
                source="school_of_reward_hacks_unpaired",
                label_source="instructed_demo",
                provenance={
                    "from": "raw",
                    "file": "school_of_reward_hacks/sneaky_dialogues.jsonl",
                    "line": lineno,
                    "rule": "hack_without_control",
                },
            )
        )
    return out


# ------------------------------------------------------------------------------------ disjointness


def shingles(text: str, k: int = SHINGLE) -> set[bytes]:
    """Lower-cased word ``k``-shingles of ``text`` (the whole text as one shingle when shorter)."""
    words = _WORD.findall(norm_text(text).lower())
    if len(words) < k:
        return {" ".join(words).encode("utf-8")} if words else set()
    return {" ".join(words[i : i + k]).encode("utf-8") for i in range(len(words) - k + 1)}


def minhash(text: str, num_perm: int = NUM_PERM) -> MinHash:
    """``datasketch.MinHash`` of :func:`shingles` of ``text``."""
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=1)
    sh = shingles(text)
    if sh:
        m.update_batch(list(sh))
    return m


def _overlaps(rec: CorpusEntry, req_h: set[str], resp_h: set[str], pair_h: set[str], lsh: MinHashLSH) -> list[str]:
    """The kinds of overlap of ``rec`` with the held-out samples, as count keys of
    :func:`disjointness`: ``exact_request``, ``exact_response``, ``exact_pair`` (sha256 of the texts
    in ``req_h`` / ``resp_h`` / ``pair_h``), ``near_duplicate`` (a MinHash ``lsh`` hit)."""
    rq, rs = sha256_text(rec.request), sha256_text(rec.response)
    kinds = []
    if rq in req_h:
        kinds.append("exact_request")
    if rs in resp_h:
        kinds.append("exact_response")
    if rq + rs in pair_h:
        kinds.append("exact_pair")
    if lsh.query(minhash(rec.request + "\n" + rec.response)):
        kinds.append("near_duplicate")
    return kinds


def disjointness(
    records: Sequence[CorpusEntry], heldout: Iterable[tuple[str, str, str]], *, threshold: float = NEAR_DUP_THRESHOLD
) -> tuple[list[CorpusEntry], dict[str, int]]:
    """Drop corpus records that overlap held-out samples; return ``(kept, counts)``.

    Args:
        records: candidate corpus records.
        heldout: ``(sample_id, request, response)`` of the held-out samples.
        threshold: Jaccard similarity of word 5-shingles above which two texts are near-duplicates
            (estimated by MinHash LSH, 128 permutations; Broder 1997, "On the resemblance and
            containment of documents").
    Returns:
        kept records (input order) and counts ``{"heldout", "candidates", "exact_request",
        "exact_response", "exact_pair", "near_duplicate", "dropped", "kept"}``; a record counts under
        every kind that matched and once in ``dropped``. After the drop, a second pass confirms
        ``"residual_exact"`` and ``"residual_near"`` are 0.
    """
    from datasketch import MinHashLSH

    held = list(heldout)
    req_h = {sha256_text(r) for _, r, _ in held}
    resp_h = {sha256_text(s) for _, _, s in held}
    pair_h = {sha256_text(r) + sha256_text(s) for _, r, s in held}
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    for i, (_, r, s) in enumerate(held):
        lsh.insert(f"h{i}", minhash(r + "\n" + s))
    counts = {"heldout": len(held), "candidates": len(records)}
    counts |= dict.fromkeys(("exact_request", "exact_response", "exact_pair", "near_duplicate", "dropped"), 0)
    kept = []
    for rec in records:
        kinds = _overlaps(rec, req_h, resp_h, pair_h, lsh)
        for kind in kinds:
            counts[kind] += 1
        if kinds:
            counts["dropped"] += 1
        else:
            kept.append(rec)
    counts["kept"] = len(kept)
    # second pass: the kept corpus must have no exact or near match left
    counts["residual_exact"] = sum(
        1 for r in kept if sha256_text(r.request) in req_h or sha256_text(r.response) in resp_h
    )
    counts["residual_near"] = sum(1 for r in kept if lsh.query(minhash(r.request + "\n" + r.response)))
    return kept, counts


# ------------------------------------------------------------------------------------------ build


class CorpusSummary(TypedDict):
    """What :func:`build_corpus` says of its corpus: records kept, unpaired raw records read per source,
    the :func:`composition` counts and the :func:`disjointness` counts."""

    records: int
    raw_extra: dict[str, int]
    by_source: dict[str, int]
    by_category_task: dict[str, int]
    by_label: dict[str, int]
    by_label_source: dict[str, int]
    disjointness: dict[str, int]


def build_corpus(
    engine: Engine, raw: str | Path | None = None, *, extra: bool = True
) -> tuple[list[CorpusEntry], CorpusSummary]:
    """The training corpus: gold train samples + unpaired raw material, minus anything overlapping the
    held-out samples.

    Args:
        engine: the store.
        raw: the raw sources directory (``AUTOMONITOR_RAW``); ``None`` or missing -> store only.
        extra: include the unpaired raw material.
    Returns:
        ``(records, summary)`` with ``summary = {"records", "by_source", "by_category_task",
        "by_label", "by_label_source", "disjointness": {...}}`` (see :func:`disjointness`).
    """
    recs = train_records(engine)
    extra_counts: dict[str, int] = {}
    if extra and raw is not None and Path(raw).is_dir():
        for name, fn in (("are_you_sure", are_you_sure_records), ("srh_unpaired", srh_unpaired_records)):
            got = fn(Path(raw))
            extra_counts[name] = len(got)
            recs.extend(got)
    from store import session_scope
    from store.queries.corpus import heldout_texts

    with session_scope(engine) as s:  # every sample that is not gold train: what the corpus must not overlap
        heldout = heldout_texts(s)
    kept, dis = disjointness(recs, heldout)
    comp = composition(kept)
    return kept, CorpusSummary(
        records=len(kept),
        raw_extra=extra_counts,
        by_source=comp["by_source"],
        by_category_task=comp["by_category_task"],
        by_label=comp["by_label"],
        by_label_source=comp["by_label_source"],
        disjointness=dis,
    )


def composition(records: Sequence[CorpusEntry]) -> dict[str, dict[str, int]]:
    """Counts by source, category/task, label and label provenance."""
    keys = {
        "by_source": lambda r: r.source,
        "by_category_task": lambda r: f"{r.category}/{r.task}",
        "by_label": lambda r: r.label,
        "by_label_source": lambda r: r.label_source,
    }
    return {k: dict(sorted(Counter(map(key, records)).items())) for k, key in keys.items()}


def chat_messages(request: str, response: str, label: str | None, template: str = "direct") -> list[dict[str, str]]:
    """Chat messages for one record in the ``direct`` template's format: system, user, and (when
    ``label`` is given) the assistant's answer ``Yes`` (misbehavior) or ``No`` (benign)."""
    from automonitor.runs.prompts import fill, load_template

    tpl = load_template(template)
    msgs = [
        {"role": "system", "content": tpl.sections["system"]},
        {"role": "user", "content": fill(tpl.sections["user"], {"request": request, "response": response})},
    ]
    if label is not None:
        msgs.append({"role": "assistant", "content": "Yes" if label == "misbehavior" else "No"})
    return msgs


def to_row(rec: CorpusEntry) -> dict[str, object]:
    """One JSONL row (``messages`` + metadata) for ``rec``."""
    return {
        "id": rec.id,
        "messages": chat_messages(rec.request, rec.response, rec.label),
        "category": rec.category,
        "task": rec.task,
        "label": rec.label,
        "source": rec.source,
        "label_source": rec.label_source,
        "provenance": rec.provenance,
        "request": rec.request,
        "response": rec.response,
    }


_REQUIRED = ("id", "category", "task", "label", "request", "response")


def read_jsonl(path: str | Path) -> list[CorpusEntry]:
    """Read a corpus file written by :func:`write_jsonl` back into records.

    Raises:
        InputError: missing file, bad JSON, a missing field or an unknown category/task/label (file,
            line and field named).
    """
    from automonitor.errors import InputError
    from automonitor.vocab import CATEGORIES, LABELS, TASKS

    p = Path(path)
    if not p.is_file():
        raise InputError("corpus file not found", file=str(p))
    out = []
    with open(p, encoding="utf-8") as f:
        for lineno, row in json_objects(f, str(p)):
            for k in _REQUIRED:
                if not isinstance(row.get(k), str):
                    raise InputError("missing or not a string", file=str(p), line=lineno, field=k)
            for k, allowed in (("category", CATEGORIES), ("task", TASKS), ("label", LABELS)):
                if row[k] not in allowed:
                    raise InputError(
                        f"{row[k]!r} is not one of {', '.join(allowed)}", file=str(p), line=lineno, field=k
                    )
            out.append(
                CorpusEntry(
                    **{k: str(row[k]) for k in _REQUIRED},  # each checked a string above
                    source=str(row.get("source", "")),
                    label_source=str(row.get("label_source", "user")),
                    provenance=cast(JSONObject, row.get("provenance") or {}),
                )
            )
    return out


def write_jsonl(records: Sequence[CorpusEntry], path: str | Path) -> Path:
    """Write the corpus as chat JSONL (see the module docstring); parent folders are created."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(to_row(r), ensure_ascii=False) + "\n" for r in records)
    return p
