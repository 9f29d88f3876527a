"""Download the public raw sources the build reads, verified against ``seeds/manifest.json``.

The manifest lists, per source folder, the upstream repository, commit and license, and per file its
path in the raw layout (``path``, e.g. ``hh_rlhf/harmless-base/test.jsonl.gz``), its path upstream
(``upstream_path``), the pinned download URL
``https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<upstream_path>``, ``sha256`` and
``size`` (bytes).

Mirror: ``--mirror URL`` replaces the whole upstream URL by ``URL/<path>``, i.e. the mirror serves a
directory in the raw layout (for example ``python -m http.server`` run inside a copy of
a raw sources dir, or any static file server over such a copy).

Every file is written to ``DEST/<path>.part`` while it downloads, then its sha256 is checked: on a
match the file is moved into place, on a mismatch the partial file is removed and the file is
reported as failed. Files already present with the right sha256 are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from automonitor.errors import InputError

if TYPE_CHECKING:
    import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MANIFEST = REPO_ROOT / "seeds" / "manifest.json"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def load_manifest(path: Path | str | None = None) -> dict[str, Any]:
    """Read and check a manifest (default ``seeds/manifest.json``).

    Raises:
        InputError: missing file, invalid JSON, or an entry without path/url/sha256.
    """
    p = Path(path) if path else DEFAULT_MANIFEST
    try:
        doc: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("manifest not found", file=str(p), field="--manifest") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=str(p), line=exc.lineno) from None
    for s in doc.get("sources", []):
        for f in s.get("files", []):
            for key in ("path", "url", "sha256"):
                if not isinstance(f.get(key), str) or not f[key]:
                    raise InputError(f"manifest file entry without {key}", file=str(p), field=key)
            if ".." in Path(f["path"]).parts or Path(f["path"]).is_absolute():
                raise InputError("manifest path must be relative, without '..'", file=str(p), field="path")
    return doc


def _download(client: httpx.Client, url: str, part: Path) -> tuple[str, int]:
    """Stream ``url`` into ``part``; returns (sha256, bytes). Raises httpx errors on HTTP failures."""
    h = hashlib.sha256()
    size = 0
    with client.stream("GET", url) as resp:
        resp.raise_for_status()
        with open(part, "wb") as fh:
            for block in resp.iter_bytes(1 << 20):
                fh.write(block)
                h.update(block)
                size += len(block)
    return h.hexdigest(), size


def _check_folders(doc: dict[str, Any], folders: Iterable[str] | None) -> set[str] | None:
    """The wanted source folders (``None``: all of them).

    Raises:
        InputError: a folder the manifest does not have (field ``--source``).
    """
    wanted = set(folders) if folders else None
    known = {s["folder"] for s in doc["sources"]}
    if wanted and wanted - known:
        raise InputError(
            f"unknown source folder(s): {', '.join(sorted(wanted - known))} (manifest has: {', '.join(sorted(known))})",
            field="--source",
        )
    return wanted


def _fetch_file(
    get: Callable[[httpx.Client, str, Path], tuple[str, int]],
    client: httpx.Client,
    entry: dict[str, Any],
    dest: Path,
    mirror: str | None,
    out: dict[str, Any],
    progress: Callable[[str], None] | None,
) -> None:
    """Fetch one manifest file ``entry`` (``path``, ``url``, ``sha256``) into ``dest`` unless it is
    present with the right sha256, and record the outcome in ``out`` (``skipped``, ``downloaded`` and
    ``bytes``, or ``failed`` with the error; a failed file leaves no partial file behind)."""
    import httpx

    path = dest / entry["path"]
    if path.is_file() and sha256_file(path) == entry["sha256"]:
        out["skipped"].append(entry["path"])
        return
    url = f"{mirror.rstrip('/')}/{entry['path']}" if mirror else entry["url"]
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    failed: tuple[str, str] | None = None  # (the error recorded, the progress line's)
    try:
        digest, size = get(client, url, part)
    except (httpx.HTTPError, OSError) as exc:
        failed = (f"{type(exc).__name__}: {exc}", str(exc))
    else:
        if digest != entry["sha256"]:
            why = f"expected {entry['sha256']}, got {digest} ({size} bytes); partial file removed"
            failed = (f"sha256 mismatch: {why}", "sha256 mismatch")
    if failed is not None:
        part.unlink(missing_ok=True)
        out["failed"].append({"path": entry["path"], "url": url, "error": failed[0]})
        if progress:
            progress(f"FAILED {entry['path']}: {failed[1]}")
        return
    os.replace(part, path)
    out["downloaded"].append(entry["path"])
    out["bytes"] += size
    if progress:
        progress(f"ok {entry['path']} ({size} bytes)")


def fetch_sources(
    dest: Path | str,
    *,
    mirror: str | None = None,
    manifest: Path | str | None = None,
    folders: Iterable[str] | None = None,
    timeout: float = 60.0,
    retries: int = 3,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Download every manifest file into ``dest`` (raw layout), verifying sha256.

    Args:
        dest: target directory (created if missing).
        mirror: base URL of a mirror in the raw layout (see module doc); ``None`` = upstream URLs.
        manifest: manifest path (default ``seeds/manifest.json``).
        folders: only these source folders (default: all).
        timeout: per-request timeout in seconds; transport errors are retried ``retries`` times.
    Returns:
        ``{"dest", "downloaded": [path], "skipped": [path], "failed": [{"path", "url", "error"}],
        "bytes": int}``; a failed file leaves nothing behind (no partial file).
    Raises:
        InputError: bad manifest or unknown folder.
    """
    import httpx
    from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

    doc = load_manifest(manifest)
    dest = Path(dest)
    wanted = _check_folders(doc, folders)
    out: dict[str, Any] = {"dest": str(dest), "downloaded": [], "skipped": [], "failed": [], "bytes": 0}
    get = retry(
        reraise=True,
        stop=stop_after_attempt(max(1, retries)),
        wait=wait_exponential(multiplier=0.2, max=2),
        retry=retry_if_exception_type(httpx.TransportError),
    )(_download)
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        for s in doc["sources"]:
            if wanted and s["folder"] not in wanted:
                continue
            for entry in s["files"]:
                _fetch_file(get, client, entry, dest, mirror, out, progress)
    return out
