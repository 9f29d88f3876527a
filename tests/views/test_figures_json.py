"""The report's MR-FAR plane (``figures.tradeoff_figure_json``), written by plotly's serializer from a plain figure dict,
is the figure ``tradeoff_figure`` builds from plotly's objects once plotly validates both, and writing it builds no
plotly object."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor import analysis
from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
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


def validated(text: str) -> object:
    """A plotly JSON text as plotly's objects hold it (validated, defaults filled the same way), a number array
    written as plotly's base64 typed array (``{"dtype", "bdata"}``, what the objects write for a float Series) read
    back as the list of its numbers: plotly.js draws the two the same."""
    import base64

    import numpy as np
    import plotly.graph_objects as go

    def plain(v):
        if isinstance(v, dict) and set(v) == {"dtype", "bdata"}:
            return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, np.ndarray):
            return v.tolist()
        return v

    return plain(json.loads(go.Figure(json.loads(text)).to_json()))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(runs(), st.booleans(), st.sampled_from([560, 520, 300]))
def test_the_plane_json_is_the_figure_plotly_builds(data, with_reported, height):
    """Random runs as the report draws them (hollow, partial, cancelled and running runs, two editions, labels
    with markup and quotes, error bars, the paper's points or none): the JSON the report embeds is the figure of
    ``tradeoff_figure`` with plotly's ``plotly`` template, trace for trace and key for key, once plotly validates
    both."""
    rows, prov = data
    pts = plane(rows, prov)
    front = list(pts.loc[pts["on_front"], "run_id"]) if len(pts) else []
    kw = dict(reported=reported() if with_reported else None, front=front or None, height=height, hover_action="")
    fig = figures.tradeoff_figure(pts, **kw)
    fig.layout.template = figures.REPORT_TEMPLATE
    got = figures.tradeoff_figure_json(pts, **kw)
    assert validated(got) == validated(str(fig.to_json()))
    assert "</" not in got and "<script" not in got.lower()  # safe inside the report's <script>


def test_writing_the_plane_builds_no_plotly_object():
    """The JSON comes from plotly's serializer without plotly's figure objects: a fresh process that writes a plane
    never loads one of plotly's figure or trace classes (their first load is ~0.2 s of a cold report)."""
    code = (
        "import sys, pandas as pd\n"
        "from automonitor.views.figures import tradeoff_figure_json\n"
        "pts = pd.DataFrame([dict(run_id='r1', monitor='m</script>', template='direct', mr=0.2, far=0.1, n=400,"
        " mr_lo=0.1, mr_hi=0.3, far_lo=0.05, far_hi=0.2, on_front=True, incomplete=False, label='m')])\n"
        "text = tradeoff_figure_json(pts, front=['r1'], hover_action='')\n"
        "assert 'scatter' in text, text[:200]\n"
        "print(sorted(m for m in sys.modules if m.startswith('plotly.graph_objs._')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_the_template_is_plotlys_packaged_one():
    """``report_template`` is the installed plotly's ``plotly`` template: validated, it is the template plotly's
    objects give the figure."""
    import plotly.graph_objects as go
    import plotly.io as pio

    assert go.layout.Template(figures.report_template()).to_plotly_json() == (
        pio.templates[figures.REPORT_TEMPLATE].to_plotly_json()
    )
