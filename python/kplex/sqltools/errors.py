"""The exceptions of kplex's SQL tools, naming the culprit: kplex errors
(:class:`kplex.errors.KplexError`, one hierarchy for the whole package), without a
``[KPLEX_<CODE>]`` condition of their own.

>>> str(UntranslatableJob("jobs/x.toml", ["derive.a.filter (unknown field)"]))
'cannot translate jobs/x.toml: derive.a.filter (unknown field)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from kplex.errors import KplexError

if TYPE_CHECKING:  # pragma: no cover
    from kplex.sqltools.diagnostics import Diagnostic

__all__ = [
    "SqlToolError",
    "CheckFailed",
    "StatementFailed",
    "UntranslatableJob",
    "UnknownDialect",
    "BrokerUnavailable",
    "NoBootstrap",
    "SessionUnavailable",
]


class SqlToolError(KplexError):
    """Base class of every error raised by ``kplex.sqltools``."""


class CheckFailed(SqlToolError):
    """``kplex sql check`` found errors; ``diagnostics`` lists every finding."""

    def __init__(self, path: str, diagnostics: Sequence[Diagnostic]) -> None:
        from kplex.sqltools.diagnostics import ERROR, format_diagnostics

        self.path = path
        self.diagnostics = list(diagnostics)
        errors = sum(1 for d in self.diagnostics if d.severity == ERROR)
        super().__init__(
            f"{path}: {errors} error(s), nothing was run\n" + format_diagnostics(self.diagnostics, path)
        )


class StatementFailed(SqlToolError):
    """A statement of ``kplex sql run`` failed; the ones before it stay done.
    ``summary`` (a :class:`kplex.sqltools.run.RunSummary`) holds what they did."""

    def __init__(self, path: str, number: int, line: int, head: str, cause: str) -> None:
        self.summary: Any = None
        self.path = path
        self.number = number
        self.line = line
        self.head = head
        self.cause = cause
        before = (
            f"statements 1-{number - 1} ran and their effects are kept"
            if number > 2
            else "statement 1 ran and its effects are kept"
            if number == 2
            else "nothing ran before it"
        )
        super().__init__(
            f"{path}:{line}: statement {number} failed ({head}): {cause}\n"
            f"stopped at statement {number}; {before}"
        )


class UntranslatableJob(SqlToolError):
    """``kplex translate`` met fields of an original job file it cannot express."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = list(problems)
        super().__init__(f"cannot translate {path}: " + "; ".join(self.problems))


class UnknownDialect(SqlToolError):
    """``--dialect`` names no SQL dialect sqlglot knows."""


class BrokerUnavailable(SqlToolError):
    """The Kafka broker did not answer in time (``explain`` then falls back to the file)."""


class NoBootstrap(SqlToolError):
    """``kplex sql run`` was not told which Kafka cluster to use."""


class SessionUnavailable(SqlToolError):
    """``kplex.session`` (the Spark session with kplex configured) cannot be imported."""
