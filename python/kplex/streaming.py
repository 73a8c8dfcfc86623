"""Streaming jobs: a SQL file whose ``INSERT INTO kplex.<table> ... FROM STREAM(...)`` runs as a
Structured Streaming query into a kplex table, the other statements (``CREATE TABLE``) as usual.

    >>> from kplex.streaming import run_stream_file
    >>> run_stream_file("sql/pageviews_by_user_stream.sql", spark,
    ...                 checkpoint="/chk/pageviews_by_user", available_now=True)  # doctest: +SKIP

The same query from PySpark::

    (spark.readStream.table("kplex.pageviews")
          .selectExpr("kplex_key(kplex_json(value, '/userid'))",
                      "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT))", "value")
          .writeStream.option("checkpointLocation", "/chk/pageviews_by_user")
          .toTable("kplex.pageviews_by_user"))

Every micro-batch is written exactly once and each virtual partition stays in order
across micro-batches (docs/streaming.md).
"""
from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, TextIO

from kplex import settings
from kplex.errors import KplexError, kplex_error

#: ``INSERT INTO <table> <query>``: a candidate for the statement that becomes a stream.
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(?:TABLE\s+)?([\w.`]+)\s+(.*)$", re.IGNORECASE | re.DOTALL)
#: A relation read as a stream: ``FROM STREAM(t)``, ``FROM STREAM t``, ``JOIN STREAM(t)``, ``, STREAM t``.
_STREAM_RELATION = re.compile(r"(?:\bFROM|\bJOIN|,)\s+STREAM(?:\s*\(|\s+[\w`])", re.IGNORECASE)
#: String literals and comments, whose words are not SQL's.
_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)


class NoStreamingInsert(KplexError):
    """The file has no ``INSERT INTO kplex.<table> SELECT ... FROM STREAM(<source>)``."""


@dataclass(frozen=True)
class StreamingInsert:
    """The target table and the streaming query of an ``INSERT INTO ... FROM STREAM(...)``."""

    table: str
    query: str


def streaming_insert(statement: str) -> StreamingInsert | None:
    """The streaming INSERT in ``statement``, or None for any other statement.

    >>> streaming_insert("INSERT INTO kplex.t SELECT k, o, value FROM STREAM(kplex.s)")
    StreamingInsert(table='kplex.t', query='SELECT k, o, value FROM STREAM(kplex.s)')
    >>> streaming_insert("INSERT INTO kplex.t SELECT * FROM kplex.s") is None
    True

    The word alone, in a string or a column's name, does not make an INSERT a stream:

    >>> streaming_insert("INSERT INTO kplex.t SELECT k, o, value FROM kplex.s WHERE kind = 'from stream x'") is None
    True
    >>> streaming_insert("INSERT INTO kplex.t SELECT stream, o, value FROM kplex.s") is None
    True
    >>> streaming_insert("INSERT INTO kplex.t SELECT k, o, value FROM stream_events") is None
    True
    """
    match = _INSERT.match(statement.strip().rstrip(";"))
    if match is None or not _STREAM_RELATION.search(_LITERALS.sub(" ", match.group(2))):
        return None
    return StreamingInsert(match.group(1).replace("`", ""), match.group(2).strip())


#: What :func:`start_stream` set in each session (by ``id``), so that a later start undoes it
#: and never a user's own ``SET``: {session: {setting: value}}.
_SET_BY_START: dict[int, dict[str, str]] = {}


def _set_for_this_start(spark: Any, wanted: Mapping[str, str]) -> None:
    """Set ``wanted`` (kplex's stream session settings) for this start; a setting an earlier
    start set that this one does not want is unset, unless the user has changed it since."""
    earlier = _SET_BY_START.pop(id(spark), {})
    for name, value in earlier.items():
        if name not in wanted and spark.conf.get(settings.session_key(name), None) == value:
            spark.conf.unset(settings.session_key(name))
    for name, value in wanted.items():
        spark.conf.set(settings.session_key(name), value)
    if wanted:
        _SET_BY_START[id(spark)] = dict(wanted)


