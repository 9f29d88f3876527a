"""AppTest: the Trade-off page's "Join each monitor's views" toggle hides and draws again the dotted line
joining one monitor's runs under several monitor views (real ``rules`` runs under ``full`` and ``answer``);
a plane without such runs offers no toggle."""

from __future__ import annotations

import json

from apptest_support import StoreEnv, app, ok, open_store
from automonitor import views
from automonitor.runs import runner
from servers.views_data import add_view_samples


def _view_lines(at) -> list[dict]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return [t for t in spec["data"] if str(t.get("name", "")).startswith("views: ")]


def test_the_toggle_hides_and_draws_the_view_lines(tmp_path):
    url = f"sqlite:///{tmp_path / 'views.db'}"
    eng = open_store(url)
    add_view_samples(eng)
    try:
        full = runner.create_run(eng, "rules", "direct", view="full")
        runner.execute_run(eng, full)
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())  # one view only: no line, no toggle
            assert _view_lines(at) == []
            assert not [t for t in at.toggle if t.key == "tradeoff.view_lines"]
        answer = runner.create_run(eng, "rules", "direct", view="answer")
        runner.execute_run(eng, answer)
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())
            toggle = at.toggle(key="tradeoff.view_lines")
            assert toggle.value is True and toggle.label == views.VIEW_LINES_LABEL
            (line,) = _view_lines(at)
            assert line["name"].startswith("views: rules") and line["name"].endswith(" direct") and len(line["x"]) == 2
            assert [t.rsplit("[", 1)[1] for t in line["text"]] == ["full]", "answer]"]
            at.toggle(key="tradeoff.view_lines").set_value(False)
            ok(at.run())
            assert _view_lines(at) == []
            assert at.query_params.get("view_lines") in ("False", ["False"])  # a shared link keeps the lines hidden
            runs_traces = [
                t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if t["name"].startswith("runs:")
            ]
            assert sum(len(t["x"]) for t in runs_traces) == 2  # the two runs' points stay
            at.toggle(key="tradeoff.view_lines").set_value(True)
            ok(at.run())
            assert len(_view_lines(at)) == 1
            shared = ok(app("pages/tradeoff.py", min_n="1", view_lines="0").run())  # a link with the lines off
            assert shared.toggle(key="tradeoff.view_lines").value is False and _view_lines(shared) == []
    finally:
        eng.dispose()
