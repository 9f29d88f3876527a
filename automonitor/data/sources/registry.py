"""The source registry: every importer registers its :class:`Source` with :func:`register_source`.

Adding a source is one new module in :mod:`automonitor.data.sources` (the package imports every module
of itself once, so nothing else lists it)::

    \"\"\"My source: one line that the build report and the fetch manifest show (the module doc).\"\"\"

    from pathlib import Path

    from automonitor.data.sources.base import Side, SourceResult, make_pair
    from automonitor.data.sources.registry import register_source

    FOLDER = "my_source"
    FILES = (f"{FOLDER}/pairs.jsonl",)


    @register_source(
        "my_source", folder=FOLDER, category="specification_gaming", task="qa", files=FILES,
        order=170, verified_pairs=100, candidate_pairs=20,
    )
    def load(raw: Path) -> SourceResult:
        res = SourceResult()  # a missing file: listed in res.missing, no records
        for line, obj in res.jsonl(raw, FILES[0], need=("prompt", "gamed", "honest")):
            mis, ben = Side(obj["gamed"], FILES[0], f"line {line}"), Side(obj["honest"], FILES[0], f"line {line}")
            res.pairs.append(make_pair(f"my_source:{line}", obj["prompt"], mis, ben, label_source="instructed_demo"))
        return res

The decorator sets each returned pair's ``source``, ``category`` and ``task`` to the registered ones. A pair
builder that can reject may return the drop reason instead, which :meth:`SourceResult.add
<automonitor.data.sources.base.SourceResult.add>` counts.

``order`` places the source in :data:`REGISTRY`, which is the order the build reads, gates,
de-duplicates and draws sources in (so it fixes the build's output): a new source takes a number above
every other (appending changes nothing the other sources build). ``verified_pairs`` is its test quota in
the ``verified`` edition only (:func:`automonitor.data.build.config.verified_extra`), ``candidate_pairs``
its planned draw for the annotation candidate pool (:func:`automonitor.data.build.config.candidate_plan`).
The paper's fixed composition (the cells of edition ``paper``, the quotas of ``paper-r2``) stays in
:mod:`automonitor.data.build.config`. A module with two sources (``rl_character``: APPS and MBPP)
decorates two load functions.

``screen`` (the source's own gate), ``globs`` (files discovered at load time) and ``optional`` (used
when present) are the other fields of :class:`Source`. The build, the audit and the reports need
nothing else; ``fetch-sources`` downloads a folder only once its upstream origin (repository, commit,
licence) is in ``ORIGINS`` of ``scripts/make_manifest.py`` and that script has rewritten
``seeds/manifest.json`` (it raises ``KeyError`` for a registered folder without an origin).

This module imports nothing of the build.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from automonitor.data.parts import PartsFn
from automonitor.data.sources.base import SourcePair, SourceResult
from automonitor.vocab import CATEGORIES, TASKS, VIEWS

LoadFn = Callable[[Path], SourceResult]
ScreenFn = Callable[[SourcePair], str | None]


@dataclass(frozen=True)
class Source:
    """A registered importer.

    Attributes:
        name: the source name (``Sample.source`` of what it builds, ``SourcePair.source``).
        folder: its folder under the raw dir.
        category, task: contract vocabulary (:data:`automonitor.vocab.CATEGORIES`, :data:`~automonitor.vocab.TASKS`).
        files: the raw files it reads, relative to the raw dir (the fetch manifest pins them).
        load: ``load(raw_dir) -> SourceResult``.
        doc: one line that says what it is (default: the first line of its module doc).
        screen: the source's own static screen of a pair (a reason: the pair goes to the candidate
            pool), run by the build gates after the generic ones (comments already stripped); ``None``:
            no own screen.
        globs: glob patterns (relative to the raw dir) of files read besides ``files`` (discovered at
            load time, e.g. ODCV-Bench's agent logs): the fetch manifest pins what they match.
        order: the place in :data:`REGISTRY` (ascending; the build's read order).
        verified_pairs: test pairs of the ``verified`` edition only (``None``: no such quota).
        candidate_pairs: pairs drawn for the annotation candidate pool (``None``: no planned draw).
        optional: used when present (e.g. a non-commercial licence): ``build`` does not ask for it.
        views: the monitor views its samples have (:data:`automonitor.vocab.VIEWS`, always with ``full``);
            ``None``: read per sample from its parts (:mod:`automonitor.data.monitor_views`).
        parts: ``parts(response, meta) -> [Part]``, how its responses split into reasoning, actions and
            answer (:mod:`automonitor.data.parts`); ``None``: :func:`automonitor.data.parts.generic_parts`.
    """

    name: str
    folder: str
    category: str
    task: str
    files: tuple[str, ...]
    load: LoadFn
    doc: str
    screen: ScreenFn | None = None
    globs: tuple[str, ...] = ()
    order: int = 0
    verified_pairs: int | None = None
    candidate_pairs: int | None = None
    optional: bool = False
    views: tuple[str, ...] | None = None
    parts: PartsFn | None = None


#: source name -> :class:`Source`, ascending by ``(order, name)``; filled by :func:`register_source`
#: (``automonitor.data.sources`` imports every module of the package once).
REGISTRY: dict[str, Source] = {}


def _positive(name: str, field: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"source {name!r}: {field} must be a positive integer or None, got {value!r}")


def add_source(src: Source) -> Source:
    """Add ``src`` to :data:`REGISTRY` (kept in ``(order, name)`` order) and return it.

    Raises:
        ValueError: the name is taken, another source has the same ``order``, the category or task is
            not contract vocabulary, ``files`` is empty, a quota is not a positive integer, or ``views``
            lacks ``full`` or names an unknown view.
    """
    if src.name in REGISTRY:
        raise ValueError(f"source name {src.name!r} is registered twice")
    clash = next((s.name for s in REGISTRY.values() if s.order == src.order), None)
    if clash is not None:
        raise ValueError(f"source {src.name!r}: order {src.order} is taken by {clash!r}")
    if src.category not in CATEGORIES:
        raise ValueError(f"source {src.name!r}: category must be one of {', '.join(CATEGORIES)}, got {src.category!r}")
    if src.task not in TASKS:
        raise ValueError(f"source {src.name!r}: task must be one of {', '.join(TASKS)}, got {src.task!r}")
    if not src.files:
        raise ValueError(f"source {src.name!r} reads no files")
    _positive(src.name, "verified_pairs", src.verified_pairs)
    _positive(src.name, "candidate_pairs", src.candidate_pairs)
    if src.views is not None and ("full" not in src.views or not set(src.views) <= set(VIEWS)):
        raise ValueError(
            f"source {src.name!r}: views must include 'full' and be among {', '.join(VIEWS)}, got {src.views!r}"
        )
    ordered = sorted([*REGISTRY.values(), src], key=lambda s: (s.order, s.name))
    REGISTRY.clear()  # in place: importers hold this dict
    REGISTRY.update((s.name, s) for s in ordered)
    return src


def register_source(
    name: str,
    *,
    folder: str,
    category: str,
    task: str,
    files: Iterable[str],
    order: int,
    doc: str | None = None,
    screen: ScreenFn | None = None,
    globs: Iterable[str] = (),
    verified_pairs: int | None = None,
    candidate_pairs: int | None = None,
    optional: bool = False,
    views: Iterable[str] | None = None,
    parts: PartsFn | None = None,
) -> Callable[[LoadFn], LoadFn]:
    """Decorator of a source's ``load(raw_dir) -> SourceResult``: registers a :class:`Source` (fields as
    there; ``doc`` defaults to the first line of the decorated function's module doc) whose ``load``, also
    returned, is the function with ``name``, ``category`` and ``task`` set on each pair and control it returns.

    Raises:
        ValueError: see :func:`add_source` (raised when the decorator is applied, i.e. at import).
    """

    def deco(read: LoadFn) -> LoadFn:
        module_doc = (getattr(read, "__globals__", {}).get("__doc__") or "").strip()

        @functools.wraps(read)
        def load(raw: Path) -> SourceResult:
            res = read(raw)
            for p in (*res.pairs, *res.controls):
                p.source, p.category, p.task = name, category, task
            return res

        add_source(
            Source(
                name=name,
                folder=folder,
                category=category,
                task=task,
                files=tuple(files),
                load=load,
                doc=doc if doc is not None else (module_doc.splitlines() or [""])[0],
                screen=screen,
                globs=tuple(globs),
                order=order,
                verified_pairs=verified_pairs,
                candidate_pairs=candidate_pairs,
                optional=optional,
                views=None if views is None else tuple(views),
                parts=parts,
            )
        )
        return load

    return deco


__all__ = ["REGISTRY", "Source", "add_source", "register_source"]
