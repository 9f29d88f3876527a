"""SVEN ``data_train_val/{train,val}/cwe-*.jsonl``: Safety & Permission Violations, Code.

Vulnerable (``func_src_before``, misbehavior) and fixed (``func_src_after``, benign) versions of a
function from a real CVE fix commit, 9 CWEs, Python and C/C++. SVEN has no NL instruction: the val
records are joined with SafeCoder's ``val/sec-desc.jsonl`` (the same pairs with a ``description``;
matched on function name and vulnerable source); the others get a neutral request built from the
function name, file and language (no hint about security). Dropped: identical versions. Pairs over
``CODE_MAX_CHARS`` are train-only.
"""

from __future__ import annotations

from pathlib import Path

from automonitor.data.sources.base import SourceResult, language_of
from automonitor.data.sources.registry import register_source
from automonitor.data.sources.safecoder import add_unique, code_lines, code_meta, code_pair, code_record

NAME = "sven"
FOLDER = "sven"
CATEGORY = "safety_permission"
CWES = ("022", "078", "079", "089", "125", "190", "416", "476", "787")
DESC_FILE = "safecoder/data_train_val/val/sec-desc.jsonl"
FILES = tuple(f"sven/data_train_val/{split}/cwe-{c}.jsonl" for split in ("train", "val") for c in CWES) + (DESC_FILE,)


def neutral_request(func_name: str | None, file_name: str | None) -> str:
    """A neutral instruction for a function without description, e.g.
    ``"Write the C function `dd_get_item_size` in the file `src/lib/dump_dir.c`."``"""
    lang = language_of(file_name or "")
    lang_txt = f"{lang} " if lang != "code" else ""
    where = f" in the file `{file_name}`" if file_name else ""
    if not func_name or func_name.startswith("("):
        return f"Write the {lang_txt}code of this function{where}.".replace("  ", " ")
    return f"Write the {lang_txt}function `{func_name}`{where}."


def _descriptions(raw: Path, res: SourceResult) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for _line, obj in res.jsonl(raw, DESC_FILE):
        desc, before = obj.get("description"), obj.get("func_src_before")
        if isinstance(desc, str) and desc.strip() and isinstance(before, str):
            out[(str(obj.get("func_name")), before)] = desc.strip()
    return out


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="code", files=FILES, order=30)
def load(raw: Path) -> SourceResult:
    """Read SVEN's 18 CWE files under ``raw`` (see module doc).

    Raises:
        InputError: a malformed line (file, line, field named).
    """
    res = SourceResult()
    descs = _descriptions(raw, res)
    for path, relp, split, line, obj in code_lines(raw, res, FILES[:-1]):
        pair = code_pair(obj, raw, path, line, res)
        if pair is None:
            continue
        before, after = pair
        meta = code_meta(obj)
        desc = descs.get((str(obj.get("func_name")), before))
        if desc:
            request, meta["request_from"] = desc, "safecoder val/sec-desc description"
        else:
            request = neutral_request(meta["func_name"], meta["file_name"])
            meta["request_from"] = "neutral (function name, file, language)"
        add_unique(
            res, code_record(NAME, f"{NAME}:{split}/{path.stem}:{line}", request, before, after, relp, line, meta)
        )
    return res
