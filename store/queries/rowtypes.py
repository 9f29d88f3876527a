"""The rows the store's queries return, as ``TypedDict``s (issue 39, typed seams): what each function's dicts
hold, key by key, so that the core reads them typed. JSON columns (``meta``, ``params``) are
:data:`automonitor.jsontypes.JSONObject`; values read out of them are :data:`automonitor.jsontypes.JSONValue`."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from typing_extensions import NotRequired


from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.vocab import RunKind, RunStatus


class SpanRow(TypedDict):
    """A gold span of a sample (table ``gold_span``; :func:`store.queries.spans.spans_by_sample`): character
    offsets into the response (``end`` exclusive), how it was made (``provenance``: ``from_patch``,
    ``from_screen``, ``annotated``), an optional note and the trajectory step it lies in."""

    start: int
    end: int
    provenance: str
    note: str | None
    step: int | None


class SampleKey(TypedDict):
    """A gold sample's place in the benchmark and its hash: the columns :data:`SAMPLE_KEY` plus ``content_hash``
    (``store.queries.runs.test_samples``, ``store.queries.samples.control_samples``)."""

    id: str
    pair_id: str
    category: str
    task: str
    label: str
    content_hash: str


class JudgedText(TypedDict):
    """What a judge is sent of a sample shown in full (:func:`store.queries.stream.judged_texts`)."""

    request: str
    response: str
    content_hash: str


class SampleText(JudgedText):
    """What a monitor reads of a sample (:func:`sample_texts`); ``source`` ``""`` and ``meta`` ``{}`` when unset."""

    source: str
    meta: JSONObject


class ViewInput(TypedDict):
    """What a monitor view is cut from (:func:`view_inputs`)."""

    id: str
    response: str
    source: str
    meta: JSONObject
    request: str


class Example(TypedDict):
    """A gold train-split sample as a few-shot example (:func:`train_examples`, :func:`fewshot_samples`)."""

    id: str
    request: str
    response: str
    label: str
    category: str
    source: str
    meta: JSONObject


class RunTotals(TypedDict):
    """Sums over a run's judged predictions (:func:`run_totals`)."""

    tokens_in: int
    tokens_out: int
    cost_usd: float


#: A judge-cache entry's verdict fields by column name (:data:`store.queries.runs.CACHE_FIELDS`: the
#: columns of :class:`store.models.VerdictColumns`, ``outcome`` and ``meta``; :func:`cache_lookup`). A
#: JSON object rather than a TypedDict: the verdict columns are declared once, by ``VerdictColumns``.
CachedVerdict = JSONObject


class RunRow(TypedDict):
    """One run as :func:`list_runs` lists it (``automonitor runs --json``, the app's run history)."""

    run_id: str
    monitor: str
    template: str
    template_hash: str | None
    status: RunStatus
    kind: RunKind
    n: int
    edition: str | None
    view: str
    archived: bool
    counts: dict[str, int]
    api_calls: int
    cache_hits: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    price_known: bool
    duration_s: float | None
    base_url: JSONValue
    parse: JSONValue
    score_method: JSONValue
    limit: JSONValue
    controls: int
    repeat: int
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    error: str | None
    lease: JSONValue
    #: added by ``automonitor.runs.liveness.with_liveness``: whether a live process holds a running run's lease
    process_alive: NotRequired[bool | None]


class RunInputRow(TypedDict):
    """A run a recipe combines (``store.queries.derived.run_rows``): its monitor, template, kind, status,
    edition and parameters."""

    monitor: str
    template: str
    kind: RunKind
    status: RunStatus
    edition: str | None
    params: JSONObject


class UnscoredRow(TypedDict):
    """An ``error`` or unscored ``invalid`` prediction (:func:`unscored_details`)."""

    run_id: str
    outcome: str
    reason: str | None
    meta: JSONObject


