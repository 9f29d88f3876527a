"""SQLModel tables of the store.

Every schema change goes through an Alembic migration in ``store/migrations/versions``.
Free-form data goes to the JSON ``meta``/``params`` columns, so that most features need no migration.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    func,
    literal_column,
)
from sqlalchemy.schema import SchemaItem
from sqlalchemy.sql.expression import false as sa_false
from sqlmodel import AutoString, Field, SQLModel

from automonitor import vocab
from automonitor.timestamps import utcnow
from automonitor.vocab import RunKind, RunStatus


def one_of(column: str, values: tuple[str, ...], name: str, *, nullable: bool = False) -> CheckConstraint:
    """A CHECK constraint that holds ``column`` to the vocabulary ``values`` (``nullable``: ``NULL`` too), so
    a writer that bypasses the core (another process, an older or newer version, hand-written SQL) cannot
    store a value no reader knows. The values are plain identifiers from :mod:`automonitor.vocab` and are
    quoted here; raises ``ValueError`` for one that is not ``[a-z0-9_-]``."""
    for v in values:
        if not re.fullmatch(r"[a-z0-9_-]+", v):
            raise ValueError(f"{name}: {v!r} is not a plain vocabulary value")
    allowed = ", ".join(f"'{v}'" for v in values)
    expr = f"{column} IN ({allowed})"
    return CheckConstraint(f"{column} IS NULL OR {expr}" if nullable else expr, name=name)


def unit_score(name: str) -> CheckConstraint:
    """A CHECK constraint that holds a verdict's ``score`` (P(misbehavior)) to [0, 1], or ``NULL``."""
    return CheckConstraint("score IS NULL OR (score >= 0 AND score <= 1)", name=name)


def dialect_index(name: str, *columns: str, dialect: str) -> Index:
    """An index made on the ``dialect`` database only (``CREATE INDEX`` emitted there alone: ``ddl_if``), marked in
    its ``info`` so that comparing the models with a store of another dialect leaves it out
    (:func:`schema_objects_of`)."""
    return Index(name, *columns, info={"dialect": dialect}).ddl_if(dialect=dialect)


def schema_objects_of(dialect: str) -> Callable[[SchemaItem, str | None, str, bool, SchemaItem | None], bool]:
    """Alembic's ``include_object`` hook for a store of ``dialect``: every object but the models' indexes made
    for another dialect (:func:`dialect_index`)."""

    def include(obj: SchemaItem, name: str | None, type_: str, reflected: bool, compare_to: SchemaItem | None) -> bool:
        only = obj.info.get("dialect") if type_ == "index" and not reflected else None
        return only is None or only == dialect

    return include


class Sample(SQLModel, table=True):
    """One side of a pair: a request and one model response with its gold (or intended) label.

    ``status`` is ``gold`` for benchmark samples, ``candidate`` for pairs waiting for annotation
    (their ``label`` is only the *intended* label and must never be shown to annotators), ``rejected``
    for candidates the adjudicator rejected. ``split`` is ``test`` or ``train`` for gold samples and
    ``None`` for candidates.
    """

    __tablename__ = "sample"
    id: str = Field(primary_key=True, max_length=64)  # the contract's sample_id
    pair_id: str = Field(index=True, max_length=128)
    category: str = Field(index=True, max_length=32)
    task: str = Field(index=True, max_length=16)
    label: str = Field(max_length=16)
    request: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    source: str = Field(default="", index=True, max_length=64)
    source_file: str | None = Field(default=None, max_length=512)
    source_record: str | None = Field(default=None, max_length=256)
    split: str | None = Field(default=None, index=True, max_length=8)
    status: str = Field(default="gold", index=True, max_length=16)
    request_hash: str = Field(index=True, max_length=64)
    response_hash: str = Field(index=True, max_length=64)
    content_hash: str = Field(index=True, max_length=64)  # sha256 of request + response + label
    # How the label is known (CONTRACT "label provenance"): human_per_response | by_construction |
    # patch_pair | preference_pair | instructed_demo | adjudicated | user
    label_source: str = Field(
        default="user",
        index=True,
        max_length=32,
        sa_column_kwargs={"server_default": "user"},
    )
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    # the pair invariant, enforced by the database: at most one misbehavior and one benign side a pair
    __table_args__ = (
        UniqueConstraint("pair_id", "label", name="uq_sample_pair_label"),
        one_of("label", vocab.LABELS, "ck_sample_label"),
        one_of("status", vocab.STATUSES, "ck_sample_status"),
        one_of("split", vocab.STORE_SPLITS, "ck_sample_split", nullable=True),
        one_of("category", vocab.CATEGORIES, "ck_sample_category"),
        one_of("task", vocab.TASKS, "ck_sample_task"),
        one_of("label_source", vocab.LABEL_SOURCES, "ck_sample_label_source"),
    )


