"""The options of an analysis, as one typed object: :class:`AnalysisOptions` (what
:func:`~automonitor.analysis.analyze` reads from in-memory frames) and :class:`ReportOptions` (adds
what :func:`~automonitor.analysis.report` reads from the store). The CLI, the pages and scripts
build one of these; a bad value raises :class:`pydantic.ValidationError` (a ``ValueError``) naming the
field."""

from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from automonitor.vocab import INVALID_POLICIES

__all__ = ["AnalysisOptions", "ReportOptions", "resolve_options"]


class AnalysisOptions(BaseModel):
    """How runs are analysed.

    Attributes:
        invalid: the unscored policy, ``exclude`` | ``as-flag`` | ``as-miss``
            (:mod:`automonitor.analysis.metrics`).
        n_boot: pair-clustered bootstrap resamples per run and per comparison (0: no bootstrap).
        seed: the numpy seed of the resampling (the same seed gives every run over the same pairs the same
            resampling weights).
        cost_ratio: cost of a miss over the cost of a false alarm, for the cost-minimising operating point of
            score runs (:func:`automonitor.analysis.metrics.operating_point`); > 0.
        prevalence: misbehavior prevalence assumed for that operating point, in (0, 1); ``None``: the test
            set's.
        compare: run pairs ``(A, B)`` for paired statistics; ``None``: every two runs of the same monitor,
            and the two runs when there are exactly two.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    invalid: str = "exclude"
    n_boot: int = Field(1000, ge=0)
    seed: int = 0
    cost_ratio: float = Field(1.0, gt=0)
    prevalence: float | None = Field(None, gt=0, lt=1)
    compare: tuple[tuple[str, str], ...] | None = None

    @field_validator("invalid")
    @classmethod
    def _policy(cls, v: str) -> str:
        if v not in INVALID_POLICIES:
            raise ValueError(f"unscored policy must be one of {', '.join(INVALID_POLICIES)}, got {v!r}")
        return v

    @field_validator("compare", mode="before")
    @classmethod
    def _pairs(cls, v: Iterable[Iterable[str]] | None) -> tuple[tuple[str, ...], ...] | None:
        return None if v is None else tuple(tuple(p) for p in v)


class ReportOptions(AnalysisOptions):
    """:class:`AnalysisOptions` plus what a report on a store reads.

    Attributes:
        with_grounding: ground the evidence of evidence runs in the sample texts (and score it against gold
            spans where there are some).
        edition: report only the runs of this test-set edition (``None``: every run).
        with_ladder: without named runs, report the detector ladder's runs (kind ``ladder``) too; they are
            left out by default (:mod:`automonitor.data.build.ladder_runs`).
    """

    with_grounding: bool = True
    edition: str | None = None
    with_ladder: bool = False


O = TypeVar("O", bound=AnalysisOptions)


def resolve_options(cls: type[O], options: AnalysisOptions | str | None, overrides: Mapping[str, object]) -> O:
    """``options`` (or the defaults) with ``overrides`` applied, as a ``cls``. A string ``options`` is the
    unscored policy (the positional ``invalid`` of earlier releases). ``overrides`` are field names of
    ``cls`` (keyword arguments such as ``n_boot=40``). Raises :class:`TypeError` for a name that is not a
    field and ``ValueError`` (pydantic's) for a bad value."""
    base: dict[str, object] = {}
    if isinstance(options, str):
        base["invalid"] = options
    elif options is not None:
        base = options.model_dump()
    unknown = set(overrides) - set(cls.model_fields)
    if unknown:
        raise TypeError(f"unknown analysis option(s): {', '.join(sorted(unknown))}")
    return cls.model_validate({**base, **overrides})