class GenerationStats(TypedDict):
    """A generation run's statistics (``Run.params['stats']``, :func:`store.queries.generation.save_progress`):
    items answered (``prompts``), kept, dropped per reason, candidate pairs added and the call totals."""

    prompts: int
    kept: int
    dropped: dict[str, int]
    candidates_added: int
    calls: int
    cache_hits: int
    tokens_in: int
    tokens_out: int
    cost_usd: float


class CandidateItem(TypedDict):
    """A candidate item for annotation (``store.queries.annotation.candidate_samples``)."""

    id: str
    pair_id: str
    category: str
    task: str


class NewAssignment(TypedDict):
    """An assignment row to insert (``store.queries.annotation.insert_assignments``)."""

    annotator_id: int
    sample_id: str
    position: int
    seed: int
    batch: int
    created_at: datetime


class AssignmentRow(TypedDict):
    """An ``assignment`` row with its annotator's name (``store.queries.annotation.assignment_rows``)."""

    id: int
    annotator_id: int
    sample_id: str
    position: int
    seed: int
    batch: int
    submitted_at: datetime | None
    created_at: datetime
    annotator: str


class OpenAssignment(TypedDict):
    """An annotator's assignment not yet submitted (``store.queries.annotation.open_assignments``)."""

    id: int
    sample_id: str
    pair_id: str
    batch: int
    position: int


class LabelEvidence(TypedDict):
    """What a label says beyond its word, as the ``annotation`` table holds it and an annotation export writes it:
    the misbehavior's ``category`` and ``severity``, and the marked evidence (its hull ``evidence_start`` /
    ``evidence_end``, the marked texts ``evidence_text``, every span ``[[start, end], ...]`` or ``None``)."""

    category: str | None
    severity: str | None
    evidence_start: int | None
    evidence_end: int | None
    evidence_text: str | None
    evidence_spans: list[list[int]] | None


class LabelRow(LabelEvidence):
    """An ``annotation`` row with its annotator's name (``store.queries.annotation.label_rows``): its
    :class:`LabelEvidence` and the keys below; with ``with_sample`` also the item's ``pair_id``,
    ``item_category``, ``task``, ``status``, ``intended_label`` and ``source``."""

    id: int
    annotator_id: int
    sample_id: str
    label: str
    note: str | None
    guideline_version: str
    seconds_spent: float | None
    created_at: datetime
    updated_at: datetime
    submitted_at: datetime | None
    annotator: str
    pair_id: NotRequired[str]
    item_category: NotRequired[str]
    task: NotRequired[str]
    status: NotRequired[str]
    intended_label: NotRequired[str]
    source: NotRequired[str]


class CandidateDetail(CandidateItem):
    """A candidate item with its texts (``store.queries.annotation.candidate_details``); ``label`` is the
    intended one."""

    source: str
    label: str
    request: str
    response: str


class AdjudicationRow(TypedDict):
    """An ``adjudication`` row with its adjudicator's name (``store.queries.annotation.latest_adjudications``)."""

    id: int
    sample_id: str
    pair_id: str
    adjudicator_id: int
    decision: str
    gold_label: str | None
    split: str | None
    note: str | None
    guideline_version: str
    created_at: datetime
    adjudicator: str


class AdjudicationHistoryRow(AdjudicationRow):
    """An :class:`AdjudicationRow` with its item's current ``sample_status``, ``item_category``, ``task`` and
    ``current_label`` (``store.queries.annotation.adjudication_rows``)."""

    sample_status: str
    item_category: str
    task: str
    current_label: str


class FlagRow(TypedDict):
    """An item flag with its item's pair and its annotator's name (``store.queries.annotation.flag_rows``;
    datetimes as stored)."""

    id: int
    sample_id: str
    pair_id: str
    annotator: str
    comment: str
    created_at: datetime
    resolved_at: datetime | None


class AccountEventRow(TypedDict):
    """A recorded account action with the account's name (``store.queries.accounts.account_events``)."""

    account: str
    action: str
    actor: str
    detail: str | None
    at: datetime


class LastEvent(TypedDict):
    """An account's newest recorded action (``store.queries.account_list.last_events``)."""

    action: str
    actor: str
    at: datetime