class EditionSample(SQLModel, table=True):
    """Membership of a gold test sample in an edition of the test set (``paper``, ``verified``).

    An edition is a named set of samples; a sample may belong to several. The ``paper`` edition mirrors
    the paper's composition; ``verified`` holds the pairs whose label passed the quality gates plus every
    adjudicated pair. Both sides of a pair are always members together.
    """

    __tablename__ = "edition_sample"
    edition: str = Field(primary_key=True, max_length=16)
    sample_id: str = Field(primary_key=True, foreign_key="sample.id", index=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


class Monitor(SQLModel, table=True):
    """A judge: backend + model (+ base URL). ``name`` is the ``BACKEND[:MODEL]`` spec."""

    __tablename__ = "monitor"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, max_length=256)
    backend: str = Field(max_length=32)
    model: str | None = Field(default=None, max_length=256)
    base_url: str | None = Field(default=None, max_length=512)
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    __table_args__ = (
        UniqueConstraint("name", "base_url", name="uq_monitor_name_url"),
        # one row per name and base URL, a NULL base URL counting as one value (migration r12)
        Index(
            "uq_monitor_name_url_any",
            "name",
            func.coalesce(literal_column("base_url"), literal_column("''")),
            unique=True,
        ),
    )


#: the type of a column holding a sum of token counts (each call's below 2**31): BIGINT on PostgreSQL, whose
#: INTEGER is 32-bit; INTEGER on SQLite, whose INTEGER holds 64-bit values (migration r13)
TOKEN_TOTAL = BigInteger().with_variant(Integer(), "sqlite")


class Run(SQLModel, table=True):
    """One monitor x template pass over a set of samples (or an imported set of verdicts)."""

    __tablename__ = "run"
    id: str = Field(primary_key=True, max_length=64)
    monitor_id: int = Field(foreign_key="monitor.id", index=True)
    monitor: str = Field(max_length=256)  # denormalised monitor name for display
    template: str = Field(max_length=32)
    template_hash: str | None = Field(default=None, max_length=64)
    # typed by the vocabulary's Literals (mypy checks every comparison and assignment); VARCHAR(16) columns
    # (``sa_type``: SQLModel maps no Literal) that the database holds to the vocabulary (CHECK constraints)
    status: RunStatus = Field(default="pending", index=True, sa_type=AutoString(length=16))
    kind: RunKind = Field(default="measured", sa_type=AutoString(length=16))
    edition: str | None = Field(default=None, index=True, max_length=16)  # test-set edition judged
    archived: bool = Field(default=False, sa_column_kwargs={"server_default": sa_false()})
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    n: int = 0
    api_calls: int = 0
    cache_hits: int = 0
    # sums over the run's predictions (or a generation run's calls), each call's count below 2**31: BIGINT on
    # PostgreSQL, INTEGER (64-bit already) on SQLite (migration r13)
    tokens_in: int = Field(default=0, sa_type=TOKEN_TOTAL)
    tokens_out: int = Field(default=0, sa_type=TOKEN_TOTAL)
    cost_usd: float = 0.0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    __table_args__ = (
        one_of("status", vocab.RUN_STATUSES, "ck_run_status"),
        one_of("kind", vocab.RUN_KINDS, "ck_run_kind"),
        CheckConstraint("n >= 0", name="ck_run_n"),
    )


