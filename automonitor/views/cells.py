"""Missing values in the tables the pages show: one rule, :data:`MISSING` ("—", an em dash), never
Streamlit's grey ``None``, nor ``nan`` or ``NaT``.

The pages pass every table they show (``st.dataframe``, ``st.table``) through :func:`display_frame`,
or build its cells with :func:`cell`:

- a column holding a missing value (``None``, NaN, ``NaT``, ``pd.NA``) becomes text: :data:`MISSING`
  there, its other values written with the column's format in ``formats`` when it has one, else
  integers as integers and other numbers with three decimals;
- a column without a missing value is left as it is: numbers stay numbers (sortable, formatted by the
  page's ``column_config``; a page gives a number format only to a column that is still numeric,
  :func:`is_numeric`).

Invisible characters in text cells, one rule too: every ``str`` value (and index label, column name) is shown
with its invisible characters as ``⟨U+XXXX⟩`` markers (:func:`automonitor.escaping.reveal_invisible`), so a
right-to-left override or a zero-width character in a model- or user-written cell (a run's error from the judge
server, a model name, an annotator's note, a source name) cannot reorder or hide what a reader sees. Before,
only the Drill-down cell table and the Samples table did this (fresh-user trial 44: every other table showed
``zero\u200bwidth request \u202e RTL override`` as "zerowidth request edirrevo LTR").

Order, index and column names are kept, so a page's row selection still indexes its own frame.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Callable, Iterable, Mapping, Union

import pandas as pd

from automonitor.escaping import reveal_invisible

MISSING = "—"
"""What a table shows for a missing value (the Agreement page's rule)."""

Format = Union[str, Callable[[object], str]]
"""A ``format()`` spec (``".3f"``, ``".1%"``) or a function of the value."""


def is_missing(value: object) -> bool:
    """Whether ``value`` is missing: ``None``, NaN, ``pd.NA`` or ``NaT`` (containers never are)."""
    if value is None:
        return True
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # an array-like value: not one missing cell
        return False


def cell(value: object, fmt: Format | None = None) -> object:
    """One table cell: :data:`MISSING` for a missing value, else ``value`` formatted with ``fmt``
    (a ``format()`` spec or a function), else ``value`` unchanged (a ``str`` with its invisible characters
    as markers, :func:`automonitor.escaping.reveal_invisible`)."""
    if is_missing(value):
        return MISSING
    if fmt is None:
        return reveal_invisible(value) if isinstance(value, str) else value
    return fmt(value) if callable(fmt) else format(value, fmt)


def _integral(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _plain(value: object) -> object:
    """A NumPy scalar as its Python value (``.item()``); anything else unchanged."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, (str, bytes)) else value


def _as_text(values: list[object], fmt: Format | None) -> list[object]:
    """The values of a column that holds a missing value, as text (see the module docstring)."""
    present = [_plain(v) for v in values]
    if fmt is not None:
        return [cell(v, fmt) for v in present]
    numbers = [v for v in present if not is_missing(v) and isinstance(v, (int, float)) and not isinstance(v, bool)]
    whole = all(_integral(v) for v in numbers)
    out: list[object] = []
    for v in present:
        if is_missing(v):
            out.append(MISSING)
        elif isinstance(v, bool):
            out.append(str(v))
        elif isinstance(v, (int, float)):
            out.append(str(int(v)) if whole else f"{v:.3f}")
        elif isinstance(v, datetime):
            out.append(v.isoformat(sep=" ", timespec="minutes"))
        elif isinstance(v, date):
            out.append(v.isoformat())
        else:
            out.append(reveal_invisible(str(v)))
    return out


def display_frame(
    data: pd.DataFrame | Iterable[Mapping[str, object]], formats: Mapping[str, Format] | None = None
) -> pd.DataFrame:
    """A copy of ``data`` (a frame, or rows as dicts: a key missing from a row is a missing value) ready
    for ``st.dataframe``: no cell is missing (see the module docstring). ``formats`` maps column names
    to the :data:`Format` their values are written with when the column becomes text; names that are
    not columns are ignored."""
    df = data.copy() if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    fmts = dict(formats or {})
    for i, name in enumerate(df.columns):
        values = list(df.iloc[:, i])
        if any(is_missing(v) for v in values):
            df.isetitem(i, pd.Series(_as_text(values, fmts.get(name)), index=df.index, dtype=object))
        elif any(isinstance(v, str) and reveal_invisible(v) != v for v in values):
            shown = [reveal_invisible(v) if isinstance(v, str) else v for v in values]
            df.isetitem(i, pd.Series(shown, index=df.index, dtype=object))
    if any(isinstance(c, str) and reveal_invisible(c) != c for c in df.columns):
        df.columns = [reveal_invisible(c) if isinstance(c, str) else c for c in df.columns]
    if any(isinstance(v, str) and reveal_invisible(v) != v for v in df.index):
        df.index = pd.Index([reveal_invisible(v) if isinstance(v, str) else v for v in df.index], name=df.index.name)
    return df


def is_numeric(table: pd.DataFrame, column: str) -> bool:
    """Whether ``table`` has ``column`` and it is (still) numeric: only then may a page give it a
    number format (``st.column_config.NumberColumn``); a column :func:`display_frame` turned into text
    keeps its own formatting."""
    return column in table.columns and pd.api.types.is_numeric_dtype(table[column])
