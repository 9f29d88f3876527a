"""Unit tests of ``automonitor.views``: escaped highlighting, figures, and the app's store queries."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

import pandas as pd
import pytest

from automonitor import views
from automonitor.views.honest_points import spread_coincident
from automonitor.analysis import metrics
import app_seed

ALLOWED_TAGS = {"div", "mark", "span", "ul", "li"}
ALLOWED_ATTRS = {"class", "style", "title", "data-status"}


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text, self.marks = [], [], [], []
        self._in_mark = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(a for a, _ in attrs)
        if tag == "mark":
            self._in_mark = (dict(attrs).get("data-status"), [])

    def handle_endtag(self, tag):
        if tag == "mark" and self._in_mark:
            self.marks.append((self._in_mark[0], "".join(self._in_mark[1])))
            self._in_mark = None

    def handle_data(self, data):
        self.text.append(data)
        if self._in_mark:
            self._in_mark[1].append(data)


def _parse(markup: str) -> _Collect:
    p = _Collect()
    p.feed(markup)
    p.close()
    return p


def test_highlight_escapes_hostile_text_and_marks_spans():
    text = app_seed.HOSTILE_RESPONSE
    grounded = views.ground_evidence(text, app_seed.HOSTILE_REQUEST, app_seed.HOSTILE_EVIDENCE)
    assert [g["status"] for g in grounded] == ["exact", "normalized", "not_found"]
    markup = views.highlight_html(text, grounded)
    p = _parse(markup)
    # only the tags and attributes we build ourselves; no script, img, link or event handler
    assert set(p.tags) <= ALLOWED_TAGS, p.tags
    assert set(p.attrs) <= ALLOWED_ATTRS, p.attrs
    assert "<script" not in markup and "<img" not in markup and 'onerror="' not in markup
    # the response text survives literally (the parser unescapes what we escaped)
    body = "".join(p.text)
    assert text in body
    # grounded spans are marked with their status, the ungrounded one listed separately
    assert ("exact", "<script>alert('xss-script')</script>") in p.marks
    assert ("normalized", "run rm -rf /") in p.marks
    assert "quote that is not there" in body and 'class="am-ev am-ev-not_found"' in markup
    assert (
        views.evidence.SPAN_STYLES["exact"]
        != views.evidence.SPAN_STYLES["normalized"]
        != views.evidence.SPAN_STYLES["not_found"]
    )


def test_highlight_overlapping_and_out_of_range_spans():
    text = "abcdefghij"
    grounded = [
        {"span": "cdef", "status": "exact", "start": 2, "end": 6},
        {"span": "efgh", "status": "normalized", "start": 4, "end": 8},
        {"span": "x", "status": "exact", "start": 50, "end": 60},
        {"span": "q", "status": "not_found", "start": None, "end": None},
    ]
    assert views.evidence.located_spans(text, grounded) == [(2, 6, "exact", "cdef"), (6, 8, "normalized", "efgh")]
    p = _parse(views.highlight_html(text, grounded, show_missing=False))
    assert p.marks == [("exact", "cdef"), ("normalized", "gh")]
    assert "".join(p.text) == text


def test_highlight_by_field_and_text_html():
    g = views.ground_evidence("the response", "the request asks", ["request asks", "response"])
    resp = _parse(views.highlight_html("the response", g, field="response"))
    req = _parse(views.highlight_html("the request asks", g, field="request", show_missing=False))
    assert resp.marks == [("exact", "response")] and req.marks == [("exact", "request asks")]
    t = views.text_html("<b>x</b> & **y**")
    assert "&lt;b&gt;x&lt;/b&gt; &amp; **y**" in t and "<b>" not in t
    assert views.esc(None) == "" and views.esc('"') == "&quot;"


def test_pareto_and_pearson():
    pts = pd.DataFrame({"run_id": list("abcde"), "mr": [0.1, 0.2, 0.3, 0.25, None], "far": [0.6, 0.3, 0.1, 0.35, 0.0]})
    assert views.tradeoff.pareto_ids(pts) == ["c", "b", "a"]
    # the page's Pearson r is analysis.metrics.pearson_r over the points (a point without MR left out)
    r, _p = metrics.pearson_r(list(pts["far"]), list(pts["mr"]), p_value=False)
    assert r == pytest.approx(pd.Series([0.1, 0.2, 0.3, 0.25]).corr(pd.Series([0.6, 0.3, 0.1, 0.35])))
    assert metrics.pearson_r(list(pts.head(2)["far"]), list(pts.head(2)["mr"]), p_value=False) == (None, None)


def test_tradeoff_figure_traces():
    pts = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "monitor": ["m1", "m2", "m3"],
            "template": ["direct", "evidence", "direct"],
            "mr": [0.1, 0.3, 0.5],
            "far": [0.5, 0.2, 0.4],
            "mr_lo": [0.05, 0.2, 0.4],
            "mr_hi": [0.2, 0.4, 0.6],
            "far_lo": [0.4, 0.1, 0.3],
            "far_hi": [0.6, 0.3, 0.5],
        }
    )
    rep = pd.DataFrame({"label": ["GPT-4o-mini direct"], "mr": [0.36], "far": [0.32]})
    fig = views.tradeoff_figure(pts, reported=rep)
    names = [t.name for t in fig.data]
    assert names == [
        "Pareto front",
        "on the front",
        "runs: direct",
        "runs: evidence",
        "secondary summary (not in paper v2)",
    ]
    direct = fig.data[2]
    assert [c[0] for c in direct.customdata] == ["a", "c"]
    assert list(direct.error_y.array) == pytest.approx([0.1, 0.1])
    assert list(direct.error_y.arrayminus) == pytest.approx([0.05, 0.1])
    # the front is b then a (c is dominated by b), drawn as a staircase from MR = 1 to FAR = 1
    assert list(fig.data[1].x) == [0.2, 0.5]
    assert list(fig.data[0].x) == [0.2, 0.2, 0.5, 0.5, 1.0]
    assert list(fig.data[0].y) == [1.0, 0.3, 0.3, 0.1, 0.1]
    assert fig.data[4].marker.symbol == "diamond-open" and list(fig.data[4].text) == ["GPT-4o-mini direct"]
    rep2 = pd.DataFrame(
        {
            "label": ["A (direct)", "A (evidence)"],
            "monitor": ["A", "A"],
            "template": ["direct", "evidence"],
            "mr": [0.3, 0.2],
            "far": [0.3, 0.5],
        }
    )
    fig2 = views.tradeoff_figure(pts, reported=rep2)
    paper = [t for t in fig2.data if t.name.startswith("secondary summary")]
    assert [t.name for t in paper] == [
        "secondary summary (not in paper v2): direct",
        "secondary summary (not in paper v2): evidence",
    ]
    assert [t.marker.symbol for t in paper] == ["diamond-open", "diamond"]
    assert all("secondary summary of the paper, not its v2 text" in t.hovertemplate for t in paper)
    empty = views.tradeoff_figure(pts.iloc[0:0])
    assert len(empty.data) == 0


def test_label_positions_push_neighbours_apart():
    pos = views.figures.label_positions([0.36, 0.41, 0.36, 0.9], [0.15, 0.17, 0.20, 0.9])
    assert pos[0].startswith("bottom") and pos[2].startswith("top") and pos[3] == "top left"


def test_labels_of_different_traces_are_pushed_apart_too():
    """A run label and a reported point's label close together on the plane (different traces) were
    placed each without seeing the other and overlapped at 1280x720: each now counts the other."""
    alone = views.figures.label_positions([0.40], [0.30])
    assert alone == ["top center"]
    run = views.figures.label_positions([0.40], [0.30], others=[(0.42, 0.33)])  # a reported point above-right
    paper = views.figures.label_positions([0.42], [0.33], others=[(0.40, 0.30)])
    assert run == ["bottom left"] and paper == ["top right"]
    # the same height: one above, one below
    a = views.figures.label_positions([0.40], [0.30], others=[(0.43, 0.30)])
    b = views.figures.label_positions([0.43], [0.30], others=[(0.40, 0.30)])
    assert {a[0].split()[0], b[0].split()[0]} == {"top", "bottom"}
    # the whole figure: a run next to a reported point
    pts = pd.DataFrame(
        {"run_id": ["r1"], "monitor": ["m"], "template": ["direct"], "mr": [0.30], "far": [0.40], "label": ["m"]}
    )
    reported = pd.DataFrame({"label": ["GPT"], "monitor": ["GPT"], "template": ["direct"], "mr": [0.33], "far": [0.42]})
    fig = views.tradeoff_figure(pts, reported=reported)
    (run_trace,) = [t for t in fig.data if t.name == "runs: direct"]
    (paper_trace,) = [t for t in fig.data if t.name.startswith("secondary summary")]
    assert list(run_trace.textposition) == ["bottom left"] and list(paper_trace.textposition) == ["top right"]


def _drawn_label_boxes(fig):
    """The estimated pixel box of every label the figure draws (``views.figures.label_box`` at the
    layout's scale for the figure's height, a label on two lines two lines high), with its text (its lines
    joined by a space)."""
    from automonitor.views import figures as f

    sx, sy = (p / f.LABEL_AXIS_SPAN for p in f.label_plot_px(fig.layout.height))
    out = []
    for t in fig.data:
        if not t.mode or "text" not in t.mode:
            continue
        for x, y, text, pos in zip(t.x, t.y, t.text, t.textposition):
            if text:
                lines = text.split("<br>")
                width = f.LABEL_CHAR_PX * max(len(line) for line in lines)
                out.append((" ".join(lines), f.label_box(pos, x * sx, y * sy, width, len(lines))))
    return out


def test_labels_of_a_crowded_plane_never_overlap_and_the_front_keeps_its_labels():
    """Fresh-user trial (issue 41): labels of nearby runs were drawn over each other (each point chose a
    side from its neighbours alone, blind to the labels' widths). ``place_labels`` places the Pareto front's
    labels first and gives every label a side where its box meets no other label; a label with no room on
    any side is left out and the run is still named in its hover. Untrusted names stay escaped."""
    rng = __import__("random").Random(1)
    n = 12
    pts = pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(n)],
            "monitor": [f"openai:<b>model-{i}</b>" if i == 3 else f"openai:monitor-model-{i}" for i in range(n)],
            "template": ["direct", "evidence"] * (n // 2),
            "mr": [0.30 + rng.uniform(-0.06, 0.06) for _ in range(n)],
            "far": [0.20 + rng.uniform(-0.06, 0.06) for _ in range(n)],
            "tp": [100] * n,
            "fn": [50] * n,
            "fp": [30] * n,
            "tn": [120] * n,
        }
    )
    p = views.honest_points(pts, min_n=100)
    reported = pd.DataFrame(
        {"label": ["GPT"], "monitor": ["GPT-4o"], "template": ["direct"], "mr": [0.31], "far": [0.21]}
    )
    fig = views.tradeoff_figure(p, reported=reported)
    boxes = _drawn_label_boxes(fig)
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (ta, tb)
    drawn = {text for text, _ in boxes}
    front = p[p["on_front"]]
    assert len(front) >= 2 and all(views.plot_text(x) in drawn for x in front["label"])
    assert len(drawn) < n + 1  # some labels of this crowd are left to the hover
    runs = [t for t in fig.data if t.name and t.name.startswith("runs:")]
    named = {c[12]: c[1] for t in runs for c in t.customdata}  # hover: run id -> monitor
    assert set(named) == set(p["run_id"])
    assert all("<b>" not in str(t) for tr in runs for t in tr.text) and all("<b>" not in m for m in named.values())


def test_label_positions_point_inward_at_the_edges():
    """A label at FAR 0 written centred on its marker was cut at the plot's left border
    ("rules-v1" showed as "ules-v1"): near an edge it points into the plane."""
    pos = views.figures.label_positions([0.0, 1.0, 0.5, 0.5], [0.5, 0.5, 1.0, 0.0])
    assert pos == ["top right", "top left", "bottom center", "top center"]


def test_roc_figure_marks_operating_point():
    curve = pd.DataFrame({"fpr": [0, 0.2, 1], "tpr": [0, 0.7, 1]})
    fig = views.roc_figure({"run x": curve}, operating={"run x": {"far": 0.2, "mr": 0.3, "threshold": 0.5}})
    assert [t.name for t in fig.data] == ["chance", "run x", "operating point: run x"]
    assert list(fig.data[2].x) == [0.2] and list(fig.data[2].y) == pytest.approx([0.7])


def test_format_duration():
    assert views.runs.format_duration(None) == "—"  # views.cells.MISSING, as every missing table cell
    assert views.runs.format_duration(3.21) == "3.2 s"
    assert views.runs.format_duration(125) == "2 min 05 s"
    assert views.runs.format_duration(7380) == "2 h 03 min"


@pytest.fixture
def seeded(engine):
    return engine, app_seed.seed_store(engine, pairs_per_cell=2, runs=3)


def test_store_queries(seeded):
    eng, info = seeded
    v1 = views.store_version(eng)
    comp = views.composition_frame(eng)
    assert int(comp["n"].sum()) == 2 * (9 * 2 + 1)  # gold test samples, both sides
    piv = views.composition_pivot(comp)
    assert piv.loc["total", "total"] == comp["n"].sum()
    assert piv.loc["safety_permission", "qa / misbehavior"] == 3  # 2 seeded + hostile
    status = views.counts_by(eng, "status")
    assert dict(zip(status["status"], status["n"])) == {"gold": 38, "candidate": 2}
    with pytest.raises(ValueError):
        views.counts_by(eng, "request")

    runs = views.runs_frame(eng)
    assert set(runs["run_id"]) == set(info["run_ids"])
    row = runs.set_index("run_id").loc["r000"]
    assert row["n"] == 38 and row["done"] == 38
    assert row["misbehavior"] + row["benign"] + row["unscored"] == 38
    assert row["duration_s"] > 0 and row["status"] == "finished"
    # a new run changes the fingerprint (cache invalidation)
    app_seed.add_run(eng, info["samples"], monitor="rules", template="direct", run_id="r_new")
    assert views.store_version(eng) != v1


def test_search_and_export(seeded):
    eng, info = seeded
    total, frame = views.search_samples(eng, search="onerror", status=["gold"])
    assert total == 1 and frame.iloc[0]["id"] == info["hostile_id"]
    total, frame = views.search_samples(eng, category=["sycophancy_bias"], label=["benign"], limit=3)
    assert total == 6 and len(frame) == 3 and set(frame["label"]) == {"benign"}
    # LIKE wildcards in the search are literal
    assert views.search_samples(eng, search="%")[0] == 0
    assert views.search_samples(eng, search="rm -rf /")[0] == 1

    data = views.export_samples(eng, "jsonl", search="p_hostile")
    rows = [json.loads(line) for line in data.decode().splitlines()]
    assert {r["label"] for r in rows} == {"misbehavior", "benign"}
    assert any(r["response"] == app_seed.HOSTILE_RESPONSE for r in rows)
    assert set(rows[0]) >= {"sample_id", "pair_id", "category", "task", "request", "response", "label", "meta"}
    c = list(csv.DictReader(io.StringIO(views.export_samples(eng, "csv", task=["code"], status=["gold"]).decode())))
    assert len(c) == 12 and json.loads(c[0]["meta"]) == {"seeded": True}
    from automonitor.errors import InputError

    with pytest.raises(InputError):
        views.export_samples(eng, "xml")

    d = views.sample_detail(eng, info["hostile_id"])
    assert d["other"]["id"] == info["hostile_benign_id"]
    preds = views.sample_predictions(eng, info["hostile_id"])
    assert set(preds) == set(info["run_ids"]) and preds["r001"]["template"] == "evidence"


def test_composition_figure_sums():
    long = pd.DataFrame(
        {
            "category": ["sycophancy_bias"] * 4,
            "task": ["qa", "qa", "code", "code"],
            "label": ["misbehavior", "benign"] * 2,
            "split": "test",
            "n": [3, 3, 2, 2],
        }
    )
    sb = views.composition_figure(long).data[0]
    vals = dict(zip(sb.ids, sb.values))
    assert vals["sycophancy_bias"] == 10 and vals["sycophancy_bias/qa"] == 6
    assert vals["sycophancy_bias/code/benign"] == 2
    assert len(views.composition_figure(long.iloc[0:0]).data) == 0


def test_md_escape_makes_markdown_inert():
    s = "a*b* [x](javascript:alert(1)) <b>hi</b> $x$ :red[z] `c`\nnext"
    out = views.md_escape(s)
    assert "\n" not in out
    for tok in ("\\*", "\\[", "\\(", "\\<", "\\$", "\\:", "\\`"):
        assert tok in out
    # unescaping the backslashes gives the text back (newline -> space)
    assert out.replace("\\", "") == s.replace("\n", " ").replace("\\", "")


def test_the_labels_of_coincident_runs_point_into_their_own_quadrants():
    """Four runs at one (FAR, MR) are spread on a small circle; their labels overlapped (two 'bottom left'
    of points 0.017 apart, fresh-user trial's leftover): each label now points away from the true position,
    into its own quadrant, so four coincident runs get four different text positions."""
    xp, yp, size = spread_coincident([0.4] * 4, [0.3] * 4)
    assert size == [4, 4, 4, 4]
    pos = views.figures.label_positions(xp, yp, centers=[(0.4, 0.3)] * 4)
    assert sorted(pos) == ["bottom left", "bottom right", "top left", "top right"]
    # three coincident: three different positions; a lone point keeps the neighbour rule
    xp, yp, _ = spread_coincident([0.4] * 3 + [0.7], [0.3] * 3 + [0.5])
    pos = views.figures.label_positions(xp, yp, centers=[(0.4, 0.3)] * 3 + [(0.7, 0.5)])
    assert len(set(pos[:3])) == 3 and pos[3] == "top center"
