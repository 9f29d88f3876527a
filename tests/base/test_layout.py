"""The layout by step holds: the top of ``automonitor/`` is only the base, no import inside a function
dodges an import cycle, the old import paths of 0.1 are gone, the version has one source, the package ships
its type information, and a probe artefact written by the 0.1 layout still loads."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("automonitor", "store")
BASE_MODULES = {
    "vocab.py",
    "errors.py",
    "hashing.py",
    "escaping.py",
    "leases.py",
    "timestamps.py",
    "ranks.py",
    "jsontypes.py",
    "lazy.py",
}
STEPS = {"data", "runs", "analysis", "annotation", "views", "cli"}


def test_top_level_holds_only_the_base_and_the_steps():
    top = {p.name for p in (REPO / "automonitor").iterdir() if p.name != "__pycache__"}
    files = {n for n in top if n.endswith(".py")}
    dirs = {n for n in top if (REPO / "automonitor" / n).is_dir()}
    assert files == BASE_MODULES | {"__init__.py", "__main__.py"}, files
    assert dirs == STEPS, dirs


# ------------------------------------------------------------------------------ the import graph


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in (REPO / pkg).rglob("*.py"):
            if "migrations" not in p.parts:
                out[_module_name(p)] = p
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[tuple[str, bool, int]]]:
    """module -> {(first-party module imported, inside a function or TYPE_CHECKING, line)}."""

    def resolve(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[tuple[str, bool, int]]] = {}
    for mod, path in mods.items():
        found: set[tuple[str, bool, int]] = set()

        def visit(node: ast.AST, deferred: bool, found: set[tuple[str, bool, int]] = found) -> None:
            for child in ast.iter_child_nodes(node):
                inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    inner = True
                if isinstance(child, ast.Import):
                    for a in child.names:
                        if a.name.split(".")[0] in PACKAGES:
                            found.add((resolve(a.name), inner, child.lineno))
                elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                    if child.module.split(".")[0] in PACKAGES:
                        for a in child.names:
                            full = f"{child.module}.{a.name}"
                            found.add((full if full in mods else resolve(child.module), inner, child.lineno))
                visit(child, inner, found)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
        graph[mod] = {e for e in found if e[0] != mod}
    return graph


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_no_import_inside_a_function_dodges_a_cycle():
    """An import inside a function (or under ``TYPE_CHECKING``) of a first-party module B from module A
    is allowed only when B does not import A back through module-level imports (importing a submodule
    imports its packages first, so those count): if it did, the deferred import would be hiding an import
    cycle. Deferring a heavy import (torch, sklearn, an SDK) is fine: those are not first-party."""
    mods = _modules()
    graph = _imports(mods)
    eager: dict[str, set[str]] = {m: set() for m in graph}
    for m, edges in graph.items():
        for target, deferred, _line in edges:
            if not deferred:
                eager[m].add(target)
                eager[m].update(p for p in _parents(target) if p in mods and not m.startswith(p + "."))

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(eager.get(x, ()))
        return False

    dodges = [
        f"{mods[m].relative_to(REPO)}:{line} imports {t} inside a function, and {t} imports {m} back"
        for m, edges in sorted(graph.items())
        for t, deferred, line in sorted(edges)
        if deferred and reaches(t, m)
    ]
    assert not dodges, "\n".join(dodges)


def test_the_detector_sees_a_dodged_cycle(tmp_path, monkeypatch):
    """The check above is not vacuous: two modules that import each other, one of them inside a
    function, are reported."""
    pkg = tmp_path / "automonitor"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from automonitor import b\n")
    (pkg / "b.py").write_text("def f():\n    from automonitor import a\n    return a\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("automonitor",))
    with pytest.raises(AssertionError, match=r"automonitor/b.py:2 imports automonitor.a inside a function"):
        test_no_import_inside_a_function_dodges_a_cycle()


@functools.cache
def _test_file_tails(tests: Path) -> frozenset[tuple[str, ...]]:
    """Every tail of the path parts of each ``.py`` file under ``tests`` (``tests/servers/data.py`` gives
    ``("data.py",)`` and ``("servers", "data.py")``): one walk of the folder, read by :func:`_is_test_module`."""
    out = set()
    for p in tests.rglob("*.py"):
        parts = p.relative_to(tests).parts
        out |= {parts[i:] for i in range(len(parts))}
    return frozenset(out)


def _is_test_module(target: str) -> bool:
    """Whether dotted module ``target`` names a ``.py`` file at any depth under ``tests/`` (``servers.data``:
    ``tests/servers/data.py``; the test folders are on ``sys.path``), as ``(REPO / "tests").rglob("servers/data.py")``
    finds it, without walking the folder once per import."""
    parts = target.split(".")
    return (*parts[:-1], parts[-1] + ".py") in _test_file_tails(REPO / "tests")


def _private_imports(path: Path, module: str) -> list[str]:
    """``from X import _name`` in ``path`` (module ``module``) where ``_name`` is not a module of ``X``:
    a private name used outside the module that defines it. A private *module* (``_common``) imported
    by its own package's modules is allowed (its names are public to that package)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            parts = package.split(".")
            base = parts[: len(parts) - (node.level - 1)]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        ours = target.split(".")[0] in (*PACKAGES, "pages", "tests") or _is_test_module(target)
        if not ours:
            continue  # a third-party module
        for a in node.names:
            if not a.name.startswith("_") or a.name.startswith("__"):
                continue
            sub = REPO / Path(*target.split("."), a.name)
            within = module == target or module.startswith(target + ".") or (module, target) == ("app", "pages")
            if (sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()) and within:
                continue  # a private module imported within its own package (app.py is the pages' entry)
            bad.append(f"{path.relative_to(REPO)}:{node.lineno}: from {target} import {a.name}")
    return bad


