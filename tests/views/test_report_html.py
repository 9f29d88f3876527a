"""`automonitor report --format html --output FILE`: one self-contained file (no external resource,
CSP forbidding requests), every data value escaped, provenance and gallery present; option errors."""

from __future__ import annotations

import re

import pytest
from helpers import run_cli, run_cli_in_process
from report_html_seed import XSS, seed_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('rephtml') / 'store.db'}"
    return url, seed_store(url)


def _body(html: str) -> str:
    """The document without the inlined plotly.js (whose source has URLs and markup of its own)."""
    return html[: html.index('id="plotly-gz"')]


def test_cli_writes_self_contained_escaped_file(store, tmp_path):
    url, _ = store
    out = tmp_path / "rep.html"
    res = run_cli(["report", "--format", "html", "--output", str(out), "--no-audit"], db=url)
    assert res.returncode == 0, res.stderr
    assert "wrote" in res.stderr and res.stdout == ""
    html = out.read_text(encoding="utf-8")
    body = _body(html)
    # nothing loaded from anywhere: no src/href to a resource, a CSP that forbids every request
    assert not re.search(r"<(script|img|iframe|link|source|video|audio)\b[^>]*\b(src|href)=", body, re.I)
    assert "default-src 'none'" in body and "@import" not in body and "url(" not in body
    # the payload and markup in texts are escaped wherever they appear (HTML and figure JSON)
    assert XSS not in html and "<script>alert" not in html and "<b>now</b>" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    # figure JSON: plot_text's entities, with "&" "<" ">" written as \u0026 \u003c \u003e
    assert "\\u0026lt;img src=x onerror=alert(1)\\u0026gt;" in body
    # provenance: backend, model, template hash, edition, sample-set fingerprint, cost
    prov = body[body.index("Run provenance") :]
    assert "gpt-4o-mini" in prov and "111111111111" in prov and "paper" in prov and "0.0240" in prov
    assert re.search(r"<td>[0-9a-f]{10}</td>", prov)
    # the reference points say where they come from; the gallery highlights evidence
    assert "paper_reported.csv" in body and "secondary summary" in body
    # one provenance, said the same way everywhere: never "as printed in / reported in the paper"
    assert "not found in" in body and "printed in the paper" not in body and "reported in the paper" not in body
    assert '<mark class="am-ev am-ev-exact"' in body and "missed misbehavior (FN)" in body
    # a static page: the plane's hovers promise no click-through
    assert "hovertemplate" in body and "click to drill down" not in body


def test_gallery_one_sample_per_slice_and_kind(store, tmp_path):
    from automonitor import analysis
    from automonitor.views import report_html

    _, eng = store
    rep = analysis.report(eng, None, "exclude")
    items = report_html.gallery(eng, rep, per_slice=1)
    keys = [(i["category"], i["task"], i["cell"]) for i in items]
    assert len(keys) == len(set(keys)) and items
    # s0m (pair 0) is missed by r1 and r2 (r3 flags it), named in report order
    top = [i for i in items if i["sample_id"] == "s0m"]
    assert top and top[0]["wrong"] == ["r1", "r2"] and top[0]["runs"] == 3


@pytest.mark.parametrize(
    "args, field",
    [
        (["--format", "html"], "--output"),
        (["--output", "x.txt"], "--output"),
        (["--format", "pdf", "--output", "x.pdf"], "--format"),
    ],
)
def test_bad_html_options_exit_2(store, tmp_path, args, field):
    url, _ = store
    # in this process with ``tmp_path`` as its working directory (the relative --output names land there):
    # the options' check is under test, not the console script's start
    res = run_cli_in_process(["report", *args, "--no-audit"], db=url, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert field in res.stderr
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "x.pdf").exists()


def test_output_writes_a_table_to_a_file(store, tmp_path):
    url, _ = store
    out = tmp_path / "t.csv"
    res = run_cli(["report", "--format", "csv", "--output", str(out), "--no-audit"], db=url)
    assert res.returncode == 0, res.stderr
    assert out.read_text().startswith("monitor,runs,") and res.stdout == ""