def start_stream(spark: Any, insert: StreamingInsert, checkpoint: str, *, trigger: str | None = None,
                 available_now: bool = False, release_at_end: bool = False, resume: bool = False,
                 options: Mapping[str, str] | None = None) -> Any:
    """Start ``insert`` as a streaming query; returns the StreamingQuery.
    ``trigger``: a processing-time interval ("1 second"); ``available_now``: read what is
    there now and stop (records still within ``kplex.max_delay_ms`` stay held for the next
    run); ``release_at_end``: and then release everything held (the input has ended: a
    later record below what this wrote is late); ``resume``: a new checkpoint starts where
    the table's last stream from the same source stopped, and writes what that one held
    (``startingOffsets = 'table'``; docs/streaming.md, "Changing a query")."""
    from kplex.session import require_spark

    _require_available_now(available_now, release_at_end)
    require_spark("STREAM(...) in SQL (a streaming INSERT)", (4, 1), spark.version)
    # Only what this start asks for is set; a user's own SET (releaseAtEnd, startingOffsets,
    # a resume written as SET ... = 'table') stays, and what an earlier start set goes.
    wanted = {settings.RELEASE_AT_END: "true"} if release_at_end else {}
    if resume:
        wanted[settings.STARTING_OFFSETS] = settings.RESUME_FROM_TABLE
        wanted[settings.STARTING_TABLE] = insert.table.split(".", 1)[-1]
    _set_for_this_start(spark, wanted)
    writer = spark.sql(insert.query).writeStream.option("checkpointLocation", checkpoint)
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif trigger:
        writer = writer.trigger(processingTime=trigger)
    return writer.toTable(insert.table)


def _require_available_now(available_now: bool, release_at_end: bool) -> None:
    """Refuse ``release_at_end`` without ``available_now``: a stream that does not stop has no end
    of input to release every held record at (the JVM would ignore it without a word).

    >>> _require_available_now(False, True)
    Traceback (most recent call last):
    kplex.errors.OptionError: [KPLEX_BAD_OPTION] option 'releaseAtEnd' = 'true' is invalid: ...
    """
    if release_at_end and not available_now:
        raise kplex_error("BAD_OPTION.VALUE", option=settings.RELEASE_AT_END, value="true",
                          expected="it applies with Trigger.AvailableNow only (available_now=True): a stream that"
                                   " does not stop has no end of input to release every held record at")


def recent_progress(query: Any) -> list[Any]:
    """``query.recentProgress`` with the same attributes on every Spark line: Spark 4 gives
    ``StreamingQueryProgress`` objects, Spark 3.5's PySpark gives their JSON as dicts, which
    this turns into objects of the same attribute names (``metrics`` stay dicts, as in 4).

    >>> recent_progress(SimpleNamespace(recentProgress=[{"batchId": 3, "sink": {"metrics": {"late": "1"}}}]))[0].sink.metrics
    {'late': '1'}
    """
    # Spark 4's progress objects are dicts too (a dict subclass): only plain dicts are 3.5's.
    return [_progress(p) if type(p) is dict else p for p in query.recentProgress]


def _progress(raw: dict) -> Any:
    progress = _attributes(raw)
    progress.json = json.dumps(raw)  # as Spark 4's StreamingQueryProgress.json
    return progress


def _attributes(value: Any, key: str = "") -> Any:
    if isinstance(value, dict) and key != "metrics":
        return SimpleNamespace(**{k: _attributes(v, k) for k, v in value.items()})
    if isinstance(value, list):
        return [_attributes(v, key) for v in value]
    return value


