"""Types of JSON data at the true JSON boundaries (a JSON column, a parsed file before validation, a JSON
response, a ``--json`` document): everywhere else the seams take and return pydantic models, dataclasses
or ``TypedDict``s.

``JSONValue`` is what ``json.loads`` returns (and ``json.dumps`` accepts): ``None``, ``bool``, ``int``,
``float``, ``str``, a list of JSON values or an object with string keys. Pydantic validates against it
(``TypeAdapter(JSONValue)``).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Callable, Iterable, Union

from typing_extensions import TypeAliasType

JSONScalar = Union[None, bool, int, float, str]
"""A JSON scalar."""
JSONValue = TypeAliasType("JSONValue", "Union[JSONScalar, list[JSONValue], dict[str, JSONValue]]")
"""Any JSON value (recursive)."""
JSONObject = dict[str, JSONValue]
"""A JSON object (``json.loads`` of ``{...}``)."""


def json_safe(obj: object) -> object:
    """A JSON-ready copy of ``obj``: dict keys as ``str``, tuples as lists, NumPy scalars and arrays as
    Python values, NaN and infinities as ``None``; any other value as it is. NumPy is not imported: when it
    is not loaded, no value is a NumPy one."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if obj and all(type(v) is float for v in obj):  # fast path for curves
            return [v if math.isfinite(v) else None for v in obj]
        return [json_safe(v) for v in obj]
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, (np.generic, np.ndarray)):
        return json_safe(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def unique_keys(pairs: list[tuple[str, JSONValue]], error: type[ValueError] = ValueError) -> JSONObject:
    """``object_pairs_hook`` refusing an object that names a key twice with ``error`` (RFC 8259 4: names
    SHOULD be unique; a decoder keeps one of them silently, so ``{"verdict": "benign", "verdict":
    "misbehavior"}`` would say whichever the decoder picks)."""
    seen: JSONObject = {}
    for k, v in pairs:
        if k in seen:
            raise error(f"duplicate key {k!r}")
        seen[k] = v
    return seen


_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_MakeEncoder = Callable[
    [None, None, Callable[[str], str], None, str, str, bool, bool, bool], Callable[[object, int], list[str]]
]
#: the standard library's C encoder (``None`` where ``_json`` is missing), as ``json.JSONEncoder.iterencode`` uses it:
#: (markers, default, string encoder, indent, key separator, item separator, sort_keys, skipkeys, allow_nan)
_c_make_encoder: _MakeEncoder | None = getattr(json.encoder, "c_make_encoder", None)


def dumps_indented(obj: object, indent: int = 2, default: Callable[[object], object] | None = None) -> str:
    """``json.dumps(obj, indent=indent, default=default)``, the same string (the other arguments at their
    defaults: ASCII escapes, NaN and infinities allowed, keys in insertion order, circular references
    refused), in a fraction of the time for a large document.

    With an indent the standard library encodes every value in Python (its C encoder takes no indent); a
    report of 100 runs spent half a second there. Here the containers whose items are all plain scalars
    (``str``, ``int``, ``float``, ``bool``, ``None``: the lists of numbers and the statistics dicts, most of a
    report's values) are encoded by the C encoder, with the item separator that carries the newline and the
    indent of their depth; only the containers above them are walked in Python.

    Raises:
        TypeError: a value that is not JSON data and that ``default`` does not turn into JSON data (as
            ``json.dumps``; without ``default``, any such value), or a dict key that is not a ``str``,
            ``int``, ``float``, ``bool`` or ``None``.
        ValueError: a circular reference.
    """
    if type(obj) in _SCALAR_TYPES:  # no container: nothing to indent
        return json.dumps(obj, default=default)
    chunks: list[str] = []
    _Indented(" " * indent, default).value(obj, 0, chunks)
    return "".join(chunks)


class _Indented:
    """The walk of :func:`dumps_indented`: ``value`` appends the encoding of one value at one depth."""

    def __init__(self, indent: str, default: Callable[[object], object] | None) -> None:
        self.indent, self.default = indent, default
        self.leaves: list[Callable[[object], str]] = []  # by depth: the C encoder with that depth's separator
        self.markers: set[int] = set()

    def leaf(self, depth: int) -> Callable[[object], str]:
        while len(self.leaves) <= depth:
            sep = ",\n" + self.indent * (len(self.leaves) + 1)
            if _c_make_encoder is None:  # no C encoder: the same output from the Python one
                self.leaves.append(json.JSONEncoder(check_circular=False, separators=(sep, ": ")).encode)
            else:  # called directly: JSONEncoder.encode makes a new one per call
                enc = _c_make_encoder(
                    None, None, json.encoder.encode_basestring_ascii, None, ": ", sep, False, False, True
                )
                self.leaves.append(_joined(enc))
        return self.leaves[depth]

    def value(self, o: object, depth: int, out: list[str]) -> None:
        if isinstance(o, str):
            out.append(json.encoder.encode_basestring_ascii(o))
        elif o is None:
            out.append("null")
        elif o is True:
            out.append("true")
        elif o is False:
            out.append("false")
        elif isinstance(o, int):
            out.append(int.__repr__(o))
        elif isinstance(o, float):
            out.append(_float_text(o))
        elif isinstance(o, (list, tuple)):
            self.container(o, o, depth, out)
        elif isinstance(o, dict):
            self.container(o, o.values(), depth, out)
        else:
            if self.default is None:
                raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")
            self.enter(o)
            self.value(self.default(o), depth, out)
            self.markers.discard(id(o))

    def enter(self, o: object) -> None:
        if id(o) in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(id(o))

    def container(
        self,
        o: list[object] | tuple[object, ...] | dict[object, object],
        items: Iterable[object],
        depth: int,
        out: list[str],
    ) -> None:
        if not o:
            out.append("{}" if isinstance(o, dict) else "[]")
            return
        inner = "\n" + self.indent * (depth + 1)
        if set(map(type, items)) <= _SCALAR_TYPES:  # plain scalars only: one call of the C encoder
            s = self.leaf(depth)(o)
            out.append(s[0] + inner + s[1:-1] + "\n" + self.indent * depth + s[-1])
            return
        self.enter(o)
        sep = "," + inner
        if isinstance(o, dict):
            out.append("{")
            first = True
            for k, v in o.items():
                out.append(inner if first else sep)
                first = False
                out.append(json.encoder.encode_basestring_ascii(_key_text(k)))
                out.append(": ")
                self.value(v, depth + 1, out)
            out.append("\n" + self.indent * depth + "}")
        else:
            out.append("[")
            for i, v in enumerate(o):
                out.append(sep if i else inner)
                self.value(v, depth + 1, out)
            out.append("\n" + self.indent * depth + "]")
        self.markers.discard(id(o))


def _joined(enc: Callable[[object, int], list[str]]) -> Callable[[object], str]:
    """The text of a C encoder's chunks for one value."""
    return lambda o: "".join(enc(o, 0))


def _float_text(o: float) -> str:
    """A float as ``json.dumps`` writes it (``NaN``, ``Infinity`` and ``-Infinity`` allowed)."""
    if o != o:
        return "NaN"
    if o == math.inf:
        return "Infinity"
    if o == -math.inf:
        return "-Infinity"
    return float.__repr__(o)


def _key_text(k: object) -> str:
    """A dict key as ``json.dumps`` turns it into a string; ``TypeError`` for one it refuses."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float_text(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")