def test_harder_editions_stand_beside_each_run(store):
    """Runs with rates on the ``verified`` / ``hard`` members get a "Harder editions" table: the
    overall figures beside each edition's MR/FAR with intervals and coverage; without them no section."""
    from automonitor import analysis
    from automonitor.analysis.report_schema import EditionDifficulty
    from automonitor.views import report_html

    _, eng = store
    rep = analysis.report(eng, None, "exclude")
    assert "Harder editions" not in report_html.build(eng, rep)
    r0 = rep.runs[0]
    hard = EditionDifficulty(members=40, judged=30, coverage=0.75, slice=r0.overall)
    rep.runs[0] = r0.model_copy(update={"difficulty": {"hard": hard}})
    body = _body(report_html.build(eng, rep))
    sec = body[body.index("Harder editions") :]
    sec = sec[: sec.index("</table>")]
    assert "hard edition" in sec and "verified edition" not in sec  # only editions some run has
    assert "judged 30 of 40 members" in sec and sec.count("<tr><th>") == 2  # the header, the one run with rates
    assert f"MR {r0.overall.mr:.2f}" in sec


def test_the_plane_labels_runs_and_applies_the_apps_hollow_rule_and_pearson_r(store):
    """The report's plane drew unlabelled dots, and a small run as a full point counted in Pearson r, where
    the Trade-off page draws it hollow, off the front and out of r (fresh-user trial): the report draws the
    page's points (labels, hollow below the minimum) and its header's r leaves the hollow runs out."""
    import json

    from automonitor import analysis
    from automonitor.views import report_html

    url, eng = store
    rep = analysis.report(eng, None, "exclude", n_boot=20)
    prov = report_html.run_provenance(eng, [r.run_id for r in rep.runs])
    fig = json.loads(report_html.plane_figure_json(rep, prov))
    runs = [t for t in fig["data"] if str(t.get("name", "")).startswith("runs:")]
    assert runs and all(t["text"] and all(t["text"]) for t in runs)  # every run named on the plane
    # 12 judged samples per run: below the minimum of 100, each run is hollow and off the front
    assert all(t["marker"]["symbol"] == "circle-open" for t in runs)
    assert any("rules" in x for t in runs for x in t["text"])
    html = report_html.build(eng, rep)
    body = _body(html)
    assert "Pearson r(MR, FAR) n/a" in body and "Pareto front (overall): -." in body
    assert "Hollow: 3 runs have fewer than 100 judged samples" in body
    # the report's own front and r (the JSON's, over every run) are shown with the reason they are not above
    assert rep.pareto and rep.pearson_r is not None
    assert f"Pareto front {', '.join(rep.pareto)};" in body and f"Pearson r(MR, FAR) {rep.pearson_r:.3f}" in body
    # at a minimum of 1 judged sample every run is full and counted, as on the page at min_n=1
    pts = report_html.plane_points(rep, prov, min_n=1)
    assert pts["eligible"].all()
    r, p, n = report_html.plane_pearson(pts)
    assert n == 3 and r is not None and p is None  # no p-value unless asked
    assert report_html.plane_pearson(pts, p_value=True)[1] is not None
    # the paper's points are drawn in the report (its caption says where they come from)
    assert [t for t in fig["data"] if "secondary summary" in json.dumps(t)]