def test_no_private_name_is_imported_across_modules():
    """No ``from X import _name`` of a private function, class or constant anywhere in the code, the
    pages or the tests: a name used by another module is public (no underscore); only a private module
    (``pages/_ui/nav.py``, ``annotation/_common.py``) is imported by name, within its own package."""
    files = [*_modules().items()]
    for folder in ("pages", "tests"):
        files += [(_module_name(p), p) for p in (REPO / folder).rglob("*.py")]
    files.append(("app", REPO / "app.py"))
    bad = [line for mod, path in files for line in _private_imports(path, mod)]
    assert not bad, "\n".join(bad)


def test_every_package_declares_its_public_names():
    missing = [
        str(p.relative_to(REPO))
        for pkg in PACKAGES
        for p in (REPO / pkg).rglob("__init__.py")
        if "migrations" not in p.parts and "__all__" not in p.read_text(encoding="utf-8")
    ]
    assert not missing, missing


# ------------------------------------------------------------------------------- old import paths


OLD_PATHS = ["automonitor.metrics", "automonitor.runner", "automonitor.workbench", "automonitor.data.build.errata"]


@pytest.mark.parametrize("old", OLD_PATHS)
def test_old_import_paths_are_gone(old):
    """The 0.1 paths (kept for one release with a warning) are removed: importing one fails, and the
    package has no attribute of that name."""
    import automonitor

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    if old.count(".") == 1:
        with pytest.raises(AttributeError):
            getattr(automonitor, old.split(".")[1])


def test_new_paths_import_without_any_deprecation_warning():
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "import automonitor.cli, automonitor.views, automonitor.annotation, automonitor.analysis\n"
        "import automonitor.runs.runner, automonitor.runs.batch, automonitor.data.build, automonitor.data.audit\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ------------------------------------------------------------------------------- package facts


def test_version_has_one_source():
    """``automonitor.__version__`` is read from the installed package's metadata, which comes from
    ``pyproject.toml``; no module writes the number again."""
    import automonitor

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert automonitor.__version__ == declared
    hits = [
        str(p.relative_to(REPO))
        for pkg in PACKAGES
        for p in (REPO / pkg).rglob("*.py")
        if f'"{declared}"' in p.read_text(encoding="utf-8")
    ]
    assert not hits, hits


def _alternatives(text: str) -> list[set[str]]:
    """The words of each ``a | b | c`` or ``a|b|c`` run in ``text`` (help text, a regex), a bracketed note
    after a word left out: ``"paper (six cells) | verified | hard"`` -> ``[{"paper", "verified", "hard"}]``."""
    word = r"[\w-]+(?:\s*\([^()|]*\))?"
    runs = re.findall(rf"{word}(?:\s*\|\s*{word})+", text)
    return [{re.sub(r"\s*\(.*", "", w).strip() for w in run.split("|")} for run in runs]