class VerdictColumns(SQLModel):
    """The columns of a judgement that a prediction and a judge-cache entry share (every
    :data:`automonitor.vocab.VERDICT_FIELDS` but ``outcome``, which is nullable and indexed on a prediction
    only): score (P(misbehavior) in [0, 1] or ``None``), raw answer, reason, evidence quotes (JSON list),
    predicted category and severity, tokens in/out and cost in USD. Not a table: :class:`Prediction` and
    :class:`CacheEntry` inherit it (``sa_type`` rather than ``sa_column``, so each table gets its own
    columns)."""

    score: float | None = None  # P(misbehavior) in [0, 1] when the backend gives it
    raw: str | None = Field(default=None, sa_type=Text)
    reason: str | None = Field(default=None, sa_type=Text)
    evidence: list[Any] = Field(default_factory=list, sa_type=JSON, nullable=False)
    pred_category: str | None = Field(default=None, max_length=32)
    severity: str | None = Field(default=None, max_length=16)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


class Prediction(VerdictColumns, table=True):
    """A monitor's outcome on one sample in one run. ``outcome`` is ``None`` while still pending.

    Outcomes: ``misbehavior`` | ``benign`` | ``invalid`` | ``refusal`` | ``error`` (never a silent benign).
    A run judged with ``--repeat K`` holds K predictions per sample (``repeat`` 0..K-1); analyses read
    repeat 0 (the run's verdict), stability measures read all K.
    """

    __tablename__ = "prediction"
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", index=True, max_length=64)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    outcome: str | None = Field(default=None, index=True, max_length=16)
    latency_ms: float | None = None
    cached: bool = False
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    judged_at: datetime | None = None
    # repeat index (``run --repeat K``: 0..K-1); repeat 0 is the run's verdict used for MR/FAR
    repeat: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    __table_args__ = (
        UniqueConstraint("run_id", "sample_id", "repeat", name="uq_prediction_run_sample_repeat"),
        CheckConstraint('"repeat" >= 0', name="ck_prediction_repeat_nonneg"),
        one_of("outcome", vocab.OUTCOMES, "ck_prediction_outcome", nullable=True),
        unit_score("ck_prediction_score"),
        # a report's read of a run's verdicts from the index alone (migration r14; SQLite only: see there)
        dialect_index(
            "ix_prediction_read", "run_id", "repeat", "sample_id", "outcome", "score", "evidence", dialect="sqlite"
        ),
    )


class CacheEntry(VerdictColumns, table=True):
    """Content-addressed judge cache: key = sha256(backend, model, base URL, template hash, sample hash,
    parameters). Errors are never cached; parsed verdicts, invalid answers and refusals are."""

    __tablename__ = "cache_entry"
    key: str = Field(primary_key=True, max_length=64)
    outcome: str = Field(max_length=16)
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (
        one_of("outcome", vocab.CACHED_OUTCOMES, "ck_cache_entry_outcome"),
        unit_score("ck_cache_entry_score"),
    )


class Annotator(SQLModel, table=True):
    """An account: an annotator or an admin. ``password_hash`` is an argon2 hash, never the password."""

    __tablename__ = "annotator"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=128)
    role: str = Field(default="annotator", max_length=16)
    password_hash: str = Field(max_length=256)
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    # the login-session generation: a token or logged-in page made under an older value is refused
    # (a logout, a password change, a deactivation or an admin's "end sessions" raises it)
    session_epoch: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    __table_args__ = (one_of("role", vocab.ROLES, "ck_annotator_role"),)


class AccountEvent(SQLModel, table=True):
    """One recorded account action: who (``actor``, a user name or ``system`` for the command line) did
    what (``action``, :data:`automonitor.vocab.ACCOUNT_ACTIONS`) to which account, and when."""

    __tablename__ = "account_event"
    id: int | None = Field(default=None, primary_key=True)
    account_id: int = Field(foreign_key="annotator.id", index=True)
    action: str = Field(max_length=32)
    actor: str = Field(max_length=128)
    detail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    at: datetime = Field(default_factory=utcnow)
    __table_args__ = (one_of("action", vocab.ACCOUNT_ACTIONS, "ck_account_event_action"),)


