"""Model prices by exact model id (no prefix matching), from ``automonitor/data/prices.json`` (its source and
date, ``models``: id -> [input, output] USD per 1M tokens, ``snapshots``: aliases mapped to a priced id); an
unlisted model's price is unknown, never a confident 0; ``--param price_in/price_out`` set any model's
(:func:`resolve_price`). The rules: docs/how-to/backends.md ("Prices").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from automonitor.jsontypes import JSONObject

DATA_FILE = "prices.json"


@dataclass(frozen=True)
class Price:
    """A model's price in USD per 1M tokens and where it came from.

    Attributes:
        input / output: USD per 1M input / output tokens (0 when unknown).
        known: whether the price is known (``False``: costs are unknown, shown as such).
        source: ``table`` (the data file, ``model_id`` names the priced entry), ``param`` (``--param
            price_in/price_out``), ``local`` (a local backend: free) or ``unknown``.
        model_id: the priced id in the table (a snapshot's target), else ``None``.
    """

    input: float
    output: float
    known: bool
    source: str
    model_id: str | None = None

    def to_json(self) -> JSONObject:
        """``{"price_known", "price_per_mtok": [in, out] | None, "price_source", "price_model"}``."""
        return {
            "price_known": self.known,
            "price_per_mtok": [self.input, self.output] if self.known else None,
            "price_source": self.source,
            "price_model": self.model_id,
        }


UNKNOWN = Price(0.0, 0.0, False, "unknown")
LOCAL = Price(0.0, 0.0, True, "local")


@lru_cache(maxsize=1)
def price_table() -> dict[str, Any]:
    """The parsed data file: ``{"source", "date", "models": {id: [in, out]}, "snapshots": {id: id}}``.

    Raises:
        ValueError: a snapshot maps to an id that is not priced, or a price is not two numbers >= 0.
    """
    doc = json.loads((resources.files("automonitor") / "data" / DATA_FILE).read_text(encoding="utf-8"))
    models = {str(k).lower(): v for k, v in doc["models"].items()}
    for k, v in models.items():
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and x >= 0 for x in v)):
            raise ValueError(f"{DATA_FILE}: price of {k!r} must be [input, output] >= 0, got {v!r}")
    snaps = {str(k).lower(): str(v).lower() for k, v in doc.get("snapshots", {}).items()}
    for k, v in snaps.items():
        if v not in models:
            raise ValueError(f"{DATA_FILE}: snapshot {k!r} maps to {v!r}, which has no price")
    return {**doc, "models": models, "snapshots": snaps}


def model_key(model: str | None) -> str:
    """``model`` as the tables key it: stripped, lower case, a ``provider/`` prefix dropped (``""`` for
    ``None``)."""
    return (model or "").strip().lower().rsplit("/", 1)[-1]


def lookup(model: str | None) -> Price:
    """The table price of exactly ``model`` (or of the id its snapshot entry names); :data:`UNKNOWN`
    when the id is not listed."""
    key = model_key(model)
    table = price_table()
    target = key if key in table["models"] else table["snapshots"].get(key)
    if not target:
        return UNKNOWN
    pin, pout = table["models"][target]
    return Price(float(pin), float(pout), True, "table", target)


def resolve_price(
    model: str | None, *, local: bool = False, price_in: float | None = None, price_out: float | None = None
) -> Price:
    """The price used for a backend's costs: :data:`LOCAL` for a local backend, the user's ``price_in``/
    ``price_out`` (USD per 1M tokens; both or neither, >= 0, as ``BackendParams`` validates them) when given,
    else :func:`lookup`."""
    if local:
        return LOCAL
    if price_in is not None and price_out is not None:
        return Price(float(price_in), float(price_out), True, "param")
    return lookup(model)
