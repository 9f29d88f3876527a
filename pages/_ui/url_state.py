"""A page's selection in its URL (Streamlit): ``st.query_params`` carries the selection, so a view can be
shared as a link; widget state lives in ``st.session_state["<page>.<key>"]`` and is seeded from the URL
(:func:`seed_state`) and written back to it (:func:`sync_qp`)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import streamlit as st

from automonitor.vocab import canonical


def qp(key: str, default: str | None = None) -> str | None:
    """One query parameter (last value) or ``default``."""
    v = st.query_params.get(key)
    return v if v not in (None, "") else default


def qp_list(key: str) -> list[str]:
    """A repeated query parameter as a list (``?cat=a&cat=b``); empty when absent."""
    return [v for v in st.query_params.get_all(key) if v != ""]


def set_qp(**params: Any) -> None:
    """Set query parameters; ``None`` or an empty list removes a key; lists become repeated keys.

    Only writes when a value changes (each write updates the browser URL)."""
    for k, v in params.items():
        cur = st.query_params.get_all(k)
        if v is None or (isinstance(v, (list, tuple)) and not v) or v == "":
            if cur:
                del st.query_params[k]
            continue
        new = [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]
        if cur != new:
            st.query_params[k] = new if len(new) > 1 else new[0]


def seed_state(
    page: str,
    key: str,
    default: Any,
    *,
    valid: Iterable[Any] | None = None,
    multi: bool = False,
    cast: Callable[[str], Any] | None = None,
) -> str:
    """Initialise ``st.session_state["<page>.<key>"]`` from the URL (query param ``key``) and return
    that session-state key, for use as a widget ``key``.

    The URL wins when it carries a value that differs from the last value this helper synced (a shared
    link, a link from another page, or browser navigation); otherwise the widget keeps its state. When
    the URL carries nothing and the widget state is gone (the page was reopened from the sidebar), the
    value last synced by :func:`sync_qp` comes back.
    Values not in ``valid`` are dropped (a forged link cannot inject an unknown option); a value that differs
    from one of ``valid`` only in case becomes that one (:func:`automonitor.vocab.canonical`)."""
    skey = f"{page}.{key}"
    mark = f"{skey}.__url"
    raw = qp_list(key) if multi else qp(key)
    restored = False
    if not raw and skey not in st.session_state:
        # the page is opened again (e.g. from the sidebar, which drops the query string, and Streamlit
        # dropped the widget's state while another page ran): restore the selection last synced to
        # the URL; the page's sync_qp then writes it back into the URL
        kept = st.session_state.get(mark)
        if kept not in (None, "", []):
            seq = kept if isinstance(kept, (list, tuple)) else [kept]
            raw = [str(x) for x in seq] if multi else str(seq[0])
            restored = True
    if raw:
        vals = raw if multi else [raw]
        if cast is not None:
            parsed = []
            for v in vals:
                try:
                    parsed.append(cast(v))
                except (TypeError, ValueError):
                    pass
            vals = parsed
        if valid is not None:
            allowed = list(valid)
            # in the spelling of ``valid``: a link's ``Code`` is the option ``code`` (vocab.canonical)
            vals = [c for c in (canonical(v, allowed) for v in vals) if c is not None]
        value = vals if multi else (vals[0] if vals else None)
        if value not in (None, []) and (restored or st.session_state.get(mark) != value):
            st.session_state[skey] = value
            if not restored:
                st.session_state[mark] = value
            return skey
    if skey not in st.session_state:
        st.session_state[skey] = default
    return skey


def follow_options(skey: str, options: Sequence[Any]) -> None:
    """Keep a multiselect's state valid when its options change between reruns: values no longer
    offered are dropped, and a selection of *all* previous options grows to all current options
    (so a new run's template or a new score run shows up by default)."""
    opts_key = f"{skey}.__options"
    options = list(options)
    prev = st.session_state.get(opts_key)
    cur = st.session_state.get(skey)
    if isinstance(cur, list):
        if prev is not None and prev != options and set(cur) == set(prev):
            st.session_state[skey] = options
        elif any(v not in options for v in cur):
            st.session_state[skey] = [v for v in cur if v in options]
    st.session_state[opts_key] = options


def sync_qp(page: str, **keys: Any) -> None:
    """Write the given widget values to the URL and remember them as synced (see ``seed_state``)."""
    for key, value in keys.items():
        st.session_state[f"{page}.{key}.__url"] = value
    set_qp(**keys)
