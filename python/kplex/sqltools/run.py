"""``kplex sql run``: every statement of a SQL file, in order, in one Spark session.

The file is checked first (:mod:`kplex.sqltools.check`): with an error,
nothing runs. Statements written in another dialect (``--dialect trino``) are
transpiled to Spark SQL by sqlglot; Spark SQL runs exactly as written.

Progress goes to ``progress`` (stderr): one line when a statement starts, one
when it ends, with its time and, for a write into a kplex table, its row
count. The rows of queries (SELECT, SHOW, DESCRIBE, EXPLAIN) go to ``out``
(stdout), tab-separated, one per line, BINARY values decoded as UTF-8. At the
end, a summary: time, and rows written per virtual partition of each table.

The first failing statement stops the run with :class:`StatementFailed`,
naming it and its line; the statements before it stay done (each commits on
its own: an INSERT into a kplex table is one Kafka transaction).

>>> summary = run_file("sql/pageviews_by_user.sql", bootstrap="localhost:9092")  # doctest: +SKIP
[1/2] line 1: CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user
      done in 0.8 s
[2/2] line 3: INSERT INTO kplex.pageviews_by_user
      done in 6.2 s: 10000 rows written to kplex.pageviews_by_user
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from sqlglot import exp

import kplex.sqltools.analysis as a
from kplex.sqltools import remote as server
from kplex.sqltools.bootstrap import ENV_VAR, resolve_bootstrap
from kplex.sqltools.check import check_script, require_clean
from kplex.sqltools.diagnostics import WARNING, format_diagnostics, has_errors
from kplex.sqltools.errors import StatementFailed, check_failed, no_bootstrap, session_unavailable, statement_failed
from kplex.sqltools.script import DEFAULT_DIALECT, Script, Statement, read_script

__all__ = ["SPARK_LOG_LEVELS", "StatementOutcome", "RunSummary", "run_file", "run_script", "spark_statements"]

#: The levels Spark's ``setLogLevel`` takes (in any case).
SPARK_LOG_LEVELS = ("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN")

_ROW_COMMANDS = {"SHOW", "DESCRIBE", "DESC", "EXPLAIN", "LIST"}
_SPARK_DIALECTS = {"spark", "spark2"}


@dataclass(frozen=True)
class StatementOutcome:
    """What one statement did. ``rows_per_vp`` is set for kplex writes when the
    session reports it (``kplex.session.last_write_summary``)."""

    number: int
    line: int
    head: str
    seconds: float
    table: str | None = None
    rows: int | None = None
    rows_per_vp: dict[int, int] | None = None
    printed: int | None = None
    #: Rows another writer of the table had already written from the same source records (skipped).
    already_written: int = 0


@dataclass
class RunSummary:
    """Every statement run so far, in order."""

    path: str
    outcomes: list[StatementOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def format(self) -> str:
        """The end-of-run summary: time, then rows per virtual partition of each write."""
        lines = [f"summary: {len(self.outcomes)} statement(s) of {self.path} in {self.seconds:.1f} s"]
        for o in self.outcomes:
            if o.table is None:
                continue
            rows = "rows not reported" if o.rows is None else f"{o.rows} rows"
            if o.already_written:
                rows += f", {o.already_written} already written"
            lines.append(f"  kplex.{o.table}: {rows} (statement {o.number}, line {o.line})")
            if o.rows_per_vp:
                cells = [f"vp {vp}: {n}" for vp, n in sorted(o.rows_per_vp.items())]
                lines += ["    " + "  ".join(cells[i : i + 8]) for i in range(0, len(cells), 8)]
        return "\n".join(lines)


def spark_statements(script: Script) -> list[str]:
    """The Spark SQL of each statement: as written for Spark, else transpiled. A script that
    did not read whole (a syntax error, an undefined ``${variable}``) raises
    :class:`~kplex.sqltools.errors.CheckFailed` naming where, rather than run part of it or none.

    >>> from kplex.sqltools.script import load_script
    >>> spark_statements(load_script("SELECT CAST(json_extract_scalar(x, '$.a') AS BIGINT) FROM t", dialect="trino"))
    ["SELECT CAST(get_json_object(x, '$.a') AS BIGINT) FROM t"]
    """
    if has_errors(script.diagnostics):
        raise check_failed(script.path, script.diagnostics)
    if script.dialect.lower() in _SPARK_DIALECTS:
        return [s.text for s in script.statements]
    return [s.expression.sql(dialect="spark", normalize_functions="lower") if s.expression is not None else s.text
            for s in script.statements]


def run_file(
    path: str | Path,
    *,
    variables: Mapping[str, str] | None = None,
    dialect: str | None = None,
    bootstrap: str | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    spark_log_level: str = "FATAL",
    session: Any = None,
    out: TextIO | None = None,
    progress: TextIO | None = None,
    write_summary: Callable[[Any], dict | None] | None = None,
    kafka_settings: Mapping[str, str] | None = None,
    remote: str | None = None,
) -> RunSummary:
    """Check, then run the SQL file at ``path``; ``session`` reuses a Spark
    session with kplex configured, else one is made for ``bootstrap``
    (``--bootstrap``, ``KPLEX_BOOTSTRAP`` or the file's ``-- kplex.bootstrap``): on the
    Spark Connect server at ``remote`` (:mod:`kplex.sqltools.remote`; the bootstrap may
    then be the server's), else in a Spark of this process's own."""
    progress = progress or sys.stderr
    if spark_log_level.upper() not in SPARK_LOG_LEVELS:
        raise ValueError(f"spark_log_level {spark_log_level!r} is not one of {', '.join(SPARK_LOG_LEVELS)}")
    script = read_script(path, variables, dialect or DEFAULT_DIALECT)
    result = require_clean(check_script(script))
    warnings = [d for d in result.diagnostics if d.severity == WARNING]
    if warnings:
        print(format_diagnostics(warnings, script.path), file=progress)
    on_server = session is None and remote is not None
    if session is None:
        address, _ = resolve_bootstrap(bootstrap, script.text)
        if on_server:
            session = server.remote_session(remote, conf or {}, address, kafka_settings or {})
        elif address is None:
            raise no_bootstrap(script.path, ENV_VAR)
        else:
            # Credentials travel as the catalog's kafka.* settings.
            catalog = {f"spark.sql.catalog.kplex.kafka.{k}": v for k, v in (kafka_settings or {}).items()}
            session = _make_session(address, master, {**catalog, **(conf or {})}, spark_log_level)
    if not on_server:
        return run_script(script, session, out=out, progress=progress,
                          write_summary=write_summary or _session_write_summary)

    def reason(error: BaseException) -> str:
        return server.lost_reason(remote, error) if server.server_gone(error) else _reason(error)

    gone = False
    try:
        return run_script(script, session, out=out, progress=progress,
                          write_summary=write_summary or _session_write_summary, reason=reason)
    except StatementFailed as failure:
        gone = server.server_gone(failure.__cause__)
        raise
    finally:
        server.end_session(session, gone)


def _make_session(bootstrap: str, master: str | None, conf: dict[str, str], log_level: str = "FATAL") -> Any:
    """A Spark session with kplex, quiet: no progress bars, and Spark's own log
    only from ``log_level`` up (a failure is reported by kplex sql run itself)."""
    try:
        from kplex.session import kplex_session
    except ImportError as error:
        raise session_unavailable(error) from error
    try:
        session = kplex_session(bootstrap, master=master, conf={"spark.ui.showConsoleProgress": "false", **conf})
    except Exception as error:  # noqa: BLE001 - whatever keeps Spark from starting is said, not traced
        raise session_unavailable(_why_no_spark(error)) from error
    session.sparkContext.setLogLevel(log_level)
    return session


def _why_no_spark(error: BaseException, environ: Mapping[str, str] | None = None) -> str:
    """Why a Spark session could not be made, in a line; where its JVM did not start, what to check.

    >>> _why_no_spark(RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited."), {"JAVA_HOME": "/opt/x"})
    "Spark's JVM exited as it started (its own words are above): JAVA_HOME=/opt/x must hold a Java this Spark runs on, and each --conf a valid value"
    """
    environ = os.environ if environ is None else environ
    text = str(error).strip()
    if "JAVA_GATEWAY_EXITED" in text:
        java = f"JAVA_HOME={environ['JAVA_HOME']}" if environ.get("JAVA_HOME") else "the java on PATH (JAVA_HOME is unset)"
        return (f"Spark's JVM exited as it started (its own words are above): {java} must hold a Java this Spark"
                " runs on, and each --conf a valid value")
    return text.splitlines()[0] if text else type(error).__name__


def _session_write_summary(spark: Any) -> dict | None:
    """``kplex.session.last_write_summary``, or None when it cannot tell."""
    try:
        from kplex.session import last_write_summary

        return last_write_summary(spark)
    except Exception:  # noqa: BLE001 - a missing summary never fails a statement that succeeded
        return None


def run_script(
    script: Script,
    spark: Any,
    out: TextIO | None = None,
    progress: TextIO | None = None,
    write_summary: Callable[[Any], dict | None] = _session_write_summary,
    reason: Callable[[BaseException], str] | None = None,
) -> RunSummary:
    """Run an already checked script statement by statement through ``spark``.

    ``write_summary(spark)`` tells what the last kplex write wrote
    (``{"table", "rows", "rows_per_vp"}``); it is asked after each one. ``reason(error)``
    says why a statement failed (by default, :func:`_reason`).
    """
    out, progress, reason = out or sys.stdout, progress or sys.stderr, reason or _reason
    texts = spark_statements(script)
    summary = RunSummary(script.path)
    begin = time.monotonic()
    catalog: str | None = None
    total = len(script.statements)
    for statement, text in zip(script.statements, texts):
        print(f"[{statement.number}/{total}] line {statement.line}: {statement.head}", file=progress, flush=True)
        started = time.monotonic()
        write = a.kplex_write(statement.expression, catalog)
        try:
            frame = spark.sql(text)
            printed = _print_rows(frame, out) if _returns_rows(statement.expression) else None
        except Exception as error:  # noqa: BLE001 - any failure stops the run, named
            summary.seconds = time.monotonic() - begin
            print(f"      FAILED after {time.monotonic() - started:.1f} s", file=progress, flush=True)
            failure = statement_failed(script.path, statement.number, statement.line, statement.head, reason(error))
            failure.summary = summary
            raise failure from error
        report = write_summary(spark) if write is not None else None
        outcome = _outcome(statement, time.monotonic() - started, write, report, printed)
        summary.outcomes.append(outcome)
        print(f"      {_done(outcome)}", file=progress, flush=True)
        if statement.expression is not None:
            catalog = a.catalog_after(statement.expression, catalog)
    summary.seconds = time.monotonic() - begin
    print(summary.format(), file=progress, flush=True)
    return summary


def _returns_rows(expression: exp.Expression | None) -> bool:
    if isinstance(expression, (exp.Query, exp.Describe, exp.Show)) and not isinstance(expression.parent, exp.Insert):
        return True
    return isinstance(expression, exp.Command) and str(expression.this).upper() in _ROW_COMMANDS


def _print_rows(frame: Any, out: TextIO) -> int:
    count = 0
    for row in frame.toLocalIterator():
        print("\t".join(_cell(v) for v in row), file=out)
        count += 1
    out.flush()
    return count


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _outcome(statement: Statement, seconds: float, write: a.KplexWrite | None,
             report: dict | None, printed: int | None) -> StatementOutcome:
    if write is None:
        return StatementOutcome(statement.number, statement.line, statement.head, seconds, printed=printed)
    rows = report.get("rows") if report else None
    per_vp = {int(k): int(v) for k, v in (report.get("rows_per_vp") or {}).items()} if report else None
    skipped = int(report.get("already_written") or 0) if report else 0
    return StatementOutcome(statement.number, statement.line, statement.head, seconds, write.table, rows, per_vp,
                            already_written=skipped)


def _done(o: StatementOutcome) -> str:
    text = f"done in {o.seconds:.1f} s"
    if o.table is not None:
        text += f": {o.rows} rows written to kplex.{o.table}" if o.rows is not None else f": wrote kplex.{o.table}"
        if o.already_written:
            text += f" ({o.already_written} already written by another writer of the table: skipped)"
    if o.printed is not None:
        text += f": {o.printed} row(s) printed"
    return text


def _reason(error: BaseException, max_lines: int = 8) -> str:
    """What went wrong, briefly: the ``[KPLEX_...]`` message when the JVM plugin
    raised one (kplex.errors), else the error's first lines without JVM frames."""
    try:
        from kplex.errors import KplexError, translate

        mapped = translate(error)
        if isinstance(mapped, KplexError):
            return str(mapped)
    except ImportError:
        pass
    lines = [line for line in str(error).strip().splitlines() if line.strip() and not line.lstrip().startswith("at ")]
    text = "\n".join(lines[:max_lines]) or type(error).__name__
    return text + ("\n..." if len(lines) > max_lines else "")