def progress_line(progress: Any) -> str:
    """One line per micro-batch: rows read and written, late and held records, commit time,
    and where the slowest writer task spent its time."""
    sink = dict(progress.sink.metrics or {}) if progress.sink is not None else {}
    skipped = sink.get("alreadyWritten", "0")
    return (f"batch {progress.batchId}: {progress.numInputRows} rows read"
            f" ({progress.inputRowsPerSecond or 0:.0f}/s in)"
            f", per virtual partition {sink.get('rowsPerVirtualPartition', '{}')}"
            + ("" if skipped == "0" else f", {skipped} already written by another query (skipped)")
            + f", late {sink.get('lateRecords', '0')}, held {sink.get('heldRecords', '0')}"
            f", watermark {sink.get('watermark', '-')} (held by source partitions"
            f" {sink.get('watermarkHeldBy', '-')}), commit {sink.get('commitMs', '-')} ms"
            f" (slowest task: sort {sink.get('taskSortMs', '-')}, send {sink.get('taskWriteMs', '-')}"
            f", flush {sink.get('taskCommitMs', '-')} ms)"
            f", batch {progress.batchDuration} ms")


def watch(query: Any, out: TextIO, timeout: float | None = None, stop: Any = None) -> None:
    """Print a progress line for every new micro-batch until the query stops (or ``timeout``,
    or ``stop()`` is true)."""
    seen = -1
    deadline = None if timeout is None else time.monotonic() + timeout
    while query.isActive and (deadline is None or time.monotonic() < deadline) and not (stop and stop()):
        query.awaitTermination(1)
        for p in recent_progress(query):
            if p.batchId > seen:
                seen = p.batchId
                print(progress_line(p), file=out, flush=True)
    for p in recent_progress(query):
        if p.batchId > seen:
            print(progress_line(p), file=out, flush=True)
    if query.exception() is not None:
        raise query.exception()


def stop_gracefully(spark: Any, query: Any, timeout: float = 300.0) -> None:
    """End ``query`` (a running streaming query into a kplex table, from kplex's source) after
    it has written every record it holds, as at the end of its input: its next micro-batch
    reads what has arrived and releases everything; once that micro-batch is committed, the
    query is stopped. A record arriving after it stays unread for the next run; none is lost.
    Needs the query's driver (a classic session, not Spark Connect).

    >>> stop_gracefully(spark, query)  # doctest: +SKIP
    """
    query_id = str(query.id)
    try:
        sinks = spark._jvm.io.kplex.spark.stream.QuerySinks.DRIVER  # noqa: SLF001 - the driver's registry
    except Exception as e:  # Spark Connect: no JVM in this process
        raise kplex_error("STOP_TIMED_OUT.NO_DRIVER", query=query_id, cause=e) from e
    sinks.askRelease(query_id)
    deadline = time.monotonic() + timeout
    while not sinks.releaseDone(query_id):
        if not query.isActive:
            if query.exception() is not None:
                raise query.exception()
            raise kplex_error("STOP_TIMED_OUT.ENDED", query=query_id)
        if time.monotonic() > deadline:
            raise kplex_error("STOP_TIMED_OUT.TIMED_OUT", query=query_id, timeout_s=f"{timeout:.0f}")
        query.awaitTermination(0.2)
    query.stop()


#: The file ``kplex stream stop --checkpoint DIR`` leaves for the ``kplex stream`` running there.
STOP_FILE = "kplex/stop-requested"


def _local_path(checkpoint: str | Path) -> Path | None:
    """The local folder ``checkpoint`` names (a path, or a ``file:`` URI), or None for another
    file system's (``hdfs://...``), which is not looked into here.

    >>> _local_path("file:///chk/a"), _local_path("/chk/a"), _local_path("hdfs://nn/chk/a")
    (PosixPath('/chk/a'), PosixPath('/chk/a'), None)
    """
    text = str(checkpoint)
    if text.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        return Path(unquote(urlsplit(text).path))
    return None if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) else Path(text)


