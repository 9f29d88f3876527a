"""The report's MR-FAR plane written without plotly's figure objects (``automonitor.views.figure_json``) is the
text that plotly's objects give (``figures.figure_objects_json``), byte for byte, and the kept ``plotly`` template is
the installed plotly's."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor import analysis
from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
from automonitor.views import figure_json as fj
from automonitor.views import figures, honest_points
from automonitor.views.tradeoff import reported_for

MONITORS = ["judge-a", "judge<b>/c", "NaN-ish Infinity", "ü judge “x”", "openai:gpt-4o-mini", "a" * 40]


@st.composite
def runs(draw):
    rows, prov = [], {}
    for i in range(draw(st.integers(0, 9))):
        tp, fn, fp, tn = (draw(st.integers(0, 400)) for _ in range(4))
        if tp + fn == 0 or fp + tn == 0:
            continue
        mr, far = fn / (tp + fn), fp / (fp + tn)
        rid = f"run{i:02d}"
        rows.append(
            dict(
                run_id=rid,
                monitor=draw(st.sampled_from(MONITORS)),
                template=draw(st.sampled_from(["direct", "evidence", "direct-fewshot", "other"])),
                kind=draw(st.sampled_from(["live", "imported"])),
                n=tp + fn + fp + tn,
                mr=mr,
                far=far,
                mr_lo=max(0.0, mr - draw(st.floats(0, 0.2))),
                mr_hi=min(1.0, mr + draw(st.floats(0, 0.2))),
                far_lo=max(0.0, far - draw(st.floats(0, 0.2))),
                far_hi=min(1.0, far + draw(st.floats(0, 0.2))),
                unscored=draw(st.integers(0, 50)),
                tp=tp,
                fn=fn,
                fp=fp,
                tn=tn,
                not_eligible=draw(st.sampled_from(["", "", PARTIAL_NOT_ELIGIBLE])),
                marks=draw(st.sampled_from(["", "", "lenient parse"])),
            )
        )
        prov[rid] = dict(
            edition=draw(st.sampled_from(["paper", "verified"])),
            sample_set=draw(st.sampled_from(["4c98b0ad90", ""])),
            backend=draw(st.sampled_from(["rules", "openai", "imported"])),
            status=draw(st.sampled_from(["finished", "finished", "cancelled", "running"])),
        )
    return rows, prov


def plane(rows, prov) -> pd.DataFrame:
    """The points as ``report_html.plane_points`` makes them from a report's ``tradeoff_points``."""
    raw = pd.DataFrame(rows, columns=list(rows[0]) if rows else ["run_id", "monitor", "template", "mr", "far"])
    if rows:
        raw["on_front"] = False
    sets = pd.DataFrame(
        [
            {"run_id": r, "edition": p["edition"], "fingerprint": p["sample_set"], "sample_set": ""}
            for r, p in prov.items()
        ],
        columns=["run_id", "edition", "fingerprint", "sample_set"],
    )
    pts = honest_points(
        raw,
        sets,
        min_n=200,
        backends={r: p["backend"] for r, p in prov.items()},
        statuses={r: p["status"] for r, p in prov.items()},
    )
    pts["sample_set"] = [f"{e or '-'} · {f or '-'}" for e, f in zip(pts["edition"], pts["fingerprint"])]
    return pts


def reported() -> pd.DataFrame:
    rep = reported_for(analysis.reported_points(), None, None)
    rep["label"] = rep["monitor"] + " (" + rep["template"] + "), secondary summary"
    return rep


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(runs(), st.booleans(), st.sampled_from([560, 520, 300]))
def test_the_plane_without_figure_objects_is_plotlys_text(monkeypatch, data, with_reported, height):
    """Random runs as the report draws them (hollow, partial, cancelled and running runs, two editions, labels
    with markup and quotes, error bars, the paper's points or none): the same bytes (the monkeypatch is undone
    per example by its own context)."""
    rows, prov = data
    pts = plane(rows, prov)
    front = list(pts.loc[pts["on_front"], "run_id"]) if len(pts) else []
    kw = dict(reported=reported() if with_reported else None, front=front or None, height=height, hover_action="")
    want = figures.figure_objects_json(pts, **kw)
    with monkeypatch.context() as m:  # the text must come from figure_json's path, not the objects' fallback
        m.setattr(figures, "figure_objects_json", lambda *a, **k: pytest.fail("fell back to plotly's objects"))
        got = figures.tradeoff_figure_json(pts, **kw)
    assert got == want


def test_the_kept_template_is_the_installed_plotlys():
    """After a plotly upgrade: ``python -c "from automonitor.views.figure_json import write_template;
    write_template()"`` (until then the report takes plotly's objects: slower, the same bytes)."""
    kept = json.loads(fj.TEMPLATE_FILE.read_text(encoding="utf-8"))
    import plotly

    assert kept["plotly"] == plotly.__version__
    assert fj.plotly_json(kept["template"]) == fj.plotly_json(fj.validated_template())
    assert json.dumps(kept["template"]) == json.dumps(fj.validated_template())  # the same keys in the same order


def test_values_it_does_not_write_as_plotly_take_the_objects_path():
    """A trace value outside what figure_json writes (a NumPy scalar, an int Series, a list colour, an unknown key)
    gives ``None``: the caller builds plotly's objects."""
    import numpy as np

    assert fj.scatter_traces([dict(x=[0.1], y=[0.2], mode="markers")]) is not None
    for spec in (
        dict(x=[np.float64(0.1)], y=[0.2]),
        dict(x=pd.Series([1, 2]), y=[0.2, 0.3]),
        dict(x=[0.1], y=[0.2], marker=dict(color=["red"])),
        dict(x=[0.1], y=[0.2], fill="tozeroy"),
        dict(x=[float("nan")], y=[0.2]),
        dict(x=[0.1], y=[0.2], text=[1]),
    ):
        assert fj.scatter_traces([spec]) is None, spec
    assert fj.plotly_template() is not None
