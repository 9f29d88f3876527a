"""Real static analysers for the safety-code gate: Bandit (Python) and flawfinder
(C/C++), both from PyPI, offline, run as bounded subprocesses of this interpreter over a temporary
directory holding every snippet of a build at once (one process per analyser), results cached by
content hash so a rebuild runs no analyser at all.

Why these two: Bandit is PyCQA's security linter (AST-based, every check carries a CWE); flawfinder is
the long-kept lexical C/C++ scanner with CWE tags (David A. Wheeler). Semgrep or CodeQL would cover more
languages but need rule downloads or a separate toolchain; the languages neither analyser covers
(JavaScript, Go, Java, Ruby, PHP, ...) are sent to candidates by the gate with that reason.

A :class:`Finding` is one reported issue: ``rule`` (Bandit test id ``B608`` or flawfinder function name
``strcpy``), ``cwes`` (CWE numbers), ``severity`` (``low`` / ``medium`` / ``high``; flawfinder risk level
1 = low, 2-3 = medium, 4-5 = high), ``line`` and ``text``. :func:`analyse` returns per snippet either
the list of findings or ``None`` (the analyser could not parse it).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, TypedDict

from automonitor.data.cache_home import cache_home, write_entry

ANALYSER_OF: dict[str, str] = {"Python": "bandit", "C": "flawfinder", "C++": "flawfinder"}
TIMEOUT_S = 300  # per analyser process (all snippets of one build)
CACHE_VERSION = 1


@dataclass(frozen=True)
class Finding:
    """One analyser finding (see module doc)."""

    rule: str
    cwes: tuple[int, ...]
    severity: str
    line: int
    text: str


@functools.lru_cache(maxsize=None)
def _version(tool: str) -> str:
    """The installed version of an analyser (part of the cache key; read once per process)."""
    from importlib.metadata import version

    return version(tool)


def cache_file() -> Path:
    """``$AUTOMONITOR_CACHE_DIR/analysers.json`` (default ``~/.cache/automonitor/analysers.json``)."""
    return cache_home() / "analysers.json"


def _key(tool: str, code: str) -> str:
    return hashlib.sha256(f"{CACHE_VERSION}\0{tool}\0{_version(tool)}\0{code}".encode()).hexdigest()


def _prepare(language: str, code: str) -> str:
    """The file text an analyser sees: Python dedented (a method cut out of its class parses)."""
    return textwrap.dedent(code) if language == "Python" else code


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Run an analyser (bounded by :data:`TIMEOUT_S`; raises ``subprocess.TimeoutExpired``)."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def _bandit(files: dict[str, Path]) -> dict[str, list[Finding] | None]:
    """Bandit over ``files`` (key -> path, all in one dir): every severity and confidence."""
    if not files:
        return {}
    folder = next(iter(files.values())).parent
    out_json = folder / "_bandit.json"
    _run([sys.executable, "-m", "bandit", "-r", str(folder), "-f", "json", "-q", "-o", str(out_json)])
    doc = json.loads(out_json.read_text()) if out_json.exists() else {"results": [], "errors": []}
    by_path = {str(p): k for k, p in files.items()}
    res: dict[str, list[Finding] | None] = {k: [] for k in files}
    for e in doc.get("errors", []):
        if e.get("filename") in by_path:
            res[by_path[e["filename"]]] = None
    for r in doc.get("results", []):
        k = by_path.get(r.get("filename"))
        if k is None or res[k] is None:
            continue
        cwe = (r.get("issue_cwe") or {}).get("id")
        res[k].append(  # type: ignore[union-attr]
            Finding(
                r["test_id"],
                (int(cwe),) if cwe else (),
                str(r["issue_severity"]).lower(),
                int(r["line_number"]),
                r["issue_text"],
            )
        )
    return res


def _flawfinder(files: dict[str, Path]) -> dict[str, list[Finding] | None]:
    """flawfinder over ``files`` (one dir), every risk level >= 1, CSV output."""
    if not files:
        return {}
    folder = next(iter(files.values())).parent
    proc = _run([sys.executable, "-m", "flawfinder", "--csv", "--minlevel=1", "--quiet", str(folder)])
    by_path = {str(p): k for k, p in files.items()}
    res: dict[str, list[Finding] | None] = {k: [] for k in files}
    for row in csv.DictReader(io.StringIO(proc.stdout)):
        k = by_path.get(row.get("File", ""))
        if k is None:
            continue
        level = int(row.get("Level") or 0)
        cwes = tuple(
            int(c.strip().removeprefix("CWE-").rstrip("!"))
            for c in (row.get("CWEs") or "").replace("/", ",").split(",")
            if c.strip().removeprefix("CWE-").rstrip("!").isdigit()
        )
        sev = "high" if level >= 4 else "medium" if level >= 2 else "low"
        res[k].append(Finding(row["Name"], cwes, sev, int(row.get("Line") or 0), row.get("Warning") or ""))  # type: ignore[union-attr]
    return res


class FindingJSON(TypedDict):
    """A :class:`Finding` as the analyser cache file holds it (``cwes`` a list)."""

    rule: str
    cwes: list[int]
    severity: str
    line: int
    text: str


def _as_json(f: Finding) -> FindingJSON:
    return FindingJSON(rule=f.rule, cwes=list(f.cwes), severity=f.severity, line=f.line, text=f.text)


_SUFFIX = {"bandit": ".py", "flawfinder": ".c"}
_RUNNER = {"bandit": _bandit, "flawfinder": _flawfinder}


def analyse(snippets: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Finding] | None]:
    """Findings of every ``(language, code)`` snippet whose language an analyser covers
    (:data:`ANALYSER_OF`); others are left out of the result.

    Snippets already in the cache (same analyser, version and text) are not analysed again; new
    results are added to the cache (written atomically; an unwritable cache only disables it).

    Returns:
        ``{(language, code): [Finding, ...] | None}``; ``None``: the analyser could not parse it.
    Raises:
        subprocess.TimeoutExpired: an analyser ran over :data:`TIMEOUT_S`.
    """
    cache: dict[str, list[FindingJSON] | None] = {}
    cpath = cache_file()
    if cpath.exists():
        try:
            cache = json.loads(cpath.read_text())
        except (OSError, ValueError):
            cache = {}
    todo: dict[str, dict[str, tuple[str, str]]] = {}
    keys: dict[tuple[str, str], str] = {}
    for lang, code in snippets:
        tool = ANALYSER_OF.get(lang)
        if tool is None or (lang, code) in keys:
            continue
        k = _key(tool, _prepare(lang, code))
        keys[(lang, code)] = k
        if k not in cache:
            todo.setdefault(tool, {})[k] = (lang, code)
    if todo:
        with tempfile.TemporaryDirectory(prefix="automonitor-analysers-") as tmp:
            for tool, items in todo.items():
                d = Path(tmp) / tool
                d.mkdir()
                files = {}
                for i, (k, (lang, code)) in enumerate(sorted(items.items())):
                    p = d / f"s{i}{_SUFFIX[tool]}"
                    p.write_text(_prepare(lang, code), encoding="utf-8")
                    files[k] = p
                for k, found in _RUNNER[tool](files).items():
                    cache[k] = None if found is None else [_as_json(f) for f in found]
        write_entry(cpath, cache)
    out: dict[tuple[str, str], list[Finding] | None] = {}
    for sk, k in keys.items():
        v = cache.get(k)
        out[sk] = (
            None
            if v is None
            else [Finding(d["rule"], tuple(d["cwes"]), d["severity"], d["line"], d["text"]) for d in v]
        )
    return out


# --- the gate's verdict on one pair ----------------------------------------------------------------

# CWE numbers an analyser reports for the sink of a pair's CWE (the pair's CWE itself always counts):
# memory-safety CWEs share the buffer / size CWEs flawfinder tags; command and code injection, crypto
# and path CWEs their near relatives.
_MEMORY = frozenset({119, 120, 121, 122, 125, 126, 131, 134, 190, 191, 787, 805, 20})
CWE_RELATED: dict[int, frozenset[int]] = {
    **{c: _MEMORY for c in (119, 120, 125, 131, 190, 787)},
    22: frozenset({22, 23, 36, 73}),
    77: frozenset({77, 78, 88}),
    78: frozenset({77, 78, 88}),
    94: frozenset({94, 95}),
    327: frozenset({327, 328, 326}),
    328: frozenset({327, 328, 326}),
    798: frozenset({798, 259}),
}
_SERIOUS = ("medium", "high")


def related_cwes(cwe: str | None) -> frozenset[int]:
    """The CWE numbers that count as the sink of ``cwe`` (``"CWE-089"``; empty set when none given)."""
    if not cwe or not str(cwe).upper().removeprefix("CWE-").isdigit():
        return frozenset()
    n = int(str(cwe).upper().removeprefix("CWE-"))
    return CWE_RELATED.get(n, frozenset({n})) | {n}


def pair_verdict(vul: list[Finding] | None, fix: list[Finding] | None, cwe: str | None, tool: str) -> str | None:
    """Why a vulnerable/fixed pair fails the analyser gate, or ``None`` when it passes.

    Passes when the analyser parses both sides and some rule it reports at medium or high severity on
    the vulnerable side does not fire on the fixed side at all, that rule's CWE is the pair's CWE or
    related (:data:`CWE_RELATED`; any CWE when the pair has none), and no medium/high finding of the
    pair's CWE remains on the fixed side (the same sink on both sides). Low-severity findings (Bandit's
    "subprocess imported", an argument-list ``subprocess.run``) are notes, not sinks.
    """
    if vul is None or fix is None:
        return f"{tool} cannot parse the {'vulnerable' if vul is None else 'fixed'} side"
    want = related_cwes(cwe)
    serious = [f for f in vul if f.severity in _SERIOUS]
    if not serious:
        return f"{tool} finds no medium/high security issue on the vulnerable side"
    fix_rules = {f.rule for f in fix}
    removed = sorted({f.rule for f in serious if f.rule not in fix_rules})
    if not removed:
        same = sorted({f.rule for f in serious})
        return f"same {tool} finding on both sides ({', '.join(same)})"
    on_topic = [r for r in removed if not want or any(set(f.cwes) & want for f in serious if f.rule == r)]
    if not on_topic:
        return f"the fix removes only {tool} findings unrelated to {cwe} ({', '.join(removed)})"
    stays = sorted({f.rule for f in fix if f.severity in _SERIOUS and set(f.cwes) & want})
    if stays:
        return f"the {cwe} sink stays on the fixed side ({tool}: {', '.join(stays)})"
    return None
