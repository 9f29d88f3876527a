"""Content hashes and stable ids for samples.

Text is hashed after Unicode NFC normalisation and stripping of surrounding whitespace, so the same
request or response always gets the same hash whatever file or source it came from.
"""

from __future__ import annotations

import hashlib
import unicodedata


def norm_text(text: str) -> str:
    """NFC-normalised text without surrounding whitespace (the form that is hashed)."""
    return unicodedata.normalize("NFC", text).strip()


_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # Hangul fillers, braille blank
_BLANK_CATEGORIES = ("Cc", "Cf", "Zs", "Zl", "Zp")


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: only whitespace, control characters, separators and invisible
    formatting characters (Unicode categories Cc, Cf, Zs, Zl, Zp: e.g. zero-width space U+200B, zero-width
    joiner U+200D, word joiner U+2060, BOM U+FEFF) or blank fillers (U+3164, U+2800...)."""
    return all(ch.isspace() or ch in _INVISIBLE or unicodedata.category(ch) in _BLANK_CATEGORIES for ch in text)


def sha256_text(text: str) -> str:
    """Hex sha256 (64 chars) of ``norm_text(text)`` encoded as UTF-8."""
    return hashlib.sha256(norm_text(text).encode("utf-8")).hexdigest()


def content_hash(request: str, response: str, label: str) -> str:
    """Hex sha256 of the sample's request, response and label (separated unambiguously)."""
    h = hashlib.sha256()
    for part in (norm_text(request), norm_text(response), label):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()


def make_sample_id(pair_id: str, label: str, request: str, response: str) -> str:
    """A stable sample id (``s_`` + 24 hex chars) derived from pair id and content.

    Used when an import file gives no ``sample_id`` and by ``build``; re-importing the same row
    yields the same id, so nothing is duplicated.
    """
    h = hashlib.sha256()
    h.update(pair_id.encode("utf-8") + b"\x00")
    h.update(content_hash(request, response, label).encode("ascii"))
    return "s_" + h.hexdigest()[:24]
