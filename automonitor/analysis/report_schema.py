"""The report of ``automonitor report`` as typed models: the contract between the analysis, the CLI's
``--json``, the report formats and the app.

:func:`automonitor.analysis.report` / :func:`automonitor.analysis.analyze` return a :class:`Report`; :meth:`Report.to_dict` gives the JSON-ready dict that
``report --json`` prints (key order and values as the CLI contract gives them). Optional parts (a run's ``roc``, ``grounding``, ``stability``,
``baselines``; the report's ``edition`` and ``audit``) are present in the dict only when they were set:
the dump uses ``exclude_unset``, so a field explicitly set to ``None`` is printed as ``null`` and a field
never set is left out.

Units: every rate (``mr``, ``far``, ``unscored_rate``, shares, AUROC, p-values) is a float in [0, 1] or
``None`` when undefined (empty denominator, a single class); intervals are ``[lo, hi]`` lists of two
floats in [0, 1] or ``None``; counts are non-negative ints; differences (``mr_diff``) are in [-1, 1].
"""

from __future__ import annotations

import logging
from typing import Mapping, TypeVar, Union, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator, with_config
from typing_extensions import TypedDict

from automonitor.analysis.run_metrics import REGISTRY as METRICS, RunMetric
from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.vocab import RUN_KINDS, RUN_STATUSES, RunKind, RunStatus
from store.queries.composition import StatsDoc

log = logging.getLogger(__name__)
T = TypeVar("T")

Rate = float | None
"""A rate or probability in [0, 1]; ``None`` when undefined."""
Interval = list[float] | None
"""A 95% interval ``[lo, hi]`` (floats in the unit of the estimate) or ``None``."""
Number = int | float
"""A number kept as given (an int stays an int in the JSON, a float a float)."""


class _Model(BaseModel):
    """Base of the report models: unknown keys are an error (the schema is the contract)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    def to_dict(self) -> JSONObject:
        """The JSON-ready dict (fields in contract order; parts never set are left out)."""
        return self.model_dump(mode="python", exclude_unset=True)


class UnscoredByKind(_Model):
    """Unscored outcomes of a slice by kind (counts of samples)."""

    invalid: int
    refusal: int
    error: int


class SliceStats(_Model):
    """The contract's SLICE: confusion counts and rates of one run on one slice of samples.

    ``n`` judged samples (all but pending; includes unscored); ``tp``/``fn``/``fp``/``tn`` after the
    unscored policy; ``mr`` = fn / (tp + fn) and ``far`` = fp / (fp + tn) in [0, 1] (``None`` with an
    empty denominator); ``mr_ci``/``far_ci`` 95% Wilson score intervals (``None`` when the rate is);
    ``unscored_rate`` = unscored / n; ``pending`` samples without an outcome yet.
    """

    n: int
    tp: int
    fn: int
    fp: int
    tn: int
    unscored: int
    mr: Rate
    far: Rate
    mr_ci: Interval
    far_ci: Interval
    unscored_rate: Rate
    unscored_by_kind: UnscoredByKind
    pending: int


@with_config(ConfigDict(extra="forbid"))
class RunBootstrap(TypedDict):
    """Pair-clustered percentile 95% intervals of a run's overall MR and FAR over ``pairs`` clusters."""

    mr_ci: Interval
    far_ci: Interval
    pairs: int


class PairCounts(_Model):
    """Per-pair outcomes of a run (counts of benchmark pairs, see ``metrics.pair_class_counts``)."""

    pairs: int
    both_right: int
    flagged_both: int
    missed_both: int
    inverted: int
    unscored: int
    incomplete: int


class OperatingPoint(_Model):
    """The cost-minimising threshold of a score run: flag when score >= ``threshold`` (``None`` = the
    infinite threshold, flag nothing); ``expected_cost`` = cost_ratio * prevalence * mr +
    (1 - prevalence) * far."""

    threshold: float | None
    mr: float
    far: float
    expected_cost: float
    cost_ratio: float
    prevalence: float
    prevalence_source: str


class RocCurve(_Model):
    """ROC curve points (collinear points dropped): FAR, MR in [0, 1] and the score threshold
    (``None`` for the infinite first threshold), aligned lists."""

    far: list[float | None]
    mr: list[float | None]
    threshold: list[float | None]


class MrAtFar(_Model):
    """The lowest miss rate reachable with a false alarm rate of at most ``far_max`` (both in [0, 1]),
    at score ``threshold`` (``None`` = the infinite threshold, flag nothing)."""

    far_max: float
    mr: float
    far: float
    threshold: float | None


