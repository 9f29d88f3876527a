"""SafeCoder ``sec-new-desc`` (train + val): Safety & Permission Violations, Code.

Each record is a real CVE fix: an NL instruction (``description``, "Write a Python function to ..."),
the vulnerable function (``func_src_before``, misbehavior) and the patched one (``func_src_after``,
benign). Request = the description verbatim. Dropped: records without a description and records
whose two versions are identical after stripping. Pairs where either side exceeds
``CODE_MAX_CHARS`` stay available for train but are not eligible for the test set.
(``val/sec-desc.jsonl`` describes SVEN's val pairs; the ``sven`` importer uses it.)
"""

from __future__ import annotations

from typing import Any, Iterator

from pathlib import Path

from automonitor.data.sources.base import (
    Side,
    SourcePair,
    SourceResult,
    content_pair_id,
    language_of,
    make_pair,
    need_str,
)
from automonitor.data.sources.registry import register_source
from automonitor.jsontypes import JSONObject

NAME = "safecoder"
FOLDER = "safecoder"
CATEGORY = "safety_permission"
FILES = (
    "safecoder/data_train_val/train/sec-new-desc.jsonl",
    "safecoder/data_train_val/val/sec-new-desc.jsonl",
)
CODE_MAX_CHARS = 6000


def code_pair(obj: dict[str, Any], raw: Path, path: Path, line: int, res: SourceResult) -> tuple[str, str] | None:
    """``(vulnerable, fixed)`` source of a SafeCoder/SVEN record, or ``None`` (counted in ``res.dropped``)
    when both are equal or one is blank.

    Raises:
        InputError: ``func_src_before``/``func_src_after`` missing or not strings.
    """
    before = need_str(obj, "func_src_before", raw, path, line)
    after = need_str(obj, "func_src_after", raw, path, line)
    if before.strip() == after.strip() or not before.strip() or not after.strip():
        res.dropped["identical before/after"] += 1
        return None
    return before, after


def code_record(
    source: str, pair_id: str, request: str, before: str, after: str, relp: str, line: int, meta: dict[str, Any]
) -> SourcePair:
    """The pair of a SafeCoder/SVEN record at ``line`` of ``relp``: vulnerable ``before`` = misbehavior,
    fixed ``after`` = benign, task ``code``; ``pair_id`` is :func:`content_pair_id` (CWE prefix), the
    upstream-split id given here (``safecoder:train:112``) is kept as ``meta["upstream_id"]``; eligible for the test set only when neither side is over
    ``CODE_MAX_CHARS`` characters."""
    long = max(len(before), len(after)) > CODE_MAX_CHARS
    cwe = str(meta.get("cwe") or "").lower()
    return make_pair(
        content_pair_id(source, before, after, cwe),
        request,
        Side(before, relp, f"line {line} func_src_before"),
        Side(after, relp, f"line {line} func_src_after"),
        meta={**meta, "upstream_id": pair_id},
        eligible_test=not long,
        test_note=f"code longer than {CODE_MAX_CHARS} chars" if long else None,
        label_source="patch_pair",
    )


def add_unique(res: SourceResult, pair: SourcePair) -> None:
    """Append ``pair`` to ``res.pairs`` unless an earlier record had the same code (the same
    content pair id: upstream lists some fixes in both train and val); counted in ``res.dropped``."""
    if any(p.pair_id == pair.pair_id for p in res.pairs):
        res.dropped["duplicate record (same code as an earlier record)"] += 1
        return
    res.pairs.append(pair)


def code_lines(
    raw: Path, res: SourceResult, relnames: tuple[str, ...]
) -> Iterator[tuple[Path, str, str, int, JSONObject]]:
    """``(path, relp, split, line, record)`` for every record of the SafeCoder/SVEN JSONL files
    ``relnames`` under ``raw`` that exist (:meth:`SourceResult.found`); ``split`` is the file's folder.

    Raises:
        InputError: a malformed line (file, line named).
    """
    for relname in relnames:
        path = raw / relname
        for line, obj in res.jsonl(raw, relname):
            yield path, relname, path.parent.name, line, obj


def code_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """Shared metadata of a SafeCoder/SVEN record: CWE, language, function, file, commit."""
    fname = str(obj.get("file_name") or "")
    return {
        "cwe": str(obj.get("vul_type") or "").upper() or None,
        "language": language_of(fname),
        "func_name": obj.get("func_name"),
        "file_name": fname or None,
        "commit_link": obj.get("commit_link"),
    }


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="code", files=FILES, order=20)
def load(raw: Path) -> SourceResult:
    """Read SafeCoder ``sec-new-desc`` train and val files under ``raw`` (see module doc).

    Raises:
        InputError: a malformed line (file, line, field named).
    """
    res = SourceResult()
    for path, relp, split, line, obj in code_lines(raw, res, FILES):
        desc = obj.get("description")
        if not isinstance(desc, str) or not desc.strip():
            res.dropped["no description"] += 1
            continue
        pair = code_pair(obj, raw, path, line, res)
        if pair is None:
            continue
        meta = {**code_meta(obj), "request_from": "description"}
        add_unique(res, code_record(NAME, f"{NAME}:{split}:{line}", desc.strip(), *pair, relp, line, meta))
    return res
