"""A run's status after creation: summary, info, cancel, retry errors, finalize; the answer quality the report
shows (:func:`answer_quality`, read on Core: the report imports this module without the ORM or the models)."""

from __future__ import annotations

import logging
from typing import Mapping, TypedDict

from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.jsontypes import JSONObject
from automonitor.runs.params import stored_batch_settings, stored_runner_settings
from automonitor.vocab import LABELS, OUTCOMES, UNSCORED
from store import session_scope
from store.queries.rowtypes import RunRow, UnscoredRow
from store.queries.run_list import (
    flagged_counts,
    flagged_samples,
    judged_outcome_counts,
    list_runs,
    unscored_details,
)

log = logging.getLogger(__name__)

RETRYABLE = ("error", "invalid", "refusal")


def retry_errors(engine: Engine, run_id: str, outcomes: tuple[str, ...] = ("error",)) -> int:
    """Make the ``error`` predictions of ``run_id`` (and those of the other ``outcomes``: ``invalid``,
    ``refusal``) pending again so that :func:`execute_run` sends exactly them again (``automonitor run
    --retry-errors RUN_ID [--retry invalid]``). A re-asked ``invalid``/``refusal`` answer is dropped
    from the cache first, so it is really asked again. Each earlier attempt is kept in the prediction's
    ``meta["history"]`` (outcome, reason, raw, error kind, attempts, tokens, cost, judged_at; oldest
    first) and stays there after the new verdict. Returns the number of samples reset (0: nothing to
    retry).

    Nothing changes when the run cannot be resumed: what the resume reads is checked first, as the resume
    checks it: the stored runner parameters, a batch run's batch options
    (:func:`automonitor.runs.params.stored_runner_settings`, :func:`~automonitor.runs.params.stored_batch_settings`),
    the template and the few-shot examples (:func:`automonitor.runs.fewshot.run_prompt`).

    Raises:
        NotFound: no such run. InputError: an imported run, a run executing in another live process, an
            outcome that cannot be retried (a verdict), a stored parameter the rule now refuses (``field``
            names it: ``max_attempts: 3.0``, ``fewshot_k: "abc"``), a template changed since the run was created
            or a few-shot sample gone.
    """
    from automonitor.runs.fewshot import run_prompt  # the ORM: not on the report's path through this module
    from automonitor.runs.lease import check_lease, lock_run
    from store.queries import runs as q

    bad = [o for o in outcomes if o not in RETRYABLE]
    if bad:
        raise InputError(
            f"--retry takes {', '.join(RETRYABLE)}; {', '.join(bad)} is a verdict, not a failure", field="retry"
        )
    with session_scope(engine) as s:
        run = lock_run(s, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        if run.kind == "imported":
            raise InputError(
                f"run {run_id} holds imported predictions; there is nothing to retry", field="retry-errors"
            )
        params = dict(run.params or {})
        check_lease(run_id, params, field="retry-errors")
        # what the resume will read, checked first (its options, its template and few-shot examples): a
        # refusal changes nothing
        stored_runner_settings(run_id, dict(params.get("judge") or {}))
        if params.get("batch"):
            stored_batch_settings(run_id, dict(params["batch"]))
        run_prompt(s, run)
        n = q.reset_errors(s, run_id, tuple(dict.fromkeys(("error", *outcomes))))
        if n:
            run.status = "pending"
            run.finished_at = None
            s.add(run)
    return n


def cancel_run(engine: Engine, run_id: str) -> None:
    """Mark the run ``cancelled``. An executing runner stops taking new samples within about a second;
    predictions still pending stay pending (``--resume`` continues). A finished run is left as is.

    Raises:
        NotFound: no such run.
    """
    from store.queries import runs as q

    with session_scope(engine) as s:
        run = q.get_run(s, run_id)
        if run.status not in ("finished", "imported"):
            run.status = "cancelled"
            s.add(run)


def summary(engine: Engine, run_id: str, *, api_calls: int = 0, cache_hits: int = 0) -> JSONObject:
    """The contract's JSON for a run: ``{"run_id", "n", "counts": {outcome: int}, "api_calls",
    "cache_hits", "api_calls_this_process", "cache_hits_this_process"}``. ``counts`` are the run's verdicts
    (repeat 0) and ``api_calls``/``cache_hits`` the run's as well: every invocation's together (the store's
    cumulative counters, to which each request is added when it is sent), so a ``--resume`` reports the
    same scope for both; ``api_calls_this_process``/``cache_hits_this_process`` are those of the current
    invocation (as given: 0 for one that sent nothing). Plus ``"repeat": K`` for a run judged with
    ``--repeat K`` (K > 1)."""
    from store.queries import runs as q

    with session_scope(engine) as s:
        run = q.get_run(s, run_id)
        counts = q.outcome_counts(s, run_id)
        out: JSONObject = {
            "run_id": run_id,
            "n": run.n,
            "counts": {o: counts[o] for o in OUTCOMES},
            "api_calls": int(run.api_calls or 0),
            "cache_hits": int(run.cache_hits or 0),
            "api_calls_this_process": int(api_calls),
            "cache_hits_this_process": int(cache_hits),
        }
        repeat = int(((run.params or {}).get("judge") or {}).get("repeat", 1) or 1)
        if repeat > 1:
            out["repeat"] = repeat
        return out


def finalize(
    engine: Engine,
    run_id: str,
    *,
    cancelled: bool,
    last_execution: JSONObject | None = None,
    failure: str | None = None,
    no_answer: str | None = None,
    sent: JSONObject | None = None,
) -> None:
    """Set totals, drop the lease, and set the final status: ``finished`` when nothing is pending (unless
    ``failure`` or ``no_answer``), else ``failed`` with ``failure`` in ``run.error`` when given (fail-fast: the
    cause and the fix; also with nothing pending: a ``--retry-errors`` whose samples all ended in error again
    did not reach its judge), else ``cancelled`` (cancelled now or before) or ``failed`` (with the pending count in ``run.error``).
    ``no_answer`` (the execution sent calls and none got an answer:
    :func:`~automonitor.runs.runner.workers.no_answer_message`) makes the run ``failed`` with it in
    ``run.error`` even when nothing is pending: a run whose every sample ended in error never reached a verdict.
    ``last_execution`` (calls, cache hits, AIMD limiter stats) and ``sent`` (what the backend actually
    sent, :meth:`~automonitor.runs.monitors.backend.Backend.sent_params`) are kept in ``Run.params``. A missing
    run is ignored."""
    from store.models import Run, utcnow
    from store.queries import runs as q

    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            return
        counts = q.outcome_counts(s, run_id)
        tot = q.run_totals(s, run_id)
        run.tokens_in, run.tokens_out, run.cost_usd = tot["tokens_in"], tot["tokens_out"], tot["cost_usd"]
        p = dict(run.params or {})
        p.pop("lease", None)
        if last_execution is not None:
            p["last_execution"] = last_execution
        if sent:
            p["sent"] = sent
        run.params = p
        failure = failure or no_answer
        if counts["pending"] == 0 and not failure:
            run.status = "finished"
            run.finished_at = run.finished_at or utcnow()
            run.error = None
        elif failure:
            run.status = "failed"
            run.error = failure[:2000]
        elif cancelled or run.status == "cancelled":
            run.status = "cancelled"
        else:
            run.status = "failed"
            run.error = f"{counts['pending']} predictions still pending"
        s.add(run)
        status, error = run.status, run.error
    counted = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
    log.info(  # INFO even when failed: the caller says it once (the CLI's failed line, the app's notice)
        "run %s: %s (%s)%s",
        run_id,
        status,
        counted or "empty",
        f": {error}" if error else "",
    )


def run_info(engine: Engine, run_id: str) -> RunRow:
    """One run as in ``automonitor runs --json`` (status, counts, tokens, cost, duration)."""
    with session_scope(engine) as s:
        for r in list_runs(s):
            if r["run_id"] == run_id:
                return r
    raise NotFound(f"no run {run_id!r}")


#: a finished run whose share of ``error`` outcomes (over its judged samples) is above this is warned about
#: and marked in the report and on the plane
ERROR_SHARE_WARN = 0.10
#: a finished run whose share of ``invalid`` outcomes (answers outside the template's grammar) is above this is
#: warned about on the command line and marked in the report and on the plane (the verdicts it has are few,
#: whatever its MR/FAR say)
INVALID_SHARE_WARN = 0.5
#: the answer-reading stamp of runs whose log-probability score was read at the first answer token
#: (before :data:`automonitor.runs.answers.SCORE_METHOD`): their scores are flagged, never mixed silently
LEGACY_SCORE_METHOD = "first-token (legacy)"


def error_cause(meta: JSONObject) -> str:
    """A short cause of one ``error`` prediction from its ``meta``: the error kind and the HTTP status
    and provider code when there were ones (``server HTTP 500``, ``permanent HTTP 429
    insufficient_quota``, ``connection``)."""
    kind = str(meta.get("error_kind") or "error")
    status = f" HTTP {meta['status']}" if meta.get("status") else ""
    code = f" {meta['code']}" if meta.get("code") else ""
    return f"{kind}{status}{code}"


class AnswerQuality(TypedDict):
    """How one run's answers were read and how many failed (:func:`answer_quality`; the report's ``answers``)."""

    parse: str | None
    grammar: str | None
    score_method: str | None
    contradictory: int
    score_disagrees: int
    errors: int
    judged: int
    error_share: float | None
    error_cause: str | None
    marks: list[str]


def reads_verdict_score(run_params: Mapping[str, object] | None) -> bool:
    """Whether a run (its ``Run.params``) reads a verdict-token score (its config names a ``score_method``): only
    such a run's predictions can carry ``meta.score_disagrees``, so only its rows are counted or listed."""
    config = (run_params or {}).get("config")
    return isinstance(config, Mapping) and bool(config.get("score_method"))


def score_disagreeing(engine: Engine, run_id: str) -> list[str]:
    """The sample ids, sorted, of the run's verdicts (repeat 0) whose log-probability score favours the other
    side (``meta.score_disagrees``, :func:`automonitor.runs.parsing.score_disagrees`): exactly the samples that
    :func:`answer_quality`'s ``score_disagrees`` (the report's ``answers.score_disagrees``) counts, controls
    included. Empty for a run that reads no verdict-token score (:func:`reads_verdict_score`).

    Raises:
        NotFound: no such run.
    """
    from store.queries import rows_by_ids
    from store.tables import run

    with engine.connect() as c:  # Core, as answer_quality
        found = dict(rows_by_ids(c, (run.c.id, run.c.params), run.c.id, [run_id]))
        if run_id not in found:
            raise NotFound(f"run {run_id!r} not found")
        if not reads_verdict_score(found[run_id]):
            return []
        return flagged_samples(c, run_id, "score_disagrees")


def answer_quality(engine: Engine, run_ids: list[str]) -> dict[str, AnswerQuality]:
    """How each run's answers were read and how many failed: ``{run_id: {"parse", "grammar",
    "score_method", "contradictory", "score_disagrees", "errors", "judged", "error_share", "error_cause",
    "marks"}}``.

    ``parse``/``grammar``/``score_method`` come from the run's config (``Run.params["config"]``; a
    log-probability run of the ``openai`` backend without ``score_method`` read its score at the first
    token: :data:`LEGACY_SCORE_METHOD`); ``contradictory`` counts ``invalid`` answers with reason
    ``contradictory``; ``score_disagrees`` counts verdicts (repeat 0) whose log-probability score favours
    the other side (``meta.score_disagrees``, :func:`automonitor.runs.parsing.score_disagrees`);
    ``error_share`` = errors / judged samples (repeat 0; ``None`` with none judged)
    and ``error_cause`` the commonest :func:`error_cause`. ``marks`` lists what the report and the plane
    show beside the run: ``lenient parse``, ``legacy score``, ``score disagrees N`` (any such verdict),
    ``errors N%`` (share above :data:`ERROR_SHARE_WARN`), ``invalid N%`` (answers outside the template's grammar,
    share above :data:`INVALID_SHARE_WARN`: a judge that answered every sample with a cut-off text read MR 1.0, FAR
    0.0 under ``--invalid as-miss`` with nothing beside it)."""
    from collections import Counter

    from automonitor.runs.answers import CONTRADICTORY
    from store.queries import rows_by_ids
    from store.tables import run

    if not run_ids:
        return {}
    out: dict[str, AnswerQuality] = {}
    with engine.connect() as c:  # Core: no run object is needed, only its params
        found = dict(rows_by_ids(c, (run.c.id, run.c.params), run.c.id, run_ids))
        runs = {rid: found[rid] for rid in dict.fromkeys(run_ids) if rid in found}
        details = unscored_details(c, run_ids, (CONTRADICTORY,))
        counts = judged_outcome_counts(c, list(runs))  # grouped counts from the indexes, not one query per run
        # only a run whose config reads a verdict-token score can hold the flag: no other run's rows are scanned
        scoring = [rid for rid, ps in runs.items() if reads_verdict_score(ps)]
        disagree = flagged_counts(c, scoring, "score_disagrees")
    details_of: dict[str, list[UnscoredRow]] = {}  # each run's rows found in one pass, not a scan of all per run
    for d in details:
        details_of.setdefault(d["run_id"], []).append(d)
    for rid, run_params in runs.items():
        params = dict(run_params or {})
        config = dict(params.get("config") or {})
        parse = config.get("parse")
        score_method = config.get("score_method")
        if score_method is None and params.get("backend") == "openai" and config.get("logprobs"):
            score_method = LEGACY_SCORE_METHOD
        mine = details_of.get(rid, [])
        causes = Counter(error_cause(d["meta"]) for d in mine if d["outcome"] == "error")
        judged, errors, invalid = counts[rid]
        share = errors / judged if judged else None
        marks = []
        if parse == "lenient":
            marks.append("lenient parse")
        if score_method == LEGACY_SCORE_METHOD:
            marks.append("legacy score")
        if disagree.get(rid):
            marks.append(f"score disagrees {disagree[rid]}")
        if share is not None and share > ERROR_SHARE_WARN:
            marks.append(f"errors {round(100 * share)}%")
        if judged and invalid / judged > INVALID_SHARE_WARN:  # few verdicts, whatever its MR/FAR say
            marks.append(f"invalid {round(100 * invalid / judged)}%")
        out[rid] = {
            "parse": parse,
            "grammar": config.get("grammar"),
            "score_method": score_method,
            "contradictory": sum(1 for d in mine if d["outcome"] == "invalid"),
            "score_disagrees": disagree.get(rid, 0),
            "errors": errors,
            "judged": judged,
            "error_share": share,
            "error_cause": causes.most_common(1)[0][0] if causes else None,
            "marks": marks,
        }
    return out


def no_verdict_line(run_id: str, counts: Mapping[str, int]) -> str | None:
    """The line that ends ``automonitor run`` with exit 1 when a finished run answered samples but none with a
    verdict: ``counts`` (outcome -> samples, ``pending`` included, as :func:`run_info` gives them) holds no
    ``misbehavior`` or ``benign`` and at least one unscored outcome (``invalid``, ``refusal``, ``error``), so
    its miss and false alarm rates are undefined (fresh-user trial: a judge that answered every sample with
    an empty or cut-off text finished with exit 0 and only a warning). None for a run with a verdict or with
    nothing answered."""
    if any(counts.get(o, 0) for o in LABELS):
        return None
    unscored = {o: counts.get(o, 0) for o in UNSCORED if counts.get(o, 0)}
    if not unscored:
        return None
    said = ", ".join(f"{o} {n}" for o, n in unscored.items())
    again = ",".join(o for o in unscored if o != "error")  # errors are re-sent by --retry-errors itself
    return (
        f"run {run_id}: finished without a verdict: none of its {sum(unscored.values())} answered samples gave "
        f"one ({said}), so it has no miss or false alarm rate; read a few answers on the Drill-down page, fix "
        f"the judge or its template, then re-ask them with: automonitor run --retry-errors {run_id}"
        + (f" --retry {again}" if again else "")
    )


#: error causes (:func:`error_cause`) of a judge that could not be reached or failed, not of the sample
_UNREACHED_CAUSES = ("connection", "timeout", "server HTTP 5")


def error_warning(engine: Engine, run_id: str) -> str | None:
    """The warning line of a finished run, or None: its error share is above :data:`ERROR_SHARE_WARN` (the
    share, the count and the commonest cause), else any error whose commonest cause is a transport failure,
    a timeout or an HTTP 5xx (the count and ``automonitor run --retry-errors RUN_ID``), else its share of ``invalid`` answers (no verdict the
    template's grammar allows: a cut-off answer, another format) is above :data:`INVALID_SHARE_WARN`."""
    qa = answer_quality(engine, [run_id]).get(run_id)
    if not qa or qa["error_share"] is None:
        return None
    if qa["error_share"] > ERROR_SHARE_WARN:
        return (
            f"warning: run {run_id}: {round(100 * qa['error_share'])}% of the judged samples ended in error "
            f"({qa['errors']} of {qa['judged']}; commonest cause: {qa['error_cause']}); the report and the plane "
            f"mark this run; re-send them with: automonitor run --retry-errors {run_id}"
        )
    cause = qa["error_cause"] or ""
    if qa["errors"] and cause.startswith(_UNREACHED_CAUSES):
        return (
            f"warning: run {run_id}: {qa['errors']} of {qa['judged']} judged samples ended in error (commonest "
            f"cause: {cause}: the judge could not be reached or failed); --resume does not re-send them; "
            f"re-send them with: automonitor run --retry-errors {run_id}"
        )
    from store.queries import runs as q

    with session_scope(engine) as s:
        invalid = int(q.outcome_counts(s, run_id).get("invalid", 0))
    if invalid / qa["judged"] <= INVALID_SHARE_WARN:
        return None
    return (
        f"warning: run {run_id}: {round(100 * invalid / qa['judged'])}% of the judged samples gave no verdict "
        f"the template allows (invalid: {invalid} of {qa['judged']}); read a few answers (cut off by a token "
        f"limit? another format?) on the Drill-down page, then re-ask them with: "
        f"automonitor run --retry-errors {run_id} --retry invalid"
    )
