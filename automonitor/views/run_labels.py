"""Run labels for dropdowns, legends and hovers (docs/explanation/app.md, "Runs in every dropdown"):

- :func:`run_option_label`: at most :data:`RUN_LABEL_MAX` characters for selectbox/multiselect options
  and plot legends (monitor name, run id or its end, an unusual status, then the template when there is room);
- :func:`run_select_label`: at most :data:`RUN_SELECT_MAX` characters for the Drill-down's wide run selects:
  the whole label when it fits, else the monitor name cut at its end ("…"), never in the middle, the run id whole;
- :func:`run_full_label`: everything, for hovers, tooltips, ``help=`` texts and the Runs page's banner.

Both return plain text: escape it for the place it is shown (``md_escape``, ``plot_text``, ``esc``).
"""

from __future__ import annotations

import re
from typing import Literal, Mapping, Sequence

from automonitor.vocab import RunStatus

from automonitor.escaping import md_escape

#: The longest :func:`run_option_label` (characters): fits a drill-down run select at 1280x720.
RUN_LABEL_MAX = 44
#: Statuses a short label leaves out (the normal end of a run); every other one is named.
QUIET_STATUSES: frozenset[RunStatus | Literal[""]] = frozenset({"finished", "imported", ""})
#: The longest :func:`run_select_label` (characters): the Drill-down's run selects (three quarters of the page's
#: width: 573 px at 1280x720, about 91 characters of a run label) show it whole (tests/e2e/test_run_labels_browser.py).
RUN_SELECT_MAX = 80
#: The fewest characters of a monitor name :func:`run_select_label` keeps before it leaves the template out.
MONITOR_MIN = 16
ELLIPSIS = "…"
_SEP = " · "


def _field(run: object, key: str) -> str:
    """``run[key]`` as text (``""`` when missing or ``None``); ``run`` is a dict or a pandas row."""
    try:
        get = getattr(run, "get", None)
        value = get(key) if callable(get) else getattr(run, key, None)
    except (KeyError, TypeError):
        value = None
    if value is None or value != value:  # None or NaN
        return ""
    return str(value)


def middle_cut(text: str, width: int) -> str:
    """``text`` when it has at most ``width`` characters, else its start and end joined by "…" so that
    the result has exactly ``width`` characters (``width`` >= 1; for ``width`` 1 just "…")."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def end_cut(text: str, width: int) -> str:
    """``text`` when it has at most ``width`` characters, else its first ``width - 1`` characters and "…" (exactly
    ``width`` characters; ``width`` >= 1)."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS


