"""Run kinds, run statuses and error kinds are the vocabulary's ``Literal`` types, not bare strings: mypy
(``strict_equality``) rejects a comparison or an assignment outside them, and every string the source
compares with or assigns to a run's ``kind`` / ``status`` or a prediction's ``error_kind`` is one of them
(an AST scan: it also covers the functions mypy does not check, those without annotations)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import get_args

from automonitor import vocab

REPO = Path(__file__).resolve().parents[2]


def test_error_kinds_have_one_home():
    assert set(vocab.TRANSIENT_KINDS) < set(vocab.ERROR_KINDS)
    assert set(get_args(vocab.BatchErrorKind)) == set(vocab.BATCH_ERROR_KINDS) < set(vocab.ERROR_KINDS)
    assert {"permanent", "internal", "batch_malformed", "batch_missing"} <= set(vocab.ERROR_KINDS)
    # the batch how-to lists every batch kind (the package docstring, which once left out batch_malformed,
    # now points there)
    import automonitor.runs.batch as batch
    from pathlib import Path

    howto = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "combined-and-batch.md"
    assert "docs/how-to/combined-and-batch.md" in (batch.__doc__ or "")
    assert all(f"`{k}`" in howto.read_text(encoding="utf-8") for k in vocab.BATCH_ERROR_KINDS)


def test_mypy_rejects_a_kind_status_or_error_kind_outside_the_vocabulary(tmp_path):
    """The project's mypy settings (pyproject) flag ``kind == "not-a-kind"`` (comparison-overlap, from
    ``strict_equality``) and a bad assignment; the right spelling passes. A snippet on the vocabulary
    only, so mypy runs in seconds (``Run.kind`` / ``Run.status`` are annotated with these very types:
    ``tests/store/test_store.py``)."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from automonitor.vocab import ErrorKind, RunKind, RunStatus\n"
        "\n"
        "\n"
        "def f(kind: RunKind, status: RunStatus, error: ErrorKind) -> bool:\n"
        '    ok: RunStatus = "cancelled"\n'
        '    bad: RunStatus = "canceled"\n'
        '    return kind == "not-a-kind" or error == "batch_cancelled" or status in ("finished", "done")\n'
        "\n"
        "\n"
        "def g(kind: RunKind) -> bool:\n"
        '    return kind == "generation"\n'
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            str(snippet),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line.split("snippet.py:", 1)[1] for line in r.stdout.splitlines() if "snippet.py:" in line]
    assert r.returncode == 1, r.stdout + r.stderr
    assert any(line.startswith("6:") and "[assignment]" in line for line in lines), lines
    assert any(line.startswith("7:") and "not-a-kind" in line and "[comparison-overlap]" in line for line in lines)
    assert any(line.startswith("7:") and "batch_cancelled" in line for line in lines), lines
    assert not any(line.startswith(("5:", "11:")) for line in lines), lines  # the right spellings pass


# ------------------------------------------------------------------------------ the source scan

_FIELDS = {"kind": "run kind", "status": "run status", "error_kind": "error kind"}


def _is_run(receiver: str) -> bool:
    """Whether ``receiver`` (source text) is a run: ``run``, ``Run``, ``self.run``, ``run_row``, ``run.c``, ... (a
    sample's or a probe's ``status`` / ``kind`` are other vocabularies)."""
    parts = receiver.split(".")
    if len(parts) > 1 and parts[-1] == "c":  # a SQLAlchemy table's columns: ``run.c.kind`` (store.tables)
        parts = parts[:-1]
    last = parts[-1]
    return last in ("Run", "run") or last.startswith("run_") or last.endswith("_run")


def _field(node: ast.AST) -> tuple[str, str] | None:
    """``(field, receiver)`` when ``node`` reads ``kind`` / ``status`` / ``error_kind`` (``x.kind``,
    ``x["kind"]``, ``x.get("kind")``, ``col(Run.kind)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "col" and node.args:
        return _field(node.args[0])
    if isinstance(node, ast.Attribute) and node.attr in _FIELDS:
        return node.attr, ast.unparse(node.value)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in _FIELDS:
        return str(node.slice.value), ast.unparse(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in _FIELDS
    ):
        return str(node.args[0].value), ast.unparse(node.func.value)
    return None


def _strings(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def _uses(tree: ast.AST) -> list[tuple[int, str, str]]:
    """``(line, field, string)`` for every string literal the module compares with or assigns to a run's
    kind or status or to an error kind, or passes as one (``release(status=...)``, ``finish_run``,
    ``Run(kind=..., status=...)``, ``add_run(kind=..., status=...)``, ``error_row(kind)``, a dict's ``"error_kind"``)."""
    out: list[tuple[int, str, str]] = []

    def add(line: int, found: tuple[str, str] | None, value: ast.AST | None) -> None:
        if found and (found[0] == "error_kind" or _is_run(found[1])):
            out.extend((line, found[0], s) for s in _strings(value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for a in sides:
                for b in sides:
                    if a is not b:
                        add(node.lineno, _field(a), b)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                add(node.lineno, _field(t), node.value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "error_kind":
                    add(node.lineno, ("error_kind", ""), v)
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func).split(".")[-1]
            if name == "error_row" and node.args:
                add(node.lineno, ("error_kind", ""), node.args[0])
            if name in ("release", "finish_run", "_finish") and len(node.args) >= 3:
                add(node.lineno, ("status", "run"), node.args[2])
            for kw in node.keywords:
                if kw.arg in ("kind", "status") and (name in ("Run", "add_run", "release", "finish_run", "_finish")):
                    add(node.lineno, (kw.arg, "run"), kw.value)
    return out


def _scan(roots: list[Path]) -> tuple[list[str], int]:
    allowed = {"kind": set(vocab.RUN_KINDS), "status": set(vocab.RUN_STATUSES), "error_kind": set(vocab.ERROR_KINDS)}
    bad, seen = [], 0
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            if "migrations" in path.parts:
                continue
            where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
            for line, field, value in _uses(ast.parse(path.read_text(encoding="utf-8"))):
                seen += 1
                if value not in allowed[field] and value != "":  # "" = no status (a label's quiet case)
                    bad.append(f"{where}:{line} {value!r} is no {_FIELDS[field]}")
    return bad, seen


def test_every_kind_status_and_error_kind_literal_in_the_source_is_in_the_vocabulary():
    bad, seen = _scan([REPO / "automonitor", REPO / "store", REPO / "pages"])
    assert not bad, "\n".join(bad)
    assert seen >= 50, seen  # the scan sees the run record's sites (status.py, lease.py, the queries, ...)


def test_the_scan_sees_a_typo(tmp_path):
    """The scan above is not vacuous: a misspelt status, kind or error kind is reported."""
    mod = tmp_path / "typo.py"
    mod.write_text(
        "def f(run, engine, meta):\n"
        '    if run.status == "canceled" or run.kind in ("measured", "live"):\n'
        '        release(engine, run.id, status="done")\n'
        '    return {"error_kind": "batch_cancelled"}, meta.get("error_kind") == "timeout"\n'
    )
    bad, seen = _scan([mod])
    assert seen == 6 and len(bad) == 4, (seen, bad)
    assert all(w in "\n".join(bad) for w in ("'canceled'", "'live'", "'done'", "'batch_cancelled'"))