def test_the_report_and_its_gallery_read_one_snapshot_of_the_predictions(tmp_path):
    """Inside ``predictions_read_once`` (``report --format html``) the gallery takes the predictions the report
    read: a verdict changed in between shows in neither; outside it, the gallery reads the store again. Each
    reader gets its own copy of the frame."""
    import sqlalchemy as sa

    from automonitor import analysis
    from automonitor.analysis.from_store import light_predictions, predictions_read_once
    from automonitor.views import report_html
    from store import session_scope
    from store.models import Prediction

    eng = seed_store(f"sqlite:///{tmp_path / 'store.db'}")
    with predictions_read_once():
        rep = analysis.report(eng, None, "exclude")
        with session_scope(eng) as s:  # r3 now misses s0m too
            s.execute(
                sa.update(Prediction)
                .where(Prediction.run_id == "r3", Prediction.sample_id == "s0m")
                .values(outcome="benign")
            )
        snapshot = report_html.gallery(eng, rep, per_slice=1)
        first = light_predictions(eng, ["r3", "r2", "r1"])  # the same runs in another order: the same read
        first["outcome"] = None
        assert light_predictions(eng, ["r1", "r2", "r3"])["outcome"].notna().any()
    fresh = report_html.gallery(eng, rep, per_slice=1)
    assert [i["wrong"] for i in snapshot if i["sample_id"] == "s0m"] == [["r1", "r2"]]
    assert [i["wrong"] for i in fresh if i["sample_id"] == "s0m"] == [["r1", "r2", "r3"]]


def test_the_report_says_how_many_scored_samples_errata_mark(tmp_path):
    """Trial defect 2: the paper edition scores pairs that the project's errata read wrong or doubtful; the HTML
    report and the CLI's table say how many of the scored samples they are and which edition leaves them out."""
    import json

    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'store.db'}"
    eng = seed_store(url)
    with eng.begin() as c:
        for pair, verdict in (("p0", "wrong"), ("p1", "doubtful"), ("p2", "doubtful")):
            meta = {"erratum": {"verdict": verdict, "reason": "<b>x</b>", "reader": "r", "date": "2026-01-01"}}
            c.execute(sa.text("update sample set meta = :m where pair_id = :p"), {"m": json.dumps(meta), "p": pair})
    eng.dispose()
    line = (
        "paper edition: 2 scored samples are marked wrong and 4 doubtful by errata; "
        "the verified edition leaves them out."
    )
    out = tmp_path / "rep.html"
    res = run_cli(["report", "--format", "html", "--output", str(out), "--no-audit"], db=url)
    assert res.returncode == 0, res.stderr
    assert f'<p class="note errata">{line}</p>' in _body(out.read_text(encoding="utf-8"))
    res = run_cli(["report", "--no-audit"], db=url)
    assert res.returncode == 0, res.stderr
    assert line in res.stdout


def test_the_inlined_plotly_js_unpacks_to_the_installed_bundle(store, tmp_path):
    """The file's plotly.js (gzip at ``PLOTLY_GZIP_LEVEL``, base64) is the installed bundle byte for byte; the
    copy kept in the cache directory is named by plotly's version and the level, so a copy made at another
    level is never read back as this one."""
    import base64
    import gzip

    import plotly
    from plotly.offline import get_plotlyjs

    from automonitor.views import report_html

    url, _ = store
    out = tmp_path / "rep.html"
    cache = tmp_path / "cache"
    report_html.plotly_js_gzip_b64.cache_clear()  # the command runs in this process: compress into ``cache``
    res = run_cli(
        ["report", "--format", "html", "--output", str(out), "--no-audit"],
        db=url,
        env={"AUTOMONITOR_CACHE_DIR": str(cache)},
    )
    assert res.returncode == 0, res.stderr
    blob = re.search(r'<script id="plotly-gz" type="application/octet-stream">([^<]*)</script>', out.read_text())
    assert blob is not None
    packed = base64.b64decode(blob.group(1))
    assert gzip.decompress(packed) == get_plotlyjs().encode()
    assert packed[4:8] == b"\0\0\0\0"  # mtime 0: the same bytes every time
    kept = cache / f"plotly-{plotly.__version__}-{report_html.PLOTLY_GZIP_LEVEL}.js.gz.b64"
    assert kept.read_text(encoding="ascii") == blob.group(1)
    assert report_html.PLOTLY_GZIP_LEVEL == 5