class RocSummary(_Model):
    """ROC summary of a score run; every value ``None`` when only one class has scores."""

    n_scored: int
    auroc: Rate
    mr_at_far_1pct: MrAtFar | None
    mr_at_far_5pct: MrAtFar | None
    operating_point: OperatingPoint | None
    curve: RocCurve | None


class GroundingSummary(_Model):
    """Evidence grounding of an evidence run: counts of spans by status (exact | normalized |
    not_found), their shares in [0, 1] (``None`` without spans), spans found in the request,
    predictions with evidence, and all predictions of the run."""

    spans: int
    exact: int
    normalized: int
    not_found: int
    exact_share: Rate
    normalized_share: Rate
    not_found_share: Rate
    in_request: int
    predictions_with_evidence: int
    predictions: int


@with_config(ConfigDict(extra="forbid"))
class LocalisationSlice(TypedDict):
    """Localisation of one slice (:mod:`automonitor.analysis.localisation`): over the judged
    misbehavior samples with gold spans (``gold_samples``), the true positives (``tp``) whose grounded
    evidence overlaps a gold span (``localised``), lies wholly outside every one (``wrong_reason``) or
    is absent (``no_evidence``); shares of ``tp`` and ``localised_miss_rate`` = 1 - localised /
    gold_samples with 95% Wilson intervals; character-level micro ``span_precision`` / ``span_recall``
    / ``span_f1`` / ``span_iou`` over the TPs with 95% bootstrap percentile intervals. Rates in [0, 1],
    ``None`` with an empty denominator."""

    gold_samples: int
    tp: int
    localised: int
    wrong_reason: int
    no_evidence: int
    localised_share: Rate
    localised_share_ci: Interval
    wrong_reason_share: Rate
    wrong_reason_share_ci: Interval
    localised_miss_rate: Rate
    localised_miss_rate_ci: Interval
    span_precision: Rate
    span_precision_ci: Interval
    span_recall: Rate
    span_recall_ci: Interval
    span_f1: Rate
    span_f1_ci: Interval
    span_iou: Rate
    span_iou_ci: Interval


class SpanVisibility(_Model):
    """For a run judged under a monitor view other than ``full``: of the gold ``spans`` of its judged
    misbehavior samples, how many the view shows (``visible``, at least one character of the span) and
    how many it does not (``not_visible``); a span the monitor never saw cannot be quoted, so localisation
    counts it as not localised."""

    view: str
    spans: int
    visible: int
    not_visible: int


class Localisation(_Model):
    """A run's localisation per slice: ``overall``, ``by_category``, ``by_task`` and
    ``by_category_task`` (``{category: {task: slice}}``, as the run's ``by_category_task``; absent from
    reports written before it was added) (only slices with gold spans); ``visibility`` for a run judged
    under a monitor view (:class:`SpanVisibility`)."""

    overall: LocalisationSlice
    by_category: dict[str, LocalisationSlice]
    by_task: dict[str, LocalisationSlice]
    by_category_task: dict[str, dict[str, LocalisationSlice]] = Field(default_factory=dict)
    visibility: SpanVisibility | None = None


class ControlsFar(_Model):
    """FAR on the benign-only controls slice: judged samples, false alarms, true negatives, unscored,
    ``far`` = fp / (fp + tn) in [0, 1] or ``None``."""

    n: int
    fp: int
    tn: int
    unscored: int
    far: Rate


class EditionDifficulty(_Model):
    """A run's rates on one edition's members (:mod:`automonitor.analysis.difficulty`): ``members``
    samples in the edition, ``judged`` of them with a prediction of the run, ``coverage`` = judged /
    members in [0, 1], ``slice`` the SLICE (MR, FAR, confusion counts) on those predictions."""

    members: int
    judged: int
    coverage: Rate
    slice: SliceStats  # noqa: A003


class Stability(_Model):
    """Stability of a run judged with ``--repeat K``: ``repeats`` = K, ``samples`` with all K verdicts,
    ``flip_rate`` / ``mean_disagreement`` / ``majority_differs`` in [0, 1], Fleiss' kappa in [-1, 1]
    (``None`` when undefined)."""

    repeats: int
    samples: int
    flip_rate: Rate
    mean_disagreement: Rate
    majority_differs: Rate
    fleiss_kappa: float | None


CellBaselines = dict[str, bool | float | None]
"""One slice's trivial baselines: ``{baseline name: AUROC in [0, 1] or None, ..., "flagged": bool}``."""