#: A backend prefix of a monitor spec (``openai:``, ``probe:``), not a URL scheme (``https://``).
BACKEND_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+:(?!//)")
_PATHLIKE = re.compile(r"^(?:/|\./|\.\./|~/)\S*$|^\S+/\S*\.[A-Za-z][A-Za-z0-9]{0,15}$")


def short_monitor(monitor: str) -> str:
    """A monitor name without directories when it names a file: ``probe:/a/b/model.joblib`` ->
    ``probe:model.joblib``, ``/a/b/x.pt`` -> ``x.pt``, ``lora:runs/adapter.safetensors`` ->
    ``lora:adapter.safetensors``. Anything else is unchanged: a model id (``openai:meta-llama/Llama-3-8B``),
    a URL, a name with spaces or markup (a path is absolute, relative with ``./ ../ ~/``, or ends in a
    file extension, and has no whitespace)."""
    match = BACKEND_PREFIX.match(monitor)
    head = match.group(0) if match else ""
    path = monitor[len(head) :]
    if "/" not in path or "://" in path or not _PATHLIKE.match(path):
        return monitor
    return head + (path.rstrip("/").rsplit("/", 1)[-1] or path)


def id_tail(run_id: str, width: int) -> str:
    """A run id of at most ``width`` characters: the whole id when it fits, else "…" and its end (the
    end tells runs apart: ``run_<date>_<time>_<random>``, ``imp-<random>``)."""
    if len(run_id) <= width:
        return run_id
    return ELLIPSIS + run_id[len(run_id) - max(0, width - 1) :] if width > 1 else ELLIPSIS[:width]


def run_option_label(run: object, max_len: int = RUN_LABEL_MAX) -> str:
    """A run's label for dropdown options and plot legends, at most ``max_len`` characters (>= 32).

    ``run``: a dict (or pandas row) with ``run_id``, ``monitor``, optional ``template`` and ``status``.
    Shape: ``"<monitor> · <template> · <run id>"`` with `` (<status>)`` appended for a status not in
    :data:`QUIET_STATUSES` (``cancelled``, ``failed``, ``running``, ``pending``); an artefact path in
    the monitor name is reduced to its file name (:func:`short_monitor`). The first of these that fits:
    the whole label; the run id cut to its last 14 characters ("…101010_abc123"); without the
    template; the monitor name shortened in the middle (at least 16 characters); then the run id cut
    to its last 7. The status is always kept whole. :func:`run_full_label` has everything. Plain
    text, not escaped.
    """
    max_len = max(32, int(max_len))
    rid, tail, mon, tpl = _label_parts(run)

    def label(monitor: str, template: str, run_id: str) -> str:
        return _SEP.join(p for p in (monitor, template, run_id) if p) + tail

    for candidate in (label(mon, tpl, rid), label(mon, tpl, id_tail(rid, 15)), label(mon, "", id_tail(rid, 15))):
        if len(candidate) <= max_len:
            return candidate
    for width in (15, 7):
        short = id_tail(rid, width)
        room = max_len - len(label("", "", short)) - len(_SEP)
        if room >= 16 or width == 7:
            return label(middle_cut(mon, max(1, room)), "", short)[:max_len]
    raise AssertionError("unreachable")  # pragma: no cover


def _label_parts(run: object) -> tuple[str, str, str, str]:
    """``(run id, status tail, monitor, template)`` of a run label: the tail is `` (<status>)`` for a status not in
    :data:`QUIET_STATUSES`, else empty; the monitor reduced to its file name (:func:`short_monitor`), ``?`` when
    missing. ``run`` as for :func:`run_option_label`."""
    status = _field(run, "status")
    tail = f" ({status})" if status not in QUIET_STATUSES else ""
    return _field(run, "run_id"), tail, short_monitor(_field(run, "monitor")) or "?", _field(run, "template")


def run_select_label(run: object, max_len: int = RUN_SELECT_MAX) -> str:
    """A run's label for the Drill-down's run selects (wide: the whole label fits there in most stores), at most
    ``max_len`` characters (>= 32). ``run`` as for :func:`run_option_label`, the same shape ``"<monitor> ·
    <template> · <run id>"`` with `` (<status>)`` for a status not in :data:`QUIET_STATUSES` and an artefact path
    reduced to its file name. Nothing is cut in the middle of a name: the first of these that fits is the whole
    label; the monitor name cut at its end ("openai:gpt-4o-mini-2024-…", at least :data:`MONITOR_MIN`
    characters kept); the same without the template; and for a run id too long even for that, the label cut at
    its end. The run id and the status are whole but in that last case. :func:`run_full_label` (the select's
    tooltip) has everything. Plain text, not escaped."""
    max_len = max(32, int(max_len))
    rid, tail, mon, tpl = _label_parts(run)

    def label(monitor: str, template: str) -> str:
        return _SEP.join(p for p in (monitor, template, rid) if p) + tail

    if len(label(mon, tpl)) <= max_len:
        return label(mon, tpl)
    for template in (tpl, ""):
        room = max_len - len(label("", template)) - len(_SEP)
        if room >= min(MONITOR_MIN, len(mon)):
            return label(end_cut(mon, room), template)
    return end_cut(label(end_cut(mon, MONITOR_MIN), ""), max_len)


def run_select_note(run: object, max_len: int = RUN_SELECT_MAX) -> str | None:
    """The whole name of a run whose :func:`run_select_label` is cut (:func:`run_full_label`), for a line under the
    select that wraps; ``None`` when the select shows it whole. Plain text, not escaped."""
    if run_select_label(run, max_len) == run_select_label(run, 1 << 30):
        return None
    return run_full_label(run)


def run_full_label(run: object) -> str:
    """The whole label of a run for hovers and tooltips: ``"<monitor> · <template> · <run id>
    (<status>)"`` (template and status only when known). Plain text, not escaped."""
    parts = [p for p in (_field(run, "monitor"), _field(run, "template"), _field(run, "run_id")) if p]
    status = _field(run, "status")
    return _SEP.join(parts) + (f" ({status})" if status else "")


def active_runs_line(runs: Sequence[Mapping[str, object]], shown: int = 3) -> str:
    """One markdown line for the top of the Runs page naming the active runs (``runs``: dicts with ``run_id``,
    ``monitor``, ``template``, ``status``), e.g. "**1 run in progress:** rules · direct · r000 (running) · progress
    and Cancel under *In progress*, below". At most ``shown`` are named, each by its whole label
    (:func:`run_full_label`: the line wraps, no name is cut), the rest counted ("+2 more"); no counts of judged
    samples (the line is not refreshed while the run goes on; the live boxes below are). Data values are
    markdown-escaped; ``""`` without runs."""
    if not runs:
        return ""
    k = len(runs)
    named = " · ".join(md_escape(run_full_label(r)) for r in list(runs)[:shown])
    more = f" · +{k - shown} more" if k > shown else ""
    return f"**{k} run{'s' if k != 1 else ''} in progress:** {named}{more} · progress and Cancel under *In progress*, below"
