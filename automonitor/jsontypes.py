"""Types of JSON data at the true JSON boundaries (a JSON column, a parsed file before validation, a JSON
response, a ``--json`` document): everywhere else the seams take and return pydantic models, dataclasses
or ``TypedDict``s.

``JSONValue`` is what ``json.loads`` returns (and ``json.dumps`` accepts): ``None``, ``bool``, ``int``,
``float``, ``str``, a list of JSON values or an object with string keys. Pydantic validates against it
(``TypeAdapter(JSONValue)``).
"""

from __future__ import annotations

from typing import Union

from typing_extensions import TypeAliasType

JSONScalar = Union[None, bool, int, float, str]
"""A JSON scalar."""
JSONValue = TypeAliasType("JSONValue", "Union[JSONScalar, list[JSONValue], dict[str, JSONValue]]")
"""Any JSON value (recursive)."""
JSONObject = dict[str, JSONValue]
"""A JSON object (``json.loads`` of ``{...}``)."""
