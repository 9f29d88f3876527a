"""The plot area a browser keeps in a cookie (pages/_ui/plot_size.py): read as untrusted input, the cookie's name
made only of cookie-safe characters."""

from __future__ import annotations

import re

import pytest

from pages._ui import plot_size


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("742x297", (742.0, 297.0)),
        ("1e3x300", (1000.0, 300.0)),
        ("742.5x297", (742.5, 297.0)),
        ("742", None),
        ("742x297x1", None),
        ("x", None),
        ("", None),
        ("wide", None),
        ("nanx297", None),
        ("infx297", None),
        ("100x297", None),  # narrower than any real plot
        ("742x9999", None),
        ("742X297", None),
        ("9" * 50 + "x297", None),
        (None, None),
        (742, None),
        (["742", "297"], None),
    ],
)
def test_kept_plot_reads_only_a_real_size(value, expected):
    assert plot_size.kept_plot(value) == expected


def test_the_cookie_name_is_a_token():
    for key in ("tradeoff.chart", "a b;c=d,e", "ünï.côdé"):
        name = plot_size.cookie_name(key)
        assert re.fullmatch(r"am_plot_[A-Za-z0-9_-]+", name), name
    assert plot_size.cookie_name("tradeoff.chart") == "am_plot_tradeoff-chart"
