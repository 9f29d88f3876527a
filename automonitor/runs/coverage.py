"""How much of the test set a run covers, and when that makes it a *partial* run.

A run is compared with the others on its edition's test set. ``automonitor run`` judges that set (less what
``--limit`` or ``--view`` leave out by design), but ``predictions import`` takes whatever file it is given:
``head -100 predictions.jsonl`` imports as a run of 100 samples whose MR/FAR the report and the plane would
otherwise show beside runs over the whole set. :func:`run_coverage` counts a run's test samples and controls
against the edition's (:func:`ids_coverage` from the ids of a file); ``partial`` is set for an **imported** run that covers fewer test samples than its
edition has, and only for one:

- a ``--limit N`` run judges a deliberate stratified subset (category x task x label), its ``n`` says how many;
- a ``--view`` run judges the samples having that view, which is its design (``views`` in the report compares
  views on the samples they share);
- a derived run (ensemble, thresholds, cascade) inherits the samples of the runs it was made from;

so none of those is marked, although their ``coverage`` counts may be below the edition's.
:func:`coverage_mark` is the mark the report and the plane show beside a partial run (``answers.marks``, as
``lenient parse``); :func:`coverage_warning` the line ``predictions import`` prints. Reads the store with Core
only (:mod:`store.queries.composition`), so the report's start-up imports no ORM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, TypedDict

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session


class Coverage(TypedDict):
    """How much of its edition's test set (and of the controls) a run has predictions for.

    ``edition``: the edition it is compared on; ``members``: that edition's test samples (what ``automonitor
    run`` judges without ``--limit``/``--view``); ``covered``: how many of them the run has a prediction for
    (pending included: a run's scope, not its progress); ``share`` = covered / members in [0, 1] (``None``
    with no members); ``controls`` / ``controls_members``: the same for the benign-only controls slice;
    ``partial``: an imported file that covers fewer test samples than the edition has (the report and the
    plane mark it, :func:`coverage_mark`); never set for a run made by ``automonitor run`` or ``derive``."""

    edition: str
    members: int
    covered: int
    share: float | None
    controls: int
    controls_members: int
    partial: bool


def member_ids(conn: Connection | Session, editions: Iterable[str]) -> tuple[dict[str, set[str]], set[str]]:
    """``({edition: its test sample ids}, control sample ids)`` read from the store (Core, one query per
    edition and one for the controls). Raises ``InputError`` for an unknown edition."""
    from store.queries.composition import control_ids, edition_test_ids

    return {e: edition_test_ids(conn, e) for e in dict.fromkeys(editions)}, control_ids(conn)


def run_coverage(
    edition: str, members: int, covered: int, controls_members: int, controls: int, *, imported: bool
) -> Coverage:
    """The :class:`Coverage` of a run judged on ``edition`` from counts: ``members`` test samples in the edition,
    ``covered`` of them with a prediction of the run, ``controls_members`` controls and ``controls`` of them with
    one; ``imported``: the run is an imported file (kind ``imported``), the only kind marked ``partial``.
    Raises ``ValueError`` for a negative count or more covered than there are."""
    if not (0 <= covered <= members and 0 <= controls <= controls_members):
        raise ValueError(
            f"coverage counts out of range: {covered} of {members} test samples, {controls} of {controls_members}"
            " controls"
        )
    return Coverage(
        edition=edition,
        members=members,
        covered=covered,
        share=covered / members if members else None,
        controls=controls,
        controls_members=controls_members,
        partial=imported and covered < members,
    )


def ids_coverage(
    edition: str, members: set[str], sample_ids: Iterable[str], controls: set[str], *, imported: bool
) -> Coverage:
    """:func:`run_coverage` of a run whose predictions are on ``sample_ids`` (test samples, controls and any other
    id, in any order, repeats allowed), against ``members`` (its ``edition``'s test sample ids) and ``controls``
    (the control ids)."""
    ids = set(sample_ids)
    return run_coverage(
        edition, len(members), len(ids & members), len(controls), len(ids & controls), imported=imported
    )


def coverage_mark(cov: Coverage) -> str:
    """The mark shown beside a partial run (``partial: 100 of 2,966 test samples``), ``""`` for another."""
    return f"partial: {cov['covered']:,} of {cov['members']:,} test samples" if cov["partial"] else ""


#: Why a partial run is not eligible on the plane: drawn hollow, off the Pareto front and out of Pearson r (the
#: report's ``pareto`` / ``pearson_r``, the Trade-off page and the HTML plane); its hover and the text report's line
#: say it. Unlike a ``--limit`` run (stratified by category x task, so its overall rates are comparable), an imported
#: part of the test set is whatever the file held (``head -100`` can be one category).
PARTIAL_NOT_ELIGIBLE = (
    "an imported part of the test set is not stratified, so its overall MR/FAR are not comparable: not on the "
    "Pareto front or in Pearson r"
)


def not_eligible_reason(partial: bool | None) -> str | None:
    """The ONE rule that keeps a run's coverage from the comparison across runs: :data:`PARTIAL_NOT_ELIGIBLE` for a
    ``partial`` run (``coverage.partial``: an imported file of part of its edition's test set), ``None`` for any
    other (no coverage known counts as whole). Read where the report's front and Pearson r are computed
    (:func:`automonitor.analysis.from_store.report`) and where the plane decides eligibility
    (:func:`automonitor.views.honest_points`)."""
    return PARTIAL_NOT_ELIGIBLE if partial else None


def coverage_line(cov: Coverage) -> str:
    """What an imported file covers, one plain line: ``the file covers 100 of the 2,966 test samples of the
    paper edition and 0 of the 2,142 controls``."""
    return (
        f"the file covers {cov['covered']:,} of the {cov['members']:,} test samples of the {cov['edition']} "
        f"edition and {cov['controls']:,} of the {cov['controls_members']:,} controls"
    )


def coverage_warning(cov: Coverage, run_id: str) -> str | None:
    """The warning ``predictions import`` prints for a partial file (``None`` when it covers the whole test
    set): what it covers, and that the report and the plane mark the run, whose rates are on that part only."""
    if not cov["partial"]:
        return None
    return (
        f"warning: {coverage_line(cov)}: run {run_id} is marked partial in the report and on the plane, and its "
        f"MR/FAR are on those {cov['covered']:,} test samples only, not the set the other runs are compared on"
    )