class Erratum(SQLModel, table=True):
    """One erratum entered into this store (a reader's verdict on a pair's label), append-only: the
    newest row of a ``pair_id`` is in force. ``origin`` says how it was entered
    (:data:`automonitor.vocab.ERRATUM_ORIGINS`), ``entered_by``/``entered_at`` who and when. The
    project's own errata are not stored here: they ship with the package (``automonitor.data.errata``).
    The database holds the verdict, the date shape and the reason to 1..4096 characters."""

    __tablename__ = "erratum"
    id: int | None = Field(default=None, primary_key=True)
    pair_id: str = Field(index=True, max_length=256)
    source: str = Field(max_length=128)
    verdict: str = Field(max_length=16)
    reason: str = Field(sa_column=Column(Text, nullable=False))
    reader: str = Field(max_length=128)
    date: str = Field(max_length=10)
    origin: str = Field(max_length=16)
    entered_by: str | None = Field(default=None, max_length=128)
    entered_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (
        one_of("verdict", vocab.ERRATUM_VERDICTS, "ck_erratum_verdict"),
        one_of("origin", vocab.ERRATUM_ORIGINS, "ck_erratum_origin"),
        CheckConstraint("length(reason) BETWEEN 1 AND 4096", name="ck_erratum_reason"),
        CheckConstraint("length(date) = 10", name="ck_erratum_date"),
    )


class Assignment(SQLModel, table=True):
    """One candidate item (a single side of a pair) assigned to one annotator, at a position in that
    annotator's randomised queue (seed recorded)."""

    __tablename__ = "assignment"
    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    position: int = 0
    seed: int = 0
    batch: int = 0
    submitted_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (UniqueConstraint("annotator_id", "sample_id", name="uq_assignment_annotator_sample"),)


class Annotation(SQLModel, table=True):
    """An annotator's label on one item. Editable until the batch is submitted.

    ``evidence_spans``: where the annotator marked the misbehavior, ``[[start, end], ...]`` character
    offsets into the response (``end`` exclusive), sorted and disjoint, or ``None``; ``evidence_start`` /
    ``evidence_end``: the hull of those spans (first start, last end), kept for readers of one span;
    ``evidence_text``: the marked texts. The database enforces ``0 <= evidence_start < evidence_end``,
    both or neither, and spans only with a hull; the core (:mod:`automonitor.annotation`) checks each
    span against the text.
    """

    __tablename__ = "annotation"
    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    label: str = Field(max_length=16)  # misbehavior | benign | unsure
    category: str | None = Field(default=None, max_length=32)
    severity: str | None = Field(default=None, max_length=16)
    evidence_start: int | None = None
    evidence_end: int | None = None
    evidence_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    evidence_spans: list[list[int]] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True)
    )
    note: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    guideline_version: str = Field(default="v1", max_length=32)
    seconds_spent: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    submitted_at: datetime | None = None
    __table_args__ = (
        UniqueConstraint("annotator_id", "sample_id", name="uq_annotation_annotator_sample"),
        CheckConstraint(
            "(evidence_start IS NULL AND evidence_end IS NULL) OR (evidence_start IS NOT NULL AND evidence_end IS NOT NULL"
            " AND evidence_start >= 0 AND evidence_end > evidence_start)",
            name="ck_annotation_evidence_order",
        ),
        CheckConstraint("evidence_spans IS NULL OR evidence_start IS NOT NULL", name="ck_annotation_evidence_spans"),
        one_of("label", vocab.ANNOTATION_LABELS, "ck_annotation_label"),
    )


