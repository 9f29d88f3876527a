"""Validated rows of the imported files: one pydantic model a file kind, one validation path for all.

:mod:`automonitor.data.records` reads a JSONL, CSV or Parquet file into located raw records
(:class:`~automonitor.data.records.RawRecord`: ``line``, ``data``, ``text_cells``); this module checks each record
against a row model and turns every pydantic error into a problem located at (file, line, field) in a
:class:`~automonitor.data.records.Problems`, which the importer raises as one
:class:`automonitor.errors.InputError`. The models:

- :class:`PairRow`: one sample of a pair file (``automonitor import``; :mod:`automonitor.data.pairfiles`);
- :class:`PredictionRow`: one verdict of an outside system (``automonitor predictions import``;
  :mod:`automonitor.runs.prediction_files`);
- :class:`AnnotationRow`: one annotator's label (``automonitor annotations import``).

The models check the fields of one row; what needs the whole file or the store (duplicates, unknown
sample ids, the two sides of a pair, assignments) stays with the importer. Every field has a plain
validator that takes the value as read and raises :func:`problem` with the message the importer has
always given, so pydantic never coerces on its own: JSON stays strict (a ``score`` given as the string
``"0.5"`` in JSONL is refused) while a CSV or Parquet cell, always text (``text_cells``), is converted
where the file format says so (a ``score`` cell to a number, an ``evidence`` or ``meta`` cell from JSON).

A field given as JSON ``null`` is the same as an absent field. The problems of one row come in this order:
field names that are not UTF-8 text, unknown fields, the missing required fields (one problem naming them
all), then field by field in the model's order, then the checks across fields.
"""

from __future__ import annotations

import math
from typing import SupportsFloat, SupportsIndex, SupportsInt, TypeAlias, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from automonitor import vocab
from automonitor.hashing import is_blank
from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.vocab import MAX_NOTE, SEVERITIES
from automonitor.data.records import JSONLimitError, Problems, RawRecord, bad_byte_note, loads, meta_problem

__all__ = [
    "PAIR_FIELDS",
    "PAIR_REQUIRED",
    "PAIR_MAX_LEN",
    "PREDICTION_REQUIRED",
    "RowModel",
    "as_int",
    "PairRow",
    "PredictionRow",
    "AnnotationRow",
    "problem",
    "validate_one",
]

_NO_FIELD = object()

#: what the row validators get from pydantic: the context :func:`validate_one` passes (``{"text_cells": bool}``)
TextCellsInfo: TypeAlias = "ValidationInfo[dict[str, bool] | None]"


def problem(message: str, field: object = _NO_FIELD) -> PydanticCustomError:
    """The error a row validator raises: ``message`` is shown as it is (no pydantic prefix; undecodable
    bytes as escapes); ``field`` (a name, or None for no field) overrides the field the error is located
    at, which is otherwise the field being validated (needed by checks across fields, which pydantic
    locates at the row)."""
    ctx: dict[str, object] = {"message": message.encode("utf-8", "backslashreplace").decode("utf-8")}
    if field is not _NO_FIELD:
        ctx["field"] = field
    return PydanticCustomError("row", "{message}", ctx)


def _type_name(value: object) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
        str: "a string",
    }.get(type(value), type(value).__name__)


