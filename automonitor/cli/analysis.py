"""CLI commands (placeholder module; filled in by its feature)."""

from automonitor.cli import app  # noqa: F401