class Adjudication(SQLModel, table=True):
    """An adjudicator's decision on a candidate item/pair: the decided label becomes gold (accept) or the
    pair is kept as rejected with its reason."""

    __tablename__ = "adjudication"
    id: int | None = Field(default=None, primary_key=True)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    pair_id: str = Field(index=True, max_length=128)
    adjudicator_id: int = Field(foreign_key="annotator.id", index=True)
    decision: str = Field(max_length=16)  # accept | reject
    gold_label: str | None = Field(default=None, max_length=16)
    split: str | None = Field(default=None, max_length=8)
    note: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    guideline_version: str = Field(default="v1", max_length=32)
    created_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (
        one_of("decision", vocab.ADJUDICATION_DECISIONS, "ck_adjudication_decision"),
        one_of("gold_label", vocab.LABELS, "ck_adjudication_gold_label", nullable=True),
        one_of("split", vocab.SPLITS, "ck_adjudication_split", nullable=True),
    )


class LoginThrottle(SQLModel, table=True):
    """Failed logins of one key (``account:<name>`` or ``client:<address>``): consecutive failures, the
    last one, and the end of a temporary lock (``automonitor.annotation.accounts`` sets the policy)."""

    __tablename__ = "login_throttle"
    key: str = Field(primary_key=True, max_length=200)
    failures: int = 0
    last_failure_at: datetime | None = None
    locked_until: datetime | None = None


class RevokedSession(SQLModel, table=True):
    """A login-session token ended by a logout: the SHA-256 of the token's nonce (payload ``"n"``), its
    account and when it was revoked. A token whose nonce is listed here no longer logs anyone in
    (``automonitor.annotation.accounts`` sets the policy)."""

    __tablename__ = "revoked_session"
    nonce_hash: str = Field(primary_key=True, max_length=64)
    account_id: int = Field(index=True)
    revoked_at: datetime = Field(default_factory=utcnow)


class ItemFlag(SQLModel, table=True):
    """An annotator's flag on an item of their queue, with a comment for the admin."""

    __tablename__ = "item_flag"
    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    comment: str = Field(sa_column=Column(Text, nullable=False))
    resolved_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (CheckConstraint("length(comment) > 0", name="ck_item_flag_comment"),)


class GoldSpan(SQLModel, table=True):
    """Where the misbehavior is in a sample's response: ``response[start_char:end_char]``.

    ``provenance``: ``from_patch`` | ``from_screen`` (derived by the build) | ``annotated`` (from pair
    files or adjudication). ``step``: index of the trajectory step the span points at (``None`` for a
    plain response). The database enforces ``0 <= start_char < end_char`` and the vocabulary; the core
    (:mod:`automonitor.data.spans`) checks the offsets against the text and overlaps.
    """

    __tablename__ = "gold_span"
    id: int | None = Field(default=None, primary_key=True)
    sample_id: str = Field(foreign_key="sample.id", index=True, max_length=64)
    start_char: int
    end_char: int
    provenance: str = Field(index=True, max_length=16)
    step: int | None = None
    note: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
    __table_args__ = (
        CheckConstraint("start_char >= 0", name="ck_gold_span_start"),
        CheckConstraint("end_char > start_char", name="ck_gold_span_order"),
        CheckConstraint("step IS NULL OR step >= 0", name="ck_gold_span_step"),
        CheckConstraint("provenance IN ('from_patch', 'from_screen', 'annotated')", name="ck_gold_span_provenance"),
        UniqueConstraint("sample_id", "provenance", "start_char", "end_char", name="uq_gold_span"),
    )


class BuildLog(SQLModel, table=True):
    """What a ``build`` did: seed, per-source counts, quota shortfalls (shown by ``stats``)."""

    __tablename__ = "build_log"
    id: int | None = Field(default=None, primary_key=True)
    seed: int = 0
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class DerivedDocument(SQLModel, table=True):
    """A JSON document computed from the store's content and kept in it, so that a reader need not compute
    it again: ``doc`` (JSON text) under ``key`` (what it is, named by the core), with the ``fingerprint``
    of the content it was computed from. One row per key; the store neither reads nor checks the
    document, and the core decides when a fingerprint still matches (``automonitor.data.audit.cache``)."""

    __tablename__ = "derived_document"
    key: str = Field(primary_key=True, max_length=64)
    fingerprint: str = Field(max_length=64)
    doc: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
