"""``automonitor.views`` exports most names lazily (PEP 562): every exported name is the object its submodule
defines, whichever submodules were imported before, and importing the package leaves the heavy page modules
unimported until a name of theirs is read."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import types

import automonitor.views as views


def test_every_exported_name_is_its_submodules_object_after_every_submodule_is_imported():
    for info in pkgutil.iter_modules(views.__path__):
        __import__(f"automonitor.views.{info.name}")  # binds each submodule as an attribute of the package
    for name in views.__all__:
        value = getattr(views, name)
        assert not isinstance(value, types.ModuleType), name  # a function named as its module stays the function
    assert views.honest_points.__module__ == "automonitor.views.honest_points"
    assert views.hard_statement.__module__ == "automonitor.views.hard_statement"
    assert views.figures.CLICK_HINT and views.sample_sets.NO_EDITION  # submodules as attributes, as before


def test_importing_the_package_leaves_the_modules_of_other_pages_unimported():
    code = (
        "import sys, automonitor.views as v; v.tradeoff_figure; v.store_version; "
        "print(' '.join(m for m in ('automonitor.views.provenance', 'automonitor.views.samples', "
        "'automonitor.views.browsing', 'automonitor.views.markdown', 'automonitor.views.figures') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["automonitor.views.figures"]


def test_an_unknown_name_is_an_attribute_error():
    try:
        views.no_such_view  # noqa: B018
    except AttributeError as exc:
        assert "no_such_view" in str(exc)
    else:
        raise AssertionError("no AttributeError")
