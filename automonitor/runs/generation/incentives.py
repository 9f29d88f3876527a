"""Incentive templates: versioned TOML files in ``automonitor/runs/generation/incentives/`` (``name``,
``version``, ``kind``, ``applies_to``, ``text`` with ``{task}`` and optional ``{min_words}``, ``invites``,
``signal`` per task type: see :mod:`automonitor.runs.generation.filters`). The shipped ones:
docs/how-to/generating-pairs.md ("Specification gaming").
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from automonitor.errors import InputError

DIR = Path(__file__).resolve().parent / "incentives"


@dataclass(frozen=True)
class Incentive:
    """One incentive template (see the module docstring); ``sha256`` of the file for provenance."""

    name: str
    version: int
    kind: str
    applies_to: tuple[str, ...]
    text: str
    invites: str
    signal: dict[str, str]
    min_words: int
    sha256: str

    def render(self, task_prompt: str) -> str:
        """The request with the incentive injected."""
        return self.text.replace("{min_words}", str(self.min_words)).replace("{task}", task_prompt)

    def to_json(self) -> dict[str, object]:
        """Its provenance in a candidate's ``meta``: name, version, kind, what it invites, signals, file hash."""
        return {
            "name": self.name,
            "version": self.version,
            "kind": self.kind,
            "invites": self.invites,
            "signal": dict(self.signal),
            "sha256": self.sha256,
        }


def names() -> list[str]:
    """Names of the shipped incentives."""
    return sorted(p.stem for p in DIR.glob("*.toml"))


def load_incentive(name: str | None) -> Incentive:
    """Load ``incentives/NAME.toml`` (``None``: a job without an incentive, refused as unknown).

    Raises:
        InputError: unknown name (field ``incentive``) or a malformed file (file and field named).
    """
    path = DIR / f"{name}.toml"
    if not name or "/" in name or not path.is_file():
        raise InputError(f"unknown incentive {name!r}; choose one of {', '.join(names())}", field="incentive")
    raw = path.read_bytes()
    try:
        d = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid TOML: {exc}", file=str(path)) from None
    for key in ("name", "version", "text", "invites", "signal", "applies_to"):
        if key not in d:
            raise InputError("missing field", file=str(path), field=key)
    if "{task}" not in d["text"]:
        raise InputError("the template must contain {task}", file=str(path), field="text")
    return Incentive(
        str(d["name"]),
        int(d["version"]),
        str(d.get("kind", "")),
        tuple(d["applies_to"]),
        str(d["text"]),
        str(d["invites"]),
        {str(k): str(v) for k, v in d["signal"].items()},
        int(d.get("min_words", 300)),
        hashlib.sha256(raw).hexdigest(),
    )
