"""A measured run's label on the MR-FAR plane (fresh-user trial): only a model path (``org/model``,
``/m/x.gguf``) is cut to its last part; a name with markup keeps its text from the start (``<b>x</b>``
was drawn as "b> direct", ``[red]x[/red]`` as "red] direct"), and runs whose labels collide
(``acme/guard-v1`` and ``other/guard-v1``, both "guard-v1 direct") are drawn under distinct labels."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.escaping import plot_text
from automonitor.views.honest_points import honest_points, short_label


def _points(monitors: list[str]) -> pd.DataFrame:
    n = len(monitors)
    return pd.DataFrame(
        {
            "run_id": [f"run_{i:04d}" for i in range(n)],
            "monitor": monitors,
            "template": ["direct"] * n,
            "mr": [0.3] * n,
            "far": [0.2] * n,
            **{c: [50] * n for c in ("tp", "fn", "fp", "tn")},
        }
    )


def test_markup_names_keep_their_text_and_model_paths_their_last_part():
    assert short_label("openai:<b>x</b>", "direct") == "<b>x</b> direct"
    assert short_label("openai:[red]x[/red]", "direct") == "[red]x[/red] direct"
    assert short_label("openai:acme/guard-v1", "direct") == "guard-v1 direct"
    assert short_label("llamacpp:/m/gemma-3-270m.gguf", "evidence") == "gemma-3-270m evid."
    assert short_label("openai:acme/guard-v1", "direct", whole_path=True) == "acme/guard-v1 direct"


def test_colliding_model_paths_are_labelled_with_the_whole_path():
    pts = honest_points(_points(["openai:acme/guard-v1", "openai:other/guard-v1", "openai:solo/model-x"]))
    assert list(pts["label"]) == ["acme/guard-v1 direct", "other/guard-v1 direct", "model-x direct"]


_SEGMENT = st.text(st.sampled_from("abcAB019._-"), min_size=1, max_size=8)
_MARKUP = st.sampled_from(["<b>", "</b>", "[red]", "[/red]", "<a href='x'>", "%{x}", "&amp;", " ", "/", "\\"])
_NAME = st.one_of(
    st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join),  # model ids and paths
    st.lists(st.one_of(_SEGMENT, _MARKUP), min_size=1, max_size=6).map("".join),  # names with markup and slashes
)
_MONITOR = st.tuples(st.sampled_from(["openai:", "anthropic:", "llamacpp:", ""]), _NAME).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_MONITOR, min_size=1, max_size=8, unique=True))
def test_distinct_monitors_never_share_a_label_and_labels_are_escaped_substrings(monitors):
    pts = honest_points(_points(monitors))
    labels = list(pts["label"])
    assert len(set(labels)) == len(labels), list(zip(monitors, labels))
    for rid, monitor, label in zip(pts["run_id"], monitors, labels):
        name = label.removesuffix(f" #{rid[-6:]}").removesuffix(" direct").removesuffix("…")
        # the drawn text is a piece of the monitor's own name (a model file's extension dropped), never a
        # fragment of markup re-read as something else
        assert name, (monitor, label)
        assert name in monitor or name in monitor.replace(".gguf", "").replace(".bin", ""), (monitor, label)
        drawn = plot_text(label)
        assert "<" not in drawn and ">" not in drawn and "%{" not in drawn and "'" not in drawn
