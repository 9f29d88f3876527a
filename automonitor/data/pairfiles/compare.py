"""A validated pair file (its :class:`~automonitor.data.pairfiles.read.SampleKey` list) against the store:
conflicts (:func:`check_store`) and duplicate pairs (:func:`find_duplicates`). Reads only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from automonitor.data.pairfiles.read import SampleKey, group_pairs
from automonitor.data.records import Problems
from store.queries.pair_files import pairs_by_request_hash, stored_pair_members, stored_samples

if TYPE_CHECKING:
    from sqlmodel import Session

# {sample_id: (status, split)} of the samples already stored with the same content
StoredSamples = dict[str, tuple[str, str | None]]


def check_store(session: Session, keys: list[SampleKey], file: str, *, max_errors: int = 10) -> StoredSamples:
    """Check ``keys`` against the store; returns ``{sample_id: (status, split)}`` for the samples
    already stored with the same content (an import skips them).

    A ``sample_id`` already stored with a different pair, category, task, label, request or response
    (request and response compared by hash), or a ``pair_id`` already stored with other sample ids,
    raises ``InputError`` (field ``sample_id`` or ``pair_id``). Reads only.
    """
    problems = Problems(file, max_errors)
    stored = stored_samples(session, [k.sample_id for k in keys])
    same: StoredSamples = {}
    for k in keys:
        s = stored.get(k.sample_id)
        if s is None:
            continue
        fields = ("pair_id", "category", "task", "label", "request_hash", "response_hash")
        diffs = [f.removesuffix("_hash") for f in fields if getattr(s, f) != getattr(k, f)]
        if diffs:
            problems.add(
                f"sample_id '{k.sample_id}' is already in the store with different content "
                f"(differs in: {', '.join(diffs)})",
                line=k.line,
                field="sample_id",
            )
        else:
            same[k.sample_id] = (s.status, s.split)
    groups = group_pairs(keys)
    stored_pairs = stored_pair_members(session, groups)
    for pid, sides in groups.items():
        have = stored_pairs.get(pid)
        if have is None:
            continue
        want = {s.sample_id for s in sides}
        if have != want:
            problems.add(
                f"pair_id '{pid}' is already in the store with different samples "
                f"(stored: {', '.join(sorted(have))}; this file: {', '.join(sorted(want))})",
                line=sides[0].line,
                field="pair_id",
            )
    problems.raise_if_any()
    return same


def _pair_key(request: bytes, responses: Iterable[bytes]) -> bytes:
    """A pair's identity for the duplicate check: its request digest, then its responses' digests sorted
    (labels not compared); one small bytes object a pair."""
    return request + b"".join(sorted(responses))


def find_duplicates(session: Session, keys: list[SampleKey]) -> dict[str, str]:
    """Pairs of ``keys`` that repeat the request and both responses (after ``norm_text``; labels not
    compared) of a pair stored under ANOTHER ``pair_id``, or of an earlier pair of the same file:
    ``{pair_id: duplicated pair_id}`` in file order. Reads only."""
    groups = group_pairs(keys)
    req_hashes = list({sides[0].request_hash for sides in groups.values()})
    known: dict[bytes, str] = {}
    for pid, sides in pairs_by_request_hash(session, req_hashes).items():
        if len(sides) == 2:
            key = _pair_key(bytes.fromhex(sides[0][0]), (bytes.fromhex(rs) for _, rs in sides))
            known.setdefault(key, pid)
    del req_hashes
    out: dict[str, str] = {}
    for pid, pair in groups.items():
        key = _pair_key(pair[0].request_digest, (s.response_digest for s in pair))
        other = known.get(key)
        if other is not None and other != pid:
            out[pid] = other
        else:
            known.setdefault(key, pid)
    return out