def request_stop(checkpoint: str | Path) -> Path:
    """Ask the ``kplex stream`` running on ``checkpoint`` to stop gracefully (see :func:`stop_gracefully`).
    A directory that holds no Spark checkpoint (no ``metadata`` file, no ``offsets`` folder: a
    mistyped path, say) is refused with :class:`FileNotFoundError` naming it, nothing written there.

    >>> request_stop("/chk/typo")
    Traceback (most recent call last):
    FileNotFoundError: /chk/typo holds no Spark checkpoint (no 'metadata' file, no 'offsets' folder): ...
    """
    local = _local_path(checkpoint)
    if local is not None and not ((local / "metadata").is_file() or (local / "offsets").is_dir()):
        raise FileNotFoundError(f"{checkpoint} holds no Spark checkpoint (no 'metadata' file, no 'offsets' folder):"
                                " name the --checkpoint of the `kplex stream` to stop")
    path = Path(checkpoint) / STOP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
    return path


def run_stream_file(path: str | Path, spark: Any, checkpoint: str, *, trigger: str | None = "1 second",
                    available_now: bool = False, release_at_end: bool = False, resume: bool = False,
                    out: TextIO | None = None, timeout: float | None = None,
                    variables: Mapping[str, str] | None = None) -> Any:
    """Run the statements of the SQL file at ``path`` in order; its streaming INSERT
    becomes a streaming query, watched (a line per micro-batch on ``out``) until it stops,
    fails, or ``timeout`` seconds pass (then it is stopped). Returns the query.

    Nothing runs of a file with errors (:class:`~kplex.sqltools.errors.CheckFailed`, as
    ``kplex sql run``), without a streaming INSERT (:class:`NoStreamingInsert`), or on a Spark
    before 4.1; a statement that fails, or a query that fails, raises
    :class:`~kplex.sqltools.errors.StatementFailed` naming it and its line."""
    from kplex.session import require_spark
    from kplex.sqltools.check import check_script, require_clean
    from kplex.sqltools.errors import statement_failed
    from kplex.sqltools.run import _reason, spark_statements
    from kplex.sqltools.script import read_script

    _require_available_now(available_now, release_at_end)
    out = out or sys.stderr
    script = read_script(path, variables)
    require_clean(check_script(script))
    texts = spark_statements(script)
    # A batch job given by mistake would write its INSERTs before being refused; a Spark that
    # cannot stream SQL would run the file's CREATEs first.
    if not any(streaming_insert(text) for text in texts):
        raise NoStreamingInsert(f"{path}: no INSERT INTO kplex.<table> SELECT ... FROM STREAM(<source>) to run;"
                                " nothing was run (a batch job runs with `kplex sql run`)")
    require_spark("STREAM(...) in SQL (a streaming INSERT)", (4, 1), spark.version)
    query = None
    for statement, text in zip(script.statements, texts):
        def failed(error: BaseException, statement=statement) -> Exception:
            return statement_failed(script.path, statement.number, statement.line, statement.head, _reason(error))

        insert = streaming_insert(text)
        if insert is None:
            try:
                spark.sql(text)
            except Exception as error:  # noqa: BLE001 - named with its statement
                raise failed(error) from error
            continue
        stop_file = Path(checkpoint) / STOP_FILE
        stop_file.unlink(missing_ok=True)  # a request left from an earlier run
        try:
            query = start_stream(spark, insert, checkpoint, trigger=trigger, available_now=available_now,
                                 release_at_end=release_at_end, resume=resume)
        except Exception as error:  # noqa: BLE001 - named with its statement
            raise failed(error) from error
        print(f"kplex: streaming into {insert.table} (query {query.id}, checkpoint {checkpoint})",
              file=out, flush=True)
        try:
            watch(query, out, timeout, stop=lambda: stop_file.exists())
            if query.isActive and stop_file.exists():
                print(f"kplex: stopping query {query.id} gracefully: releasing what it holds", file=out, flush=True)
                stop_gracefully(spark, query)
                stop_file.unlink(missing_ok=True)
                watch(query, out, 0)
        except Exception as error:  # noqa: BLE001 - the query's failure, named with its statement
            raise failed(error) from error
        finally:
            if query.isActive:
                query.stop()
    return query
