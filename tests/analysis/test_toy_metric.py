"""Adding a run metric is one file (``tests/fixtures/toy_metric.py``: Youden's J registered with
``register_metric``): the report computes it for every run, the typed report holds it under its declared
type (and refuses a value of another type), ``report --json``'s dict carries it, and the markdown report,
the HTML report and the Trade-off page's runs table show it under its label. With no metric registered
the report has no ``metrics`` key (the pinned golden report, ``test_report_schema.py``, stays as it is)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pydantic
import pytest
from report_html_seed import RUNS, XSS, seed_store

from automonitor import analysis
from automonitor.analysis.report_format import to_markdown
from automonitor.analysis.report_schema import Report
from automonitor.escaping import md_escape
from automonitor.analysis.run_metrics import REGISTRY, RunMetric, register_metric

from helpers import scratch

TOY_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "toy_metric.py"


def _import_toy() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toy_metric", TOY_FILE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    return seed_store(f"sqlite:///{tmp_path_factory.mktemp('toymetric') / 'store.db'}")


@pytest.fixture
def toy():
    """The toy metric registered for one test; the registry is as before afterwards."""
    before = dict(REGISTRY)
    with scratch(REGISTRY):
        yield _import_toy()
    assert REGISTRY == before and "youden_j" not in REGISTRY


def _expected_j(rid: str) -> float:
    """Youden's J of a seeded run from its flag rules (one misbehavior and one benign sample per pair)."""
    _, _, _, fm, fb = next(r for r in RUNS if r[0] == rid)
    pairs = range(6)
    return sum(map(fm, pairs)) / 6 - sum(map(fb, pairs)) / 6


def test_no_metric_registered_no_key(engine):
    rep = analysis.report(engine, None, "exclude", n_boot=20)
    assert all("metrics" not in r for r in rep.to_dict()["runs"])


def test_toy_metric_computed_typed_and_in_the_json(engine, toy):
    rep = analysis.report(engine, None, "exclude", n_boot=20)
    assert [r.run_id for r in rep.runs] == ["r1", "r2", "r3"]
    for run in rep.runs:
        value = run.metric(toy.YOUDEN_J)
        assert isinstance(value, float) and value == pytest.approx(_expected_j(run.run_id))
        # the same as from the SLICE the report computes itself
        assert value == pytest.approx(1 - run.overall.mr - run.overall.far)
    doc = rep.to_dict()
    assert list(doc["runs"][0])[-1] == "metrics" and doc["runs"][0]["metrics"] == {"youden_j": _expected_j("r1")}
    # the JSON document reads back into the typed report; a value of another type is refused, naming it
    assert Report.model_validate(doc).runs[1].metric(toy.YOUDEN_J) == pytest.approx(_expected_j("r2"))
    doc["runs"][0]["metrics"]["youden_j"] = "high"
    with pytest.raises(pydantic.ValidationError, match="metrics"):
        Report.model_validate(doc)


def test_toy_metric_shown_in_markdown_html_and_tradeoff_table(engine, toy):
    from automonitor import views
    from automonitor.views import report_html

    rep = analysis.report(engine, None, "exclude", n_boot=20)
    md = to_markdown(rep)
    assert "| Run | Monitor | Template | Youden J |" in md
    j1 = md_escape(format(_expected_j("r1"), ".3f"))
    assert f"| r1 | {md_escape('openai:gpt-4o-mini')} | direct | {j1} |" in md

    html = report_html.build(engine, rep)
    section = html[html.index("<h2>Run metrics</h2>") :]
    section = section[: section.index("</table>")]
    assert "<th>Youden J</th>" in section and XSS not in section and "&lt;img src=x" in section
    for rid, _, _, _, _ in RUNS:
        assert re.search(rf"{rid}</span></th><td>{_expected_j(rid):.3f}</td>", section), rid

    pts = views.tradeoff_points(rep)
    assert list(pts["Youden J"]) == pytest.approx([_expected_j(r) for r in pts["run_id"]])
    assert "Youden J" not in views.tradeoff_points(rep, category=next(iter(rep.runs[0].by_category)))
    table = views.slice_runs_table(views.honest_points(pts, min_n=1))
    assert list(table.columns)[-1] == "Youden J" and len(table) == 3


def test_a_metric_name_or_label_is_registered_once(toy):
    with pytest.raises(ValueError, match="youden_j"):
        register_metric(RunMetric(name="youden_j", label="Another", value_type=float, compute=toy.youden_j))
    with pytest.raises(ValueError, match="Youden J"):
        register_metric(RunMetric(name="other", label="Youden J", value_type=float, compute=toy.youden_j))
    with pytest.raises(ValueError, match="identifier"):
        RunMetric(name="not a name", label="x", value_type=float, compute=toy.youden_j)
