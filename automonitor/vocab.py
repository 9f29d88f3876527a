"""The fixed vocabulary of the CLI contract: string keys used in the DB, CLI, JSON and exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Literal, TypeVar, get_args

#: a gold label (misbehavior is the positive class)
Label = Literal["misbehavior", "benign"]
#: what a monitor's answer on one sample is scored as: a verdict, or one of the unscored kinds
Unscored = Literal["invalid", "refusal", "error"]
Outcome = Literal["misbehavior", "benign", "invalid", "refusal", "error"]
#: how a run's predictions came to be; ``ladder``: one detector of the build's detector ladder
#: (automonitor.data.build.ladder_runs), written by ``automonitor build``, left out of the default lists
RunKind = Literal["measured", "imported", "derived", "generation", "ladder"]
RunStatus = Literal["pending", "running", "finished", "failed", "cancelled", "imported"]
#: the kinds of a transient (retried) backend failure
TransientKind = Literal["rate_limit", "overloaded", "server", "timeout", "connection", "malformed"]
#: why a batch item became an ``error`` outcome (:mod:`automonitor.runs.batch`): the provider failed it
#: (``batch_failed``), it expired or was canceled before it ran, its result line could not be read
#: (``batch_malformed``), or the results left it out (``batch_missing``)
BatchErrorKind = Literal["batch_failed", "batch_expired", "batch_canceled", "batch_malformed", "batch_missing"]
#: why a prediction is an ``error`` outcome (``Prediction.meta["error_kind"]``, kept in ``meta.history`` on a
#: retry): a transient failure still there after the retries (:data:`TransientKind`), a ``permanent`` one
#: (bad key, bad request, unknown model), an ``internal`` one (a bug in the backend), or a batch item's
#: (:data:`BatchErrorKind`)
ErrorKind = Literal[TransientKind, Literal["permanent", "internal"], BatchErrorKind]

CATEGORIES: tuple[str, ...] = ("safety_permission", "sycophancy_bias", "specification_gaming")
TASKS: tuple[str, ...] = ("qa", "code", "reasoning")
LABELS: tuple[str, ...] = get_args(Label)  # gold label; misbehavior is the positive class
POSITIVE = "misbehavior"
NEGATIVE = "benign"
UNSCORED: tuple[str, ...] = get_args(Unscored)
OUTCOMES: tuple[str, ...] = get_args(Outcome)  # a monitor's outcome on one sample
assert OUTCOMES == LABELS + UNSCORED
#: the outcomes the judge cache keeps: a judgement's (an error is never cached: the next run asks again) or
#: ``generated``, a generation call's text (automonitor.runs.generation.caller)
CACHED_OUTCOMES: tuple[str, ...] = (*(o for o in OUTCOMES if o != "error"), "generated")
RUN_KINDS: tuple[RunKind, ...] = get_args(RunKind)
#: A judgement's own fields, in the order every row lists them: the columns a prediction and a judge-cache
#: entry share (automonitor.runs.verdicts writes them; store.queries.runs reads the cache by them)
VERDICT_FIELDS: tuple[str, ...] = (
    "outcome",
    "score",
    "raw",
    "reason",
    "evidence",
    "pred_category",
    "severity",
    "tokens_in",
    "tokens_out",
    "cost_usd",
)
TRANSIENT_KINDS: tuple[str, ...] = get_args(TransientKind)
BATCH_ERROR_KINDS: tuple[str, ...] = get_args(BatchErrorKind)
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)  # the transient kinds, permanent, internal, the batch kinds
assert ERROR_KINDS == (*TRANSIENT_KINDS, "permanent", "internal", *BATCH_ERROR_KINDS)
TEMPLATES: tuple[str, ...] = (
    "direct",
    "evidence",
    "direct-fewshot",
    "evidence-fewshot",
    "paper-direct",
    "paper-evidence",
)
#: The monitor backends (``--monitor BACKEND[:MODEL]``), in menu order: the names the classes of
#: :mod:`automonitor.runs.monitors` register under (``register`` refuses any other name, and a test holds
#: this tuple equal to the registry), kept here so that the CLI's help texts need not import the backends.
MONITOR_BACKENDS: tuple[str, ...] = ("rules", "llamacpp", "openai", "anthropic", "probe", "lora")
#: monitor views (CONTRACT round 4): what of a response the monitor is shown; ``full`` is the default
#: (the whole stored response), see :mod:`automonitor.data.monitor_views`
VIEWS: tuple[str, ...] = ("full", "answer", "reasoning", "actions")
DEFAULT_VIEW = "full"
SPLITS: tuple[str, ...] = ("test", "train")  # the splits a user names (import, export, stats)
#: the split of the benign-only control samples the build adds (pair_id ``controls:...``, one side each)
CONTROLS_SPLIT = "controls"
#: every split a stored sample may be in (candidates have none)
STORE_SPLITS: tuple[str, ...] = (*SPLITS, CONTROLS_SPLIT)
# Label provenance (field ``label_source``): how a pair's label is known
LABEL_SOURCES: tuple[str, ...] = (
    "human_per_response",
    "by_construction",
    "patch_pair",
    "preference_pair",
    "instructed_demo",
    "adjudicated",
    "user",
    "judge_consensus",  # labels agreed by several LLM judges, not by a human
    "constructed_benign",  # the label is by construction, but the benign side did not answer the prompt shown
)
# Editions of the test set (the ONE list: build, stats, export, run, report, audit and the app read it):
# ``paper`` the paper's six cells at its pair counts, ``verified`` every test pair that passed every gate,
# ``paper-r2`` the earlier per-source quota composition of ``paper`` (1,172 / 962 / 876 samples by
# category), ``hard`` the verified pairs that survive adversarial filtering (automonitor.data.build.hard)
EDITIONS: tuple[str, ...] = ("paper", "verified", "paper-r2", "hard")
#: The edition a run that recorded none is scored on: an imported file (``predictions import``: its coverage is
#: counted against it, its verdicts outside it are dropped), a derived run of inputs of different editions, a run
#: made before editions. The ONE rule (:func:`scored_edition`) that the report, ``runs --json`` ``scored_edition``,
#: the pages and the HTML report apply; never inferred from the samples a run judged (a file that holds an
#: adjudicated ``verified``-only sample is still compared with the ``paper`` runs, that sample left out)
UNRECORDED_EDITION = "paper"


def scored_edition(recorded: str | None) -> str:
    """The edition a run is scored on, from the edition it recorded (``None``: none recorded): that edition, else
    :data:`UNRECORDED_EDITION`. ``report --json`` ``runs[].edition``, ``runs --json`` ``scored_edition`` and the
    sample set the Trade-off page and the HTML report name are this value."""
    return recorded or UNRECORDED_EDITION


#: What each edition promises (the docs' vocabulary page is generated from this).
EDITION_PROMISES: dict[str, str] = {
    "paper": "the paper's six category x task cells at its pair counts, drawn from the public sources; "
    "a cell the sources cannot fill is reported as a deficit, never padded",
    "verified": "every test pair that passed every quality gate, plus pairs adjudicated by annotators",
    "paper-r2": "the earlier per-source quota composition of `paper` (kept so old runs stay comparable)",
    "hard": "the verified pairs that trivial baselines (length, TF-IDF, tool calls, answer = suggestion) "
    "cannot separate after adversarial filtering, plus sycophancy controls in proportion",
}
assert tuple(EDITION_PROMISES) == EDITIONS
#: The editions whose members measure difficulty: each run's MR / FAR on ``verified`` and on ``hard`` side by
#: side (automonitor.analysis.difficulty computes them; the report's table and the trade-off page show them)
DIFFICULTY_EDITIONS: tuple[str, ...] = ("verified", "hard")
assert set(DIFFICULTY_EDITIONS) <= set(EDITIONS)
#: The detector ladder's keys of a sample's ``meta`` (``automonitor.data.build.ladder.META_KEYS``, which the store side
#: of a build reads from here: importing the ladder imports pandas; tests/data/test_ladder_runs.py holds them equal)
LADDER_META_KEYS: tuple[str, ...] = ("tier", "caught_by", "false_alarm_by")
#: The edition a build keeps every pair with an erratum out of (``wrong`` or ``doubtful``; ``hard`` is drawn from
#: it): the report names it beside the count of scored samples an erratum marks (automonitor.analysis.from_store.errata_notes)
ERRATA_FREE_EDITION = "verified"
assert ERRATA_FREE_EDITION in EDITIONS
STATUSES: tuple[str, ...] = ("gold", "candidate", "rejected")
ANNOTATION_LABELS: tuple[str, ...] = ("misbehavior", "benign", "unsure")
#: an adjudicator's decision on a candidate pair: its label becomes gold, or the pair is rejected
ADJUDICATION_DECISIONS: tuple[str, ...] = ("accept", "reject")
ROLES: tuple[str, ...] = ("annotator", "admin")
#: Recorded account actions (table ``account_event``).
ACCOUNT_ACTIONS: tuple[str, ...] = (
    "created",
    "password_changed",
    "deactivated",
    "reactivated",
    "sessions_ended",
    "logout",
    "reassigned",
    "login",
)
#: An erratum's verdict on a pair's label.
ERRATUM_VERDICTS: tuple[str, ...] = ("wrong", "doubtful")
#: How an erratum entered the store: the app's "Report this label", ``errata add``, ``errata import``.
ERRATUM_ORIGINS: tuple[str, ...] = ("app", "cli", "import")
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
INVALID_POLICIES: tuple[str, ...] = ("exclude", "as-flag", "as-miss")

CATEGORY_NAMES: dict[str, str] = {
    "safety_permission": "Safety & Permission Violations",
    "sycophancy_bias": "Sycophancy & Bias",
    "specification_gaming": "Specification Gaming",
}
TASK_NAMES: dict[str, str] = {"qa": "QA", "code": "Code", "reasoning": "Reasoning"}

# The paper's test-set composition (samples, i.e. two per pair; Yang et al., arXiv 2601.05752)
PAPER_QUOTAS: dict[str, int] = {
    "safety_permission": 1172,
    "sycophancy_bias": 962,
    "specification_gaming": 876,
}

#: Provenance of a gold span: derived from a patch pair's diff, from the static screen, or
#: from annotators (pair files, adjudication).
SPAN_PROVENANCES: tuple[str, ...] = ("from_patch", "from_screen", "annotated")

# A candidate copy of a paper test pair has its own pair id ``cand:<pair_id of the original>``
# (automonitor.data.build.selection); the copy and its original are the same texts by construction.
CANDIDATE_COPY_PREFIX = "cand:"


def copied_from(pair_id: str) -> str | None:
    """The pair id a candidate copy was made from (``"cand:hh_rlhf:7"`` -> ``"hh_rlhf:7"``), or
    ``None`` for a pair that is not such a copy."""
    if pair_id.startswith(CANDIDATE_COPY_PREFIX):
        return pair_id[len(CANDIDATE_COPY_PREFIX) :]
    return None


# The paper's six cells (pairs, per the labels of Figure 3a of its v2 text)
PAPER_CELLS: dict[str, int] = {
    "safety_permission/code": 488,
    "safety_permission/qa": 98,
    "sycophancy_bias/qa": 204,
    "sycophancy_bias/reasoning": 277,
    "specification_gaming/code": 149,
    "specification_gaming/qa": 289,
}

#: How severe a misbehavior is, as an annotator rates it (labels, adjudications, pair files).
SEVERITIES: tuple[str, ...] = ("low", "medium", "high")
#: How severe a monitor says a sample is: :data:`SEVERITIES` or ``none`` (the judge saw no misbehavior).
MONITOR_SEVERITIES: tuple[str, ...] = ("none", *SEVERITIES)
#: :data:`MONITOR_SEVERITIES` as a type (the judge answers' strict models)
MonitorSeverity = Literal["none", "low", "medium", "high"]
#: The longest free-text note (label notes, flags, adjudication rationales), in characters.
MAX_NOTE = 5000

#: Every ``AUTOMONITOR_*`` environment variable the code reads, with what it sets and its default, from the
#: table ``config_vars.json`` beside this module (the docs' configuration reference is generated from it; a test
#: holds it equal to the variables the code of ``automonitor/``, ``store/``, ``pages/`` and ``app.py`` names).
#: API keys are not here: they are read from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` (environment or
#: Streamlit secrets), never stored.
CONFIG_VARS: dict[str, tuple[str, str]] = {
    name: (var["what"], var["default"])
    for name, var in json.loads(Path(__file__).with_name("config_vars.json").read_text(encoding="utf-8")).items()
}


_V = TypeVar("_V")


def canonical(value: object, accepted: Iterable[_V]) -> _V | None:
    """``value`` as ``accepted`` spells it, for a value a user typed or a link carries (``?task=Code``):
    the accepted value equal to it, else the one accepted text equal to it ignoring case (``"code"``), else
    ``None`` (not accepted, or several accepted texts differ from it only in case)."""
    allowed = list(accepted)
    for a in allowed:
        if a == value:
            return a
    if not isinstance(value, str):
        return None
    hits = [a for a in allowed if isinstance(a, str) and a.casefold() == value.casefold()]
    return hits[0] if len(hits) == 1 else None
