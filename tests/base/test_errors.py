"""One exception root: every exception class the product defines derives from ``AutomonitorError``, and
the CLI maps the product's errors to exit codes in one table (2: bad input, unknown name, refused
permission; 1: any other product error), as the CONTRACT's exit codes say."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from automonitor.cli import EXIT_CODES, exit_code
from automonitor.errors import AutomonitorError, ChangedElsewhere, InputError, NotFound, PermissionDenied, RunBusy

REPO = Path(__file__).resolve().parents[2]


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class name) of every class in automonitor/ and store/ whose bases name an exception."""
    found = []
    for pkg in ("automonitor", "store"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            mod = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                    ast.unparse(b).endswith(("Error", "Exception", "Denied", "NotFound", "Elsewhere", "StaleRead"))
                    for b in node.bases
                ):
                    found.append((mod, node.name))
    return found


def test_every_product_exception_derives_from_the_root():
    classes = _exception_classes()
    assert len(classes) >= 10, classes
    stray = [
        f"{mod}.{name}"
        for mod, name in classes
        if not issubclass(getattr(importlib.import_module(mod), name), AutomonitorError)
    ]
    assert not stray, stray


@pytest.mark.parametrize(
    "exc,code",
    [
        (InputError("bad", field="x"), 2),
        (ChangedElsewhere("changed"), 2),
        (NotFound("no run r1"), 2),
        (PermissionDenied("admins only"), 2),
        (AutomonitorError("a product failure"), 1),
        # a run busy in another process is no bad input: the same command succeeds once that one has ended
        (RunBusy("r1", 123, "host", field="resume"), 1),
    ],
)
def test_exit_codes_come_from_one_table(exc, code):
    assert exit_code(exc) == code
    assert set(EXIT_CODES) == {InputError, NotFound, PermissionDenied, RunBusy}


def test_require_folder_refuses_a_missing_folder_and_a_folder_given_as_the_file(tmp_path):
    """Every output file (export, assignments export, report --output) is checked before any work: its folder
    must exist and the path must not be a folder; the error names the path and the option."""
    from automonitor.errors import require_folder

    require_folder(tmp_path / "out.json", field="--output")  # a file in an existing folder: fine
    with pytest.raises(InputError, match="the directory does not exist") as e:
        require_folder(tmp_path / "nope" / "out.json", field="--output")
    assert e.value.file == str(tmp_path / "nope" / "out.json") and e.value.field == "--output"
    with pytest.raises(InputError, match="it is a directory") as e:
        require_folder(tmp_path, field="--output")
    assert e.value.file == str(tmp_path)
    for empty in ("", "  "):  # report -o '' (trial): said at once, the path shown quoted
        with pytest.raises(InputError, match="an empty path") as e:
            require_folder(empty, field="--output")
        assert e.value.file == repr(empty) and e.value.field == "--output"
    assert list(tmp_path.iterdir()) == []  # nothing created
