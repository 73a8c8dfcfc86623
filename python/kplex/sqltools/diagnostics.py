"""Findings about a SQL file, each pinned to a statement, a line and a column.

>>> d = Diagnostic("error", 2, 5, 8, "unknown function kplex_ordr; did you mean kplex_order?")
>>> d.format("job.sql")
'job.sql:5:8: error: statement 2: unknown function kplex_ordr; did you mean kplex_order?'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

__all__ = ["Diagnostic", "ERROR", "WARNING", "format_diagnostics", "has_errors"]

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. ``statement`` is 1-based; 0 means "the file as a whole"."""

    severity: str
    statement: int
    line: int
    column: int
    message: str

    def format(self, path: str) -> str:
        where = f"statement {self.statement}: " if self.statement else ""
        return f"{path}:{self.line}:{self.column}: {self.severity}: {where}{self.message}"


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when any finding is an error (warnings do not stop a run)."""
    return any(d.severity == ERROR for d in diagnostics)


def format_diagnostics(diagnostics: Iterable[Diagnostic], path: str) -> str:
    """One line per finding, in file order, for a terminal or a fixture."""
    ordered = sorted(diagnostics, key=lambda d: (d.line, d.column, d.statement, d.message))
    return "\n".join(d.format(path) for d in ordered)