class RunAnswers(_Model):
    """How a run's answers were read and how many failed (:func:`automonitor.runs.status.answer_quality`):
    ``parse`` (``strict`` | ``lenient``; ``None`` for a backend that reads no answer text or a run made
    before the grammar), ``grammar`` (its version), ``score_method`` (``verdict-token``, or ``first-token
    (legacy)`` for a stored log-probability run scored before the verdict-token rule), ``contradictory``
    (invalid answers whose fields contradicted their verdict), ``score_disagrees`` (verdicts whose
    log-probability score favours the other side, ``meta.score_disagrees``), ``errors`` / ``judged`` (counts) and
    ``error_share`` in [0, 1] with the commonest ``error_cause``; ``marks``: what the report and the
    plane show beside the run (``lenient parse``, ``legacy score``, ``score disagrees N``, ``errors N%``; the report
    puts ``partial: N of M test samples`` first for an imported file of part of the test set, :class:`RunCoverage`)."""

    parse: str | None = None
    grammar: str | None = None
    score_method: str | None = None
    contradictory: int = 0
    score_disagrees: int = 0
    errors: int = 0
    judged: int = 0
    error_share: Rate = None
    error_cause: str | None = None
    marks: list[str] = Field(default_factory=list)


class RunCoverage(_Model):
    """How much of its edition's test set a run covers (:class:`automonitor.runs.coverage.Coverage`): ``edition``,
    ``members`` (the edition's test samples), ``covered`` (how many of them the run has a prediction for,
    pending included), ``share`` = covered / members (``None`` with no members), ``controls`` /
    ``controls_members`` (the same on the controls slice) and ``partial``: an imported file covering fewer test
    samples than the edition has, which the report and the plane mark beside the run (``answers.marks``:
    ``partial: N of M test samples``). A ``--limit`` run (a stratified subset), a ``--view`` run (the samples
    having the view) and a derived run may cover fewer by design and are never ``partial``."""

    edition: str
    members: int
    covered: int
    share: Rate = None
    controls: int = 0
    controls_members: int = 0
    partial: bool = False


class RunReport(_Model):
    """One run of the report (the contract's RUN plus extras).

    Contract keys: run_id, monitor, template, overall, by_category, by_task. Extras: kind, status,
    ``by_category_task`` ({category: {task: SLICE}}), ``bootstrap``, ``pairs``, ``on_front`` (on the
    overall Pareto front); for score runs ``roc`` and ``auroc``; for evidence runs ``grounding`` and, when
    judged samples have gold spans, ``localisation`` (:class:`Localisation`); from
    :func:`automonitor.analysis.report` ``edition`` (one of :data:`automonitor.vocab.EDITIONS`), ``controls``, ``difficulty``
    (MR/FAR on the ``verified`` and ``hard`` members, :mod:`automonitor.analysis.difficulty`), ``by_tier`` (MR/FAR
    on the ``surface`` and ``implicit`` tiers of the detector ladder) and, for repeated
    runs, ``stability``; from ``audit_section.attach_to_report`` ``baselines`` ({category: {task: CellBaselines}})
    and ``baselines_edition``; ``view``: the monitor view it was judged under (``full`` by default); from
    :func:`automonitor.analysis.report` ``answers`` (:class:`RunAnswers`: parse mode, score method,
    contradictory answers, error share and the marks shown beside the run) and ``coverage``
    (:class:`RunCoverage`: how much of its edition's test set it covers; a partial imported file is marked).

    ``kind`` and ``status`` are the vocabulary's (:data:`~automonitor.vocab.RunKind`,
    :data:`~automonitor.vocab.RunStatus`); a value this version does not know (a store or a report JSON
    written by another version) becomes ``None`` with a logged warning naming the run, so such a report
    still loads and prints.
    """

    run_id: str
    monitor: str
    template: str
    kind: RunKind | None = None
    status: RunStatus | None = None
    overall: SliceStats
    by_category: dict[str, SliceStats]
    by_task: dict[str, SliceStats]
    by_category_task: dict[str, dict[str, SliceStats]]
    bootstrap: RunBootstrap
    pairs: PairCounts
    roc: RocSummary | None = None
    auroc: Rate = None
    grounding: GroundingSummary | None = None
    localisation: Localisation | None = None
    on_front: bool = False
    edition: str | None = None
    controls: ControlsFar | None = None
    stability: Stability | None = None
    difficulty: dict[str, EditionDifficulty] | None = None  # {"verified"|"hard": rates}
    by_tier: dict[str, SliceStats] | None = None  # {"surface"|"implicit": SLICE} (analysis.difficulty.add_tiers)
    baselines: dict[str, dict[str, CellBaselines]] | None = None
    baselines_edition: str | None = None
    view: str = "full"  # the monitor view the run was judged under (``run --view``)
    answers: RunAnswers | None = None
    coverage: RunCoverage | None = None  # how much of its edition's test set the run covers; partial imports
    # the registered run metrics (:mod:`automonitor.analysis.run_metrics`), {name: value in its JSON form};
    # absent when no metric is registered
    metrics: dict[str, JSONValue] | None = None

    @field_validator("metrics")
    @classmethod
    def _registered_types(cls, value: dict[str, JSONValue] | None) -> dict[str, JSONValue] | None:
        """Each value of a registered metric is checked against its declared type (a metric this process
        has not registered, from a report written elsewhere, is kept as it is)."""
        if value is None:
            return None
        return {k: METRICS[k].validate_json(v) if k in METRICS else v for k, v in value.items()}

    def metric(self, metric: RunMetric[T]) -> T | None:
        """The value of a registered run metric as its declared type (``None`` when the run has none)."""
        return metric.read((self.metrics or {}).get(metric.name))

    @field_validator("kind", "status", mode="before")
    @classmethod
    def _unknown_is_none(cls, value: object, info: ValidationInfo[None]) -> object:
        known = RUN_KINDS if info.field_name == "kind" else RUN_STATUSES
        if value is None or value in known:
            return value
        log.warning(
            "run %s: %s %r is not one of %s; reported as null",
            (info.data or {}).get("run_id", "?"),
            info.field_name,
            value,
            ", ".join(known),
        )
        return None

    def slice(self, category: str | None = None, task: str | None = None) -> SliceStats | None:  # noqa: A003
        """The SLICE for an optional category and task (``None`` when the run has no such slice)."""
        if category and task:
            return self.by_category_task.get(category, {}).get(task)
        if category:
            return self.by_category.get(category)
        if task:
            return self.by_task.get(task)
        return self.overall


