"""Errors shared by the core. ``InputError`` is bad user input: the CLI maps it to exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input, located as precisely as possible.

    Attributes:
        file: path of the offending file (or ``None`` for non-file input such as a CLI option).
        line: 1-based line number (JSONL line or CSV data row counting the header as line 1), or ``None``.
        field: name of the offending field or option, or ``None``.
        message: what is wrong, in plain words.
    """

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.file, self.line, self.field, self.message = file, line, field, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ": ".join([", ".join(where), self.message]) if where else self.message


class ChangedElsewhere(InputError):
    """A write found its target changed by somebody else since it was read (e.g. a label save racing
    an import or the annotator's own batch submit in another tab): nothing was written. The stored
    state wins; the caller should show it again."""


class PermissionDenied(PermissionError):
    """The acting user's role does not allow the operation (enforced in core/store, not only in the UI)."""


class NotFound(LookupError):
    """A named run, sample, user or item does not exist in the store."""
