"""Lazy re-exports of a package's public names (PEP 562), shared by the packages whose ``__init__`` would
otherwise import heavy libraries (pandas, SciPy, scikit-learn) for a caller that needs one light module."""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping


def lazy_getattr(package: str, homes: Mapping[str, str], *, submodules: bool = False) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a public name is imported from its submodule on first use
    and kept in the package's namespace.

    Args:
        package: the package's ``__name__``.
        homes: public name -> the submodule (relative to ``package``) that defines it.
        submodules: also import a public submodule on first use (``views.figures`` without importing it),
            as eager imports in the package's ``__init__`` made every submodule an attribute.
    Returns:
        The function to bind to the package's ``__getattr__``; it raises ``AttributeError`` for a name
        not in ``homes`` (nor, with ``submodules``, a submodule).
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None and submodules and not name.startswith("_"):
            import importlib.util

            if importlib.util.find_spec(f"{package}.{name}") is not None:
                __import__(f"{package}.{name}")
                return sys.modules[f"{package}.{name}"]
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(f"{package}.{home}")  # not importlib.import_module: ``-X importtime`` sees this import
        value = getattr(sys.modules[f"{package}.{home}"], name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def type_checking_homes(init_file: str, package: str) -> dict[str, str]:
    """The ``homes`` of :func:`lazy_getattr` as a package's ``__init__`` (the file ``init_file``) states them for
    mypy and readers: ``{name: submodule}`` of each ``from <package>.<submodule> import name`` in its
    ``if TYPE_CHECKING:`` block, so that each lazy name is written once.

    Raises:
        ValueError: a statement in that block is not an import from a submodule of ``package``.
    """
    import ast
    from pathlib import Path

    out: dict[str, str] = {}
    for node in ast.parse(Path(init_file).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if not (isinstance(imp, ast.ImportFrom) and imp.module and imp.module.startswith(f"{package}.")):
                    raise ValueError(f"{init_file}:{imp.lineno}: not an import from a submodule of {package}")
                out |= dict.fromkeys((a.name for a in imp.names), imp.module.removeprefix(f"{package}."))
    return out


def lazy_exports(
    init_file: str, package: str, *, submodules: bool = False
) -> tuple[dict[str, str], Callable[[str], object]]:
    """What makes a package lazy, from its ``__init__`` (``init_file``): ``(homes, __getattr__)``, the
    :func:`type_checking_homes` of its ``TYPE_CHECKING`` imports and the :func:`lazy_getattr` over them
    (``submodules``: as there).

    Raises:
        ValueError: as :func:`type_checking_homes`.
    """
    homes = type_checking_homes(init_file, package)
    return homes, lazy_getattr(package, homes, submodules=submodules)
