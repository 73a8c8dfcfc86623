"""The exceptions of kplex's SQL tools, naming the culprit: kplex errors
(:class:`kplex.errors.KplexError`, one hierarchy for the whole package), each raised by its
condition of ``error_conditions.json`` (``KPLEX_SQL_CHECK_FAILED``...) through
:func:`kplex.errors.kplex_error`, by the functions below. A command line prints them, so
their text is the message without the ``[KPLEX_<CODE>]`` prefix.

>>> error = untranslatable_job("jobs/x.toml", ["derive.a.filter (unknown field)"])
>>> str(error), error.getCondition()
('cannot translate jobs/x.toml: derive.a.filter (unknown field)', 'KPLEX_UNTRANSLATABLE_JOB.FIELDS')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from kplex.errors import CONDITIONS, KplexError, kplex_error, render_text

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
    "check_failed",
    "statement_failed",
    "untranslatable_job",
    "untranslatable_file",
    "unknown_dialect",
    "broker_unavailable",
    "no_bootstrap",
    "session_unavailable",
]


class SqlToolError(KplexError):
    """Base class of every error raised by ``kplex.sqltools``; its text is its message
    without the ``[KPLEX_<CODE>]`` prefix (what a command line prints)."""

    def __str__(self) -> str:
        return self._text


class CheckFailed(SqlToolError):
    """``kplex sql check`` found errors; ``diagnostics`` lists every finding."""

    path: str
    diagnostics: list[Diagnostic]


class StatementFailed(SqlToolError):
    """A statement of ``kplex sql run`` failed; the ones before it stay done.
    ``summary`` (a :class:`kplex.sqltools.run.RunSummary`) holds what they did."""

    summary: Any = None
    path: str
    number: int
    line: int
    head: str
    cause: str


class UntranslatableJob(SqlToolError):
    """``kplex translate`` met fields of an original job file it cannot express."""

    path: str
    problems: list[str]


class UnknownDialect(SqlToolError):
    """``--dialect`` names no SQL dialect sqlglot knows."""


class BrokerUnavailable(SqlToolError):
    """The Kafka broker did not answer in time (``explain`` then falls back to the file)."""


class NoBootstrap(SqlToolError):
    """``kplex sql run`` was not told which Kafka cluster to use."""


class SessionUnavailable(SqlToolError):
    """``kplex.session`` (the Spark session with kplex configured) cannot be imported."""


def check_failed(path: str, diagnostics: Sequence[Diagnostic]) -> CheckFailed:
    """:class:`CheckFailed` of ``path``, naming every finding."""
    from kplex.sqltools.diagnostics import ERROR, format_diagnostics

    found = list(diagnostics)
    error = kplex_error("SQL_CHECK_FAILED", path=path, error_count=sum(1 for d in found if d.severity == ERROR),
                        diagnostics=format_diagnostics(found, path))
    assert isinstance(error, CheckFailed)
    error.path, error.diagnostics = path, found
    return error


def statement_failed(path: str, number: int, line: int, head: str, cause: str) -> StatementFailed:
    """:class:`StatementFailed`: statement ``number`` (at ``line``) of ``path`` failed."""
    done = "FIRST" if number < 2 else "SECOND" if number == 2 else "LATER"
    error = kplex_error(f"SQL_STATEMENT_FAILED.{done}", path=path, line=line, number=number, head=head,
                        cause=cause, last_done=number - 1)
    assert isinstance(error, StatementFailed)
    error.path, error.number, error.line, error.head, error.cause = path, number, line, head, cause
    return error


def untranslatable_job(path: str, problems: Sequence[str]) -> UntranslatableJob:
    """:class:`UntranslatableJob`: the fields of ``path`` that kplex cannot express."""
    error = kplex_error("UNTRANSLATABLE_JOB.FIELDS", path=path, problems="; ".join(problems))
    assert isinstance(error, UntranslatableJob)
    error.path, error.problems = path, list(problems)
    return error


def untranslatable_file(path: str, kind: str, cause: object) -> UntranslatableJob:
    """:class:`UntranslatableJob`: ``path`` is not a valid ``kind`` file at all."""
    parameters = {"path": path, "kind": kind, "cause": cause}
    error = kplex_error("UNTRANSLATABLE_JOB.INVALID_FILE", **parameters)
    assert isinstance(error, UntranslatableJob)
    sub_class = CONDITIONS["KPLEX_UNTRANSLATABLE_JOB"]["subClass"]["INVALID_FILE"]["message"]
    error.path, error.problems = path, [render_text(" ".join(sub_class), parameters)]
    return error


def unknown_dialect(dialect: str, cause: object) -> UnknownDialect:
    return kplex_error("UNKNOWN_DIALECT", dialect=dialect, cause=cause)  # type: ignore[return-value]


def broker_unavailable(cause: object) -> BrokerUnavailable:
    return kplex_error("BROKER_UNAVAILABLE", cause=cause)  # type: ignore[return-value]


def no_bootstrap(path: str, environment_variable: str) -> NoBootstrap:
    return kplex_error("RUN_NO_BOOTSTRAP", path=path, environment_variable=environment_variable)  # type: ignore[return-value]


def session_unavailable(cause: object) -> SessionUnavailable:
    return kplex_error("SESSION_UNAVAILABLE", cause=cause)  # type: ignore[return-value]