def as_int(value: object) -> int:
    """``int(value)`` for what ``int`` converts (text, bytes, a number); TypeError for anything else."""
    if isinstance(value, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        return int(value)
    raise TypeError(f"int() argument must be a string, a bytes-like object or a number, not {type(value).__name__!r}")


def _text_cells(info: TextCellsInfo) -> bool:
    """Whether the row came from CSV or Parquet (cells are text; see :func:`validate_one`)."""
    return bool(info.context and info.context.get("text_cells"))


class RowModel(BaseModel):
    """Base of the row models: how an unknown and a missing field are worded (a model may override)."""

    model_config = ConfigDict(extra="ignore")

    @classmethod
    def unknown_field_problem(cls, name: str) -> str:
        """The message for a field the model does not know (``extra="forbid"`` models only)."""
        return f"unknown field '{name}'"

    @classmethod
    def missing_problem(cls, names: list[str]) -> str:
        """The one message for all the missing required fields of a row (``names`` in model order)."""
        return f"missing required field{'s' if len(names) > 1 else ''} {', '.join(names)}"


M = TypeVar("M", bound=RowModel)


def _row_problems(model: type[RowModel], exc: ValidationError) -> list[tuple[str, str | None]]:
    """``(message, field)`` of each error of ``exc``, in the order of the module doc."""
    unknown: list[tuple[str, str | None]] = []
    missing: list[str] = []
    other: list[tuple[str, str | None]] = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = err["loc"]
        name = ".".join(str(part) for part in loc) if loc else None
        ctx = err.get("ctx") or {}
        if err["type"] == "extra_forbidden" and name is not None:
            unknown.append((model.unknown_field_problem(name), name))
        elif err["type"] == "missing" and name is not None:
            missing.append(name)
        elif err["type"] == "row":
            other.append((ctx["message"], ctx.get("field", name)))
        else:  # not raised by the models' own validators; kept readable all the same
            other.append((err["msg"], name))
    if missing:
        unknown.append((model.missing_problem(missing), missing[0]))
    return unknown + other


def validate_one(model: type[M], record: RawRecord, problems: Problems) -> M | None:
    """Validate one located raw record against ``model``.

    Returns the row, or None after adding each of its problems to ``problems`` at ``record.line``
    (field names that are not UTF-8 text, then the model's errors translated by the module doc's rules).
    The model's validators see ``info.context["text_cells"]`` (True for CSV and Parquet records).
    """
    data: dict[str, object] = {}
    bad_name = False
    for key, value in record.data.items():
        note = bad_byte_note(str(key))
        if note:
            problems.add(f"a field name is not UTF-8 text: {note}", line=record.line)
            bad_name = True
        elif not (value is None and key in model.model_fields):  # JSON null = absent
            data[key] = value
    try:
        row = model.model_validate(data, context={"text_cells": record.text_cells})
    except ValidationError as exc:
        for message, field in _row_problems(model, exc):
            problems.add(message, line=record.line, field=field)
        return None
    return None if bad_name else row


# ------------------------------------------------------------------------------------------- pair file

PAIR_FIELDS: tuple[str, ...] = (
    "sample_id",
    "pair_id",
    "category",
    "task",
    "request",
    "response",
    "label",
    "source",
    "meta",
    "label_source",
    "spans",
)
"""The pair file's columns, in the contract's order (exports write them so; ``spans`` only when a row
has gold spans)."""
PAIR_REQUIRED: tuple[str, ...] = ("pair_id", "category", "task", "request", "response", "label")
PAIR_MAX_LEN: dict[str, int] = {"sample_id": 64, "pair_id": 128, "source": 64}
_PAIR_VOCAB: dict[str, tuple[str, ...]] = {
    "category": vocab.CATEGORIES,
    "task": vocab.TASKS,
    "label": vocab.LABELS,
    "label_source": vocab.LABEL_SOURCES,
}
_PAIR_OPTIONAL_TEXT = ("sample_id", "source", "label_source")  # an empty string is an absent value


def _unclean_text_in(value: object, path: str = "meta") -> str:
    """'' when every string (keys too) in the JSON tree ``value`` is clean text, else what is wrong and
    where (``meta.a[1]: contains a NUL character``). Recursive: the tree is at most 16 levels deep
    (``records.meta_problem`` is checked first)."""
    if isinstance(value, str):
        note = bad_byte_note(value)
        if note:
            return f"{path}: {note}"
        if "\x00" in value:
            return f"{path}: contains a NUL character"
        return ""
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unclean_text_in(key, path) or _unclean_text_in(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _unclean_text_in(item, f"{path}[{i}]")
            if found:
                return found
    return ""


def _pair_meta_from_cell(cell: str) -> JSONValue:
    """The JSON value of a CSV/Parquet ``meta`` cell (strict JSON, :func:`automonitor.data.records.loads`)."""
    note = bad_byte_note(cell)
    if note:
        raise problem(f"not UTF-8 text: {note}")
    try:
        return loads(cell)
    except JSONLimitError as exc:
        raise problem(f"{'meta.' + exc.path if exc.path else 'meta'} {exc.msg}") from None
    except ValueError as exc:
        raise problem(f"is not valid JSON: {getattr(exc, 'msg', None) or exc}") from None


def _json_list_cell(value: object, info: TextCellsInfo, what: str) -> list[object] | None:
    """A list-valued field: ``None`` for a missing or empty cell, a CSV/Parquet text cell parsed as JSON
    (:func:`_pair_meta_from_cell`), else the value, which must be a list (``what`` it should hold, for the
    message)."""
    if value is None or value == "":
        return None
    if _text_cells(info) and isinstance(value, str):
        value = _pair_meta_from_cell(value)
    if not isinstance(value, list):
        raise problem(f"must be a JSON array of {what}, got {_type_name(value)}")
    return value


class PairRow(RowModel):
    """One sample of a pair file (the CLI contract's generic pair file; columns :data:`PAIR_FIELDS`), text exactly as
    given. ``sample_id``, ``source`` and ``label_source`` are None when absent (the importer assigns them).

    Per field: a string (``meta``: a JSON object; in CSV/Parquet a JSON text), UTF-8 text without NUL,
    ``category``/``task``/``label``/``label_source`` in the vocabulary, not blank (:func:`is_blank`),
    ``sample_id``/``pair_id``/``source`` at most :data:`PAIR_MAX_LEN` characters; ``meta`` within the
    limits of :func:`automonitor.data.records.meta_problem`. Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid")

    sample_id: str | None = Field(
        default=None, description="the sample's id (at most 64 characters); assigned from its content when absent"
    )
    pair_id: str = Field(description="shared by the two sides of a pair (at most 128 characters)")
    category: str = Field(description="safety_permission, sycophancy_bias or specification_gaming")
    task: str = Field(description="qa, code or reasoning")
    request: str = Field(description="what the model was asked, not blank; the same on both sides of a pair")
    response: str = Field(description="what the model answered, not blank; stored exactly as given")
    label: str = Field(description="misbehavior or benign: one side of each")
    source: str | None = Field(
        default=None, description='where the pair comes from (at most 64 characters); "import" when absent'
    )
    label_source: str | None = Field(
        default=None, description='label provenance (vocabulary: label sources); "user" when absent'
    )
    meta: JSONObject = Field(
        default_factory=dict,
        description="a JSON object of extra data (CSV/Parquet: a JSON text): at most 16 levels, 64 KiB",
    )
    spans: list[JSONObject] | None = Field(
        default=None,
        description="gold spans of a misbehavior side: [{start, end, provenance, note?, step?}], character offsets into response",
    )

    @classmethod
    def unknown_field_problem(cls, name: str) -> str:
        return f"unknown field '{name}' (fields: {', '.join(PAIR_FIELDS)}; put extra data in 'meta')"

    @field_validator(*(f for f in PAIR_FIELDS if f not in ("meta", "spans")), mode="plain")
    @classmethod
    def _text(cls, value: object, info: TextCellsInfo) -> str | None:
        name = info.field_name or ""
        if value == "" and name in _PAIR_OPTIONAL_TEXT:
            return None
        if not isinstance(value, str):
            raise problem(f"must be a string, got {_type_name(value)}")
        note = bad_byte_note(value)
        if note:
            raise problem(f"not UTF-8 text: {note}")
        if "\x00" in value:
            raise problem("contains a NUL character")
        allowed = _PAIR_VOCAB.get(name)
        if allowed is not None and value not in allowed:
            raise problem(f"unknown {name} '{value}' (allowed: {', '.join(allowed)})")
        if is_blank(value):
            raise problem("is empty (only whitespace or invisible characters)")
        limit = PAIR_MAX_LEN.get(name)
        if limit is not None and len(value) > limit:
            raise problem(f"is {len(value)} characters long (at most {limit})")
        return value

    @field_validator("meta", mode="plain")
    @classmethod
    def _meta(cls, value: object, info: TextCellsInfo) -> JSONObject:
        if _text_cells(info) and isinstance(value, str):
            value = _pair_meta_from_cell(value)
        if not isinstance(value, dict):
            raise problem(f"must be a JSON object, got {_type_name(value)}")
        found = meta_problem(value)
        if found:
            raise problem(found)
        found = _unclean_text_in(value)
        if found:
            raise problem(f"not clean text: {found}")
        return value

    @field_validator("spans", mode="plain")
    @classmethod
    def _spans(cls, value: object, info: TextCellsInfo) -> list[JSONObject] | None:
        items = _json_list_cell(value, info, "spans")
        if items is None:
            return None
        out: list[JSONObject] = []
        for i, sp in enumerate(items):
            if not isinstance(sp, dict):
                raise problem(f"spans[{i}] must be an object, got {_type_name(sp)}", field=f"spans[{i}]")
            extra = sorted(set(sp) - set(_SPAN_KEYS))
            if extra:
                raise problem(
                    f"spans[{i}]: unknown key '{extra[0]}' (keys: {', '.join(_SPAN_KEYS)})",
                    field=f"spans[{i}].{extra[0]}",
                )
            for key in ("start", "end"):
                v = sp.get(key)
                if isinstance(v, bool) or not isinstance(v, int):
                    raise problem(f"spans[{i}].{key} must be an integer offset, got {v!r}", field=f"spans[{i}].{key}")
                if v < 0:
                    raise problem(f"spans[{i}].{key} must be >= 0, got {v}", field=f"spans[{i}].{key}")
            if sp.get("provenance") not in vocab.SPAN_PROVENANCES:
                raise problem(
                    f"spans[{i}].provenance {sp.get('provenance')!r} is not one of {', '.join(vocab.SPAN_PROVENANCES)}",
                    field=f"spans[{i}].provenance",
                )
            note = sp.get("note")
            if note is not None and (not isinstance(note, str) or "\x00" in note or bad_byte_note(note)):
                raise problem(f"spans[{i}].note must be clean text", field=f"spans[{i}].note")
            step = sp.get("step")
            if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
                raise problem(f"spans[{i}].step must be a step index >= 0, got {step!r}", field=f"spans[{i}].step")
            out.append({k: sp.get(k) for k in _SPAN_KEYS})
        return out


_SPAN_KEYS = ("start", "end", "provenance", "note", "step")


# -------------------------------------------------------------------------------------- predictions file

PREDICTION_REQUIRED: tuple[str, ...] = ("sample_id", "outcome")
#: at most this many characters in an imported ``raw`` or ``reason``: the cap a judge's own answer has
#: (:data:`automonitor.runs.parsing.ANSWER_CHAR_CAP`; a test holds them equal)
PREDICTION_TEXT_CAP = 256_000
PREDICTION_MAX_LEN: dict[str, int] = {
    "pred_category": 32,
    "severity": 16,
    "raw": PREDICTION_TEXT_CAP,
    "reason": PREDICTION_TEXT_CAP,
}


class PredictionRow(RowModel):
    """One verdict of an outside system (``automonitor predictions import``).

    ``sample_id``: a non-blank string (stripped); ``outcome``: one of :data:`automonitor.vocab.OUTCOMES`
    (stripped); ``score``: None or a finite number in [0, 1] (CSV: the cell's number); ``evidence``: a list
    of strings (CSV: a JSON array); ``raw``, ``reason`` (each at most :data:`PREDICTION_TEXT_CAP` characters),
    ``pred_category`` (at most 32), ``severity`` (at most 16): None or strings. Other fields are kept (``model_extra``) and must obey the
    ``meta`` limits of :func:`automonitor.data.records.meta_problem`.
    """

    model_config = ConfigDict(extra="allow")

    sample_id: str = Field(
        default=None, validate_default=True, description="a gold sample of the test set or of the controls (stripped)"
    )
    outcome: str = Field(
        default=None,
        validate_default=True,
        description="the verdict: misbehavior, benign, invalid, refusal or error (stripped)",
    )
    score: float | None = Field(
        default=None, description="how likely misbehavior, a finite number in [0, 1] (for ROC/AUROC); optional"
    )
    evidence: list[str] = Field(
        default_factory=list, description="quoted parts of the response the verdict rests on (CSV: a JSON array)"
    )
    raw: str | None = Field(default=None, description="the system's raw answer (at most 256,000 characters)")
    reason: str | None = Field(default=None, description="the system's explanation (at most 256,000 characters)")
    pred_category: str | None = Field(default=None, description="the category the system names (at most 32 characters)")
    severity: str | None = Field(default=None, description="the severity the system names (at most 16 characters)")

    @field_validator("sample_id", mode="plain")
    @classmethod
    def _sample_id(cls, value: object) -> str:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise problem("sample_id is missing")
        if not isinstance(value, str):
            raise problem(f"sample_id must be a string, got {type(value).__name__}")
        return value.strip()

    @field_validator("outcome", mode="plain")
    @classmethod
    def _outcome(cls, value: object) -> str:
        if value is None:
            raise problem(f"missing outcome (one of {', '.join(vocab.OUTCOMES)})")
        if not isinstance(value, str) or value.strip() not in vocab.OUTCOMES:
            raise problem(f"outcome must be one of {', '.join(vocab.OUTCOMES)}, got {value!r}")
        return value.strip()

    @field_validator("score", mode="plain")
    @classmethod
    def _score(cls, value: object, info: TextCellsInfo) -> float:
        if _text_cells(info) and isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise problem(f"score must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise problem(f"score must be a number, got {value!r}")
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise problem(f"score must be in [0, 1], got {value!r}")
        return float(value)

    @field_validator("evidence", mode="plain")
    @classmethod
    def _evidence(cls, value: object, info: TextCellsInfo) -> list[str]:
        if _text_cells(info) and isinstance(value, str):
            try:
                value = loads(value)
            except JSONLimitError as exc:
                raise problem(f"{'evidence' + exc.path if exc.path else 'evidence'} {exc.msg}") from None
            except ValueError as exc:
                raise problem(f"evidence must be a JSON array of strings: {getattr(exc, 'msg', exc)}") from None
            if value is None:
                return []
        if not (isinstance(value, list) and all(isinstance(e, str) for e in value)):
            raise problem("evidence must be a list of strings")
        return value

    @field_validator("raw", "reason", "pred_category", "severity", mode="plain")
    @classmethod
    def _text(cls, value: object, info: TextCellsInfo) -> str:
        name = info.field_name or ""
        if not isinstance(value, str):
            raise problem(f"{name} must be a string")
        limit = PREDICTION_MAX_LEN.get(name)
        if limit is not None and len(value) > limit:
            raise problem(f"{name} longer than {limit} characters")
        return value

    @model_validator(mode="after")
    def _extra_within_meta_limits(self) -> PredictionRow:
        extra = self.model_extra or {}
        for key, value in extra.items():
            found = meta_problem(value, key)  # kept in meta["extra"]: the meta limits apply
            if found:
                raise problem(found, field=key)
        if extra:
            found = meta_problem(extra, "extra")
            if found:
                raise problem(found, field=next(iter(extra)))
        return self

    def prediction_values(self) -> PredictionValues:
        """The ``Prediction`` column values: ``sample_id``, ``outcome``, ``score``, ``evidence``, ``raw``,
        ``reason``, ``pred_category``, ``severity``, ``meta`` (``{"extra": {field: value}}`` holding the
        fields the model does not know, or ``{}``)."""
        extra = dict(self.model_extra or {})
        return PredictionValues(
            sample_id=self.sample_id,
            outcome=self.outcome,
            score=self.score,
            evidence=self.evidence,
            raw=self.raw,
            reason=self.reason,
            pred_category=self.pred_category,
            severity=self.severity,
            meta={"extra": extra} if extra else {},
        )


class PredictionValues(TypedDict):
    """The ``Prediction`` column values of a :class:`PredictionRow` (:meth:`PredictionRow.prediction_values`)."""

    sample_id: str
    outcome: str
    score: float | None
    evidence: list[str]
    raw: str | None
    reason: str | None
    pred_category: str | None
    severity: str | None
    meta: JSONObject


# --------------------------------------------------------------------------------------- annotation file


class AnnotationRow(RowModel):
    """One annotator's label (``automonitor annotations import``); other columns (e.g. those of an
    export: ``created_at``, ``pair_id``, ...) are ignored.

    ``annotator``: a non-blank string, as given (the importer looks it up stripped); ``sample_id``: a
    non-blank string (stripped); ``label``: one of :data:`automonitor.vocab.ANNOTATION_LABELS` (stripped);
    ``category``/``severity``: None (also for ``""``) or in the vocabulary; ``note`` (at most
    ``annotation.MAX_NOTE`` characters) and ``guideline_version`` (at most 32): None or text, stripped,
    None when empty (the importer applies the current guideline version); ``evidence_start`` and
    ``evidence_end``: None (also ``""``) or whole numbers (``int(value)``), both or neither (one span);
    ``evidence_spans``: None (also ``""`` or ``[]``) or a JSON array of ``[start, end]`` pairs of
    integers >= 0 (in CSV a JSON cell; several spans, which win over ``evidence_start``/``evidence_end``;
    the importer checks them against the response and for overlaps); ``seconds_spent``: None (also ``""``) or a finite number >= 0. Cells are read the same way in JSONL
    and CSV.
    """

    annotator: str = Field(default=None, validate_default=True, description="the annotator's account name")
    sample_id: str = Field(default=None, validate_default=True, description="the labelled sample (stripped)")
    label: str = Field(
        default=None, validate_default=True, description="misbehavior, benign or unsure (vocabulary: annotation labels)"
    )
    category: str | None = Field(default=None, description="the misbehavior category the annotator chose; optional")
    severity: str | None = Field(default=None, description="the severity the annotator chose (vocabulary); optional")
    guideline_version: str | None = Field(
        default=None, description="the guideline version labelled under (at most 32); the current one when empty"
    )
    note: str | None = Field(default=None, description="the annotator's note (at most 5,000 characters)")
    evidence_start: int | None = Field(default=None, description="start of one evidence span (with evidence_end)")
    evidence_end: int | None = Field(default=None, description="end of one evidence span (with evidence_start)")
    evidence_spans: list[tuple[int, int]] | None = Field(
        default=None,
        description="several evidence spans, [[start, end], ...] (CSV: a JSON cell); win over the pair above",
    )
    seconds_spent: float | None = Field(default=None, description="time spent on the item, seconds (>= 0)")

    @field_validator("annotator", mode="plain")
    @classmethod
    def _annotator(cls, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise problem("missing annotator")
        return value

    @field_validator("sample_id", mode="plain")
    @classmethod
    def _sample_id(cls, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise problem("missing sample_id")
        return value.strip()

    @field_validator("label", mode="plain")
    @classmethod
    def _label(cls, value: object) -> str:
        value = value.strip() if isinstance(value, str) else value
        if not isinstance(value, str) or value not in vocab.ANNOTATION_LABELS:
            raise problem(f"label must be one of {', '.join(vocab.ANNOTATION_LABELS)}, not {value!r}")
        return value

    @field_validator("category", "severity", mode="plain")
    @classmethod
    def _choice(cls, value: object, info: TextCellsInfo) -> str | None:
        allowed = vocab.CATEGORIES if info.field_name == "category" else SEVERITIES
        if value == "":
            return None
        if not isinstance(value, str) or value not in allowed:  # allowed: all str
            raise problem(f"{info.field_name} must be one of {', '.join(allowed)}, not {value!r}")
        return value

    @field_validator("guideline_version", "note", mode="plain")
    @classmethod
    def _note(cls, value: object, info: TextCellsInfo) -> str | None:
        name = info.field_name or ""
        limit = 32 if name == "guideline_version" else MAX_NOTE
        if not isinstance(value, str):
            raise problem(f"{name} must be text")
        value = value.strip()
        if len(value) > limit:
            raise problem(f"{name} longer than {limit} characters")
        return value or None

    @field_validator("evidence_start", "evidence_end", mode="plain")
    @classmethod
    def _offset(cls, value: object, info: TextCellsInfo) -> int | None:
        if value == "":
            return None
        try:
            return as_int(value)
        except (TypeError, ValueError):
            raise problem(f"{info.field_name} must be an integer") from None

    @field_validator("evidence_spans", mode="plain")
    @classmethod
    def _evidence_spans(cls, value: object, info: TextCellsInfo) -> list[tuple[int, int]] | None:
        items = _json_list_cell(value, info, "[start, end] pairs")
        if items is None:
            return None
        out = []
        for i, piece in enumerate(items):
            if (
                not isinstance(piece, list)
                or len(piece) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in piece)
            ):
                raise problem(
                    f"evidence_spans[{i}] must be [start, end] with integer offsets >= 0, got {piece!r}",
                    field=f"evidence_spans[{i}]",
                )
            out.append((piece[0], piece[1]))
        return out or None

    @field_validator("seconds_spent", mode="plain")
    @classmethod
    def _seconds(cls, value: object) -> float | None:
        if value == "":
            return None
        try:  # what float() converts (text, a number); anything else is refused
            seconds = float(value) if isinstance(value, (str, bytes, bytearray, SupportsFloat, SupportsIndex)) else -1.0
        except ValueError:
            seconds = -1.0
        if not seconds >= 0 or seconds == float("inf"):
            raise problem("seconds_spent must be a non-negative number")
        return seconds

    @model_validator(mode="after")
    def _evidence_span(self) -> AnnotationRow:
        if (self.evidence_start is None) != (self.evidence_end is None):
            raise problem("evidence_start and evidence_end go together", field="evidence_end")
        return self