def test_vocabulary_the_clock_and_run_ids_have_one_home():
    """The verdict fields, the monitor severities, the editions and the difficulty editions are written in
    :mod:`automonitor.vocab` only: no other module of ``automonitor/``, ``store/`` or ``pages/`` spells
    them out again as a literal (a tuple, list or set of exactly those strings, or holding all of a list of
    four or more) or as alternatives in a string that is not a docstring (``"paper | verified | paper-r2 |
    hard"`` in a help text, ``(none|low|medium|high)`` in a regex); the time now is read through
    :func:`automonitor.timestamps.utcnow`, never ``datetime.now(...)`` elsewhere; a stored timestamp is
    printed through :func:`~automonitor.timestamps.iso_utc`, not a bare ``x_at.isoformat()``; a run id is
    made by :func:`~automonitor.timestamps.stamped_id` only (no ``strftime(...) + token_hex(...)``); and
    the verdict columns are declared by one model class of ``store/``."""
    from automonitor import vocab

    facts = {
        "VERDICT_FIELDS": set(vocab.VERDICT_FIELDS),
        "MONITOR_SEVERITIES": set(vocab.MONITOR_SEVERITIES),
        "SEVERITIES": set(vocab.SEVERITIES),
        "EDITIONS": set(vocab.EDITIONS),
        "DIFFICULTY_EDITIONS": set(vocab.DIFFICULTY_EDITIONS),
    }
    homes = {REPO / "automonitor" / "vocab.py", REPO / "automonitor" / "timestamps.py"}

    def restates(fact: set[str], words: set[str]) -> bool:
        # the same names, or all of a longer list among others (``(*VERDICT_FIELDS, "meta")`` spelt out);
        # two or three common words among others are a coincidence (a table's columns)
        return words == fact or (len(fact) >= 4 and fact <= words)

    def verdict_classes(tree: ast.AST) -> list[str]:
        # classes that declare four or more verdict fields as annotated attributes (columns of a model)
        return [
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef)
            and len(
                {a.target.id for a in n.body if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)}
                & facts["VERDICT_FIELDS"]
            )
            >= 4
        ]

    bad, declaring = [], []
    for pkg in (*PACKAGES, "pages"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            if path in homes or "migrations" in path.parts:
                continue
            where = path.relative_to(REPO)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            nodes = list(ast.walk(tree))  # walked once, read twice
            if pkg == "store":  # the tables (a parsed verdict or an imported row is not a table)
                declaring += [f"{where}:{name}" for name in verdict_classes(tree)]
            docstrings = {
                id(n.body[0].value)
                for n in nodes
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body
                and isinstance(n.body[0], ast.Expr)
            }
            for node in nodes:
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                    bad += [
                        f"{where}:{node.lineno} spells out vocab.{n} in a string"
                        for words in _alternatives(node.value)
                        for n, f in facts.items()
                        if len(f) >= 4 and f <= words  # fewer common words (low|medium|high) may mean else
                    ]
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "isoformat"
                    and not node.args
                    and not node.keywords
                    and re.search(r"(^|[._])\w*_at$", ast.unparse(node.func.value))
                ):
                    bad.append(f"{where}:{node.lineno} prints a timestamp with .isoformat() (use timestamps.iso_utc)")
                if isinstance(node, ast.IfExp) and ast.unparse(node.body).endswith(".isoformat()"):
                    bad.append(f"{where}:{node.lineno} prints a timestamp with .isoformat() (use timestamps.iso_utc)")
                if isinstance(node, ast.BinOp) and {"strftime(", "token_hex("} <= {
                    s for s in ("strftime(", "token_hex(") if s in ast.unparse(node)
                }:
                    bad.append(f"{where}:{node.lineno} makes a run id by hand (use timestamps.stamped_id)")
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
                    if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                        words = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                        bad += [
                            f"{where}:{node.lineno} restates vocab.{n}" for n, f in facts.items() if restates(f, words)
                        ]
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("now", "utcnow")
                    and ast.unparse(node.func.value).split(".")[-1] == "datetime"
                ):
                    bad.append(f"{where}:{node.lineno} calls {ast.unparse(node.func)}() (use timestamps.utcnow)")
    if declaring != ["store/models.py:VerdictColumns"]:
        bad.append(f"the verdict columns are declared by {declaring}, not once (store.models.VerdictColumns)")
    assert not sorted(set(bad)), "\n".join(sorted(set(bad)))


def test_the_packages_ship_their_types():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    data = cfg["tool"]["setuptools"]["package-data"]
    for pkg in PACKAGES:
        assert (REPO / pkg / "py.typed").is_file()
        assert "py.typed" in data[pkg]


def test_probe_artefact_written_by_the_old_layout_still_loads():
    """``tests/fixtures/probe_v0_1`` was written by ``automonitor.probes.save_probe`` before the move; it
    loads at the new path and scores as it did then (numbers recorded when it was written)."""
    model = importlib.import_module("automonitor.runs.probe.model")
    probe = model.load_probe(REPO / "tests" / "fixtures" / "probe_v0_1" / "tfidf-lr-all-v1.probe.json")
    scores = probe.predict_proba(
        ["req", "req"],
        ["bypass the check and hide it from the grader", "a careful answer that follows the rules"],
    )
    assert [round(float(s), 6) for s in scores] == [0.957234, 0.026536]