class McNemar(_Model):
    """McNemar's test of two paired binary outcomes: ``table`` [[both, A only], [B only, neither]],
    discordant pairs, samples ``n``, statistic and two-sided ``p_value`` in [0, 1] (``None`` without
    samples), ``method`` exact | chi2, and ``about`` (what was compared)."""

    table: list[list[int]]
    discordant: int
    n: int
    statistic: float | None
    p_value: Rate
    method: str | None
    about: str


class PairedComparison(_Model):
    """Paired statistics of run A vs run B on the ``samples`` both scored: rates of each run, the
    differences A - B with a pair-clustered bootstrap 95% interval and two-sided bootstrap p-value
    (over ``pairs`` clusters, ``n_boot`` resamples, ``seed``), and three McNemar tests."""

    run_a: str
    run_b: str
    samples: int
    n_boot: int
    seed: int
    pairs: int
    mr_a: Rate
    mr_b: Rate
    mr_diff: float | None
    mr_diff_ci: Interval
    mr_diff_p: Rate
    far_a: Rate
    far_b: Rate
    far_diff: float | None
    far_diff_ci: Interval
    far_diff_p: Rate
    mcnemar_mr: McNemar
    mcnemar_far: McNemar
    mcnemar_correct: McNemar


class BootstrapInfo(_Model):
    """How the bootstrap intervals were computed (resamples, seed, cluster column, interval kind)."""

    n_boot: int
    seed: int
    cluster: str
    interval: str


class AuditSlice(_Model):
    """One audit slice in compact form: trivial baselines' AUROC ({name: AUROC or None}), whether any
    reaches the flag AUROC, over ``pairs`` test pairs of a cell (``source`` None) or of one source."""

    source: str | None
    category: str
    task: str
    kind: str
    pairs: int
    baselines: dict[str, Rate]
    flagged: bool


class AuditLeakage(_Model):
    """Leakage counts of an audit: test pairs near-duplicating train, and sharing a conversation."""

    near_duplicate_pairs: int
    shared_conversations: int


class AuditControls(_Model):
    """Controls of an audit: benign-only samples and each baseline's FAR on them ({name: rate})."""

    samples: int
    far: dict[str, float]


class AuditBaselines(_Model):
    """The audit of one edition as attached to a report (``audit_section.attach_to_report``)."""

    slices: list[AuditSlice]
    leakage: AuditLeakage
    controls: AuditControls


class ErrataNote(_Model):
    """What errata say about the samples a report scored on one edition: of the ``samples`` test samples of
    that edition judged by at least one of the report's runs of it (a verdict, unscored included; controls
    are no test samples), how many carry an erratum (``meta.erratum``, :mod:`automonitor.data.errata`) read
    ``wrong`` and ``doubtful`` (counts of samples: a pair's two sides are both marked), and ``left_out_by``:
    the edition that leaves every such sample out (:data:`automonitor.vocab.ERRATA_FREE_EDITION`)."""

    samples: int
    wrong: int
    doubtful: int
    left_out_by: str


class Report(_Model):
    """The report of ``automonitor report`` (contract JSON plus extras).

    ``runs`` in report order; ``pareto`` run ids on the overall MR-FAR Pareto front; Pearson r of the
    runs' overall (MR, FAR) with its two-sided p-value over ``pearson_n`` runs (``None`` with fewer than
    3); ``invalid_policy`` exclude | as-flag | as-miss; ``paired`` comparisons; ``cost_ratio`` (> 0)
    and ``prevalence`` (in (0, 1) or ``None`` = sample share) of the score runs' operating points;
    ``edition`` when the report was limited to one; ``audit`` ({edition: AuditBaselines}) when the audit
    baselines were attached; ``views``: the comparisons across monitor views
    (:func:`automonitor.analysis.view_comparison.compare_views`) when runs of one monitor and template were
    judged under several views; ``errata`` ({edition: :class:`ErrataNote`}, from :func:`automonitor.analysis.report`):
    per edition of the reported runs, the scored samples that the project's errata mark wrong or doubtful.
    """

    runs: list[RunReport]
    pareto: list[str]
    pearson_r: float | None
    pearson_p: Rate
    pearson_n: int
    invalid_policy: str
    bootstrap: BootstrapInfo
    paired: list[PairedComparison]
    cost_ratio: Number
    prevalence: Number | None
    intervals: str
    edition: str | None = None
    audit: dict[str, AuditBaselines] | None = None
    views: list[JSONObject] | None = None
    errata: dict[str, ErrataNote] | None = None

    def run(self, run_id: str) -> RunReport | None:
        """The run entry with this id, or ``None``."""
        return next((r for r in self.runs if r.run_id == run_id), None)


ReportLike = Union[Report, Mapping[str, JSONValue]]
"""A :class:`Report`, or its JSON document (``Report.to_dict()``, ``report --json``), validated where used."""


def as_report(rep: ReportLike) -> Report:
    """``rep`` as a :class:`Report` (a report dict, e.g. ``analysis.report(...).to_dict()``, is validated).

    Raises ``pydantic.ValidationError`` (naming the field) when the dict does not follow the schema."""
    return rep if isinstance(rep, Report) else Report.model_validate(rep)


class ErrataCounts(_Model):
    """Errata in force (``seeds/errata.jsonl``): counts per verdict and per source, the pair ids
    the store does not hold (reported, not an error) and why, per pair id
    (:func:`automonitor.data.errata.why_not_in_store`: e.g. the build dropped the pair because another pair
    holds one of its samples)."""

    wrong: int
    doubtful: int
    by_source: dict[str, dict[str, int]]
    not_in_store: list[str] = []
    not_in_store_why: dict[str, str] = {}


#: the keys of ``stats`` that the store reads out of the newest build log as JSON (``JSONValue`` in
#: :class:`~store.queries.composition.StatsDoc`), as the contract has them
_STATS_FROM_THE_BUILD_LOG: dict[str, object] = {
    "shortfalls": list[JSONObject],
    "build_seed": int | None,
    "paper_cell_deficit": dict[str, int],
    "paper_cells": list[JSONObject],
}


def _stats_fields() -> dict[str, tuple[object, object]]:
    """The fields of :data:`Stats`: each key of the store's :class:`~store.queries.composition.StatsDoc`, in
    its (the contract's) order, required, and the core's ``errata`` (optional) after ``gold_spans``."""
    fields: dict[str, tuple[object, object]] = {}
    for key, kind in get_type_hints(StatsDoc).items():
        fields[key] = (_STATS_FROM_THE_BUILD_LOG.get(key, kind), ...)
        if key == "gold_spans":
            fields["errata"] = (ErrataCounts | None, None)
    return fields


Stats = create_model(
    "Stats",
    __base__=_Model,
    __module__=__name__,
    __doc__="""The document of ``automonitor stats --json`` (the CLI contract's document): the store's
    :class:`store.queries.composition.StatsDoc` (built by :func:`store.queries.composition.stats`, whose keys it
    declares once), validated (an unknown or missing key, a count that is not an int, is refused), plus
    ``errata`` (:class:`ErrataCounts`, counted by the core from the errata file) after ``gold_spans``.""",
    **_stats_fields(),  # type: ignore[call-overload]
)
