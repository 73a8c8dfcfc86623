"""kplex's exceptions, and the one place that turns JVM exceptions into them.

The JVM plugin starts every message with ``[KPLEX_<CODE>]``; :func:`translate` maps
the code to a Python class, so callers can write::

    >>> from kplex.errors import NullKeyError, translated
    >>> with translated():                                         # doctest: +SKIP
    ...     spark.sql("INSERT INTO kplex.t SELECT ...")
    Traceback (most recent call last):
    NullKeyError: [KPLEX_NULL_KEY] NULL key in column `kplex_key(userid)` ...
"""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from importlib import resources
from typing import Iterator

from pyspark.errors import PySparkException

#: Every error condition of kplex (JVM and Python): ``KPLEX_<CODE>`` -> sqlState, python class, description.
CONDITIONS: dict[str, dict[str, str]] = {
    name: c for name, c in json.loads(resources.files("kplex").joinpath("error_conditions.json").read_text()).items()
    if not name.startswith("_")
}


class KplexError(PySparkException):
    """Base class of every kplex error, a :class:`pyspark.errors.PySparkException`.

    Its message is kplex's own (``[KPLEX_<CODE>] what is wrong and what to do``);
    :meth:`getCondition` is ``KPLEX_<CODE>`` and :meth:`getSqlState` its SQLSTATE, both from
    ``error_conditions.json``. Raised from the JVM, the JVM side's full text, Java trace
    included, is in ``java_trace``.

    >>> e = NullKeyError("[KPLEX_NULL_KEY] NULL key in column `k`")
    >>> e.getCondition(), e.getSqlState(), str(e)
    ('KPLEX_NULL_KEY', '22004', '[KPLEX_NULL_KEY] NULL key in column `k`')
    """

    code = "ERROR"
    #: The JVM exception's full text (with its Java stack trace), when it came from the JVM.
    java_trace: str | None = None

    def __init__(self, message: str) -> None:
        match = _CODE.match(message)
        condition = f"KPLEX_{match.group(1)}" if match else None
        text = message[match.end(1) + 1:].lstrip() if match else message
        PySparkException.__init__(self, message=text)  # the same call on every pyspark kplex runs on
        Exception.__init__(self, message)  # args (and repr) keep the whole message
        self._full = message
        self._condition = condition

    def __str__(self) -> str:
        return self._full

    def getCondition(self) -> str | None:  # noqa: N802 - pyspark's name
        return self._condition

    def getErrorClass(self) -> str | None:  # noqa: N802 - pyspark's name (3.5), without 4.x's deprecation warning
        return self._condition

    def getMessageParameters(self) -> dict[str, str]:  # noqa: N802 - pyspark's name
        return dict(getattr(self, "_parameters", {}))

    def getMessage(self) -> str:  # noqa: N802 - pyspark's name
        return self._full

    def getSqlState(self) -> str | None:  # noqa: N802 - pyspark's name
        condition = CONDITIONS.get(self._condition or "")
        return condition["sqlState"] if condition else None


class NullKeyError(KplexError):
    code = "NULL_KEY"


class NullOrderError(KplexError):
    code = "NULL_ORDER"


class OrderTypeError(KplexError):
    code = "ORDER_TYPE"


class ColumnError(KplexError):
    """The written data lacks, repeats or mistypes a key, order, value or headers column."""

    code = "COLUMN"


class OptionError(KplexError):
    """A table property or write option is missing, unknown or has a wrong value."""

    code = "OPTION"


class UnknownTableError(KplexError):
    """The topic or table does not exist."""

    code = "UNKNOWN_TOPIC"


class NotAKplexTableError(KplexError):
    code = "NOT_A_KPLEX_TABLE"


class PartitionMismatchError(KplexError):
    code = "PARTITION_MISMATCH"


class BrokerUnreachableError(KplexError):
    code = "UNREACHABLE"


class WriteFailedError(KplexError):
    """Records could not be written or committed."""

    code = "WRITE_FAILED"


class TableBusyError(KplexError):
    """Another writer holds the table, or took it over from this write."""

    code = "TABLE_BUSY"


class ResumeFromTableError(KplexError):
    """A stream cannot resume from the table as asked (``startingOffsets = 'table'``)."""

    code = "RESUME_FROM_TABLE"


class QuerySupersededError(KplexError):
    """Another query resumed from this query's last epoch on the table: this one must not write again."""

    code = "QUERY_SUPERSEDED"


class NotAuthorizedError(KplexError):
    """The principal lacks an ACL the operation needs (the message names the resource)."""

    code = "NOT_AUTHORIZED"


class NotAuthenticatedError(KplexError):
    """The broker refused the client's credentials."""

    code = "NOT_AUTHENTICATED"


class LateRecordError(KplexError):
    """A record later than kplex.max_delay_ms, under late_policy = fail."""

    code = "LATE_RECORD"


class DataLossError(KplexError):
    """Source offsets were removed, or went back, before a stream read them."""

    code = "DATA_LOSS"


class ExpressionError(KplexError):
    """A table's key or order expression, or a kplex_json pointer, is invalid."""

    code = "BAD_EXPRESSION"


class ConfluentFramingError(KplexError):
    """A value given to kplex_confluent_payload / kplex_confluent_schema_id is not in the
    Confluent wire format (magic byte 0, a 4-byte schema id, for Protobuf message indexes)."""

    code = "NOT_CONFLUENT_FRAMED"


class DefinitionError(KplexError):
    """A table definition this kplex cannot read."""

    code = "DEFINITION_FORMAT"


class StateError(KplexError):
    """kplex's metadata, a checkpoint or held-back records cannot be read or written."""

    code = "STATE"


class ReadStalledError(KplexError):
    """Reading a partition made no progress."""

    code = "READ_STALLED"


class KafkaFailureError(KplexError):
    """Kafka failed in a way kplex does not classify, or its client lacks what kplex needs."""

    code = "KAFKA"


class UnsupportedError(KplexError):
    """An operation kplex does not support (here, or on this Spark)."""

    code = "UNSUPPORTED"


class ReadOnlyTableError(KplexError):
    """A write into a read-time table (it has no topic of its own)."""

    code = "READ_ONLY"


# Code -> class, from error_conditions.json: the classes above are the only ones it may name.
_BY_CODE: dict[str, type[KplexError]] = {
    name[len("KPLEX_"):]: globals()[c["python"]] for name, c in CONDITIONS.items()
}

def kplex_error(code: str, message: str, **parameters: object) -> KplexError:
    """The error of condition ``KPLEX_<code>``: the class ``error_conditions.json`` names for
    it, its message ``[KPLEX_<code>] message``, and its named parameters (what
    :meth:`KplexError.getMessageParameters` returns: the option, topic, table... it names).
    Every error kplex's Python side raises is made here, so no prefix is typed by hand.

    >>> e = kplex_error("BAD_OPTION", "'acks' = 'x' is invalid.", option="acks")
    >>> type(e).__name__, str(e), e.getMessageParameters()
    ('OptionError', "[KPLEX_BAD_OPTION] 'acks' = 'x' is invalid.", {'option': 'acks'})
    """
    error = _BY_CODE[code](f"[KPLEX_{code}] {message}")
    error._parameters = {name: str(value) for name, value in parameters.items()}
    return error


# [KPLEX_<CODE>] and the rest of its line (a client that prints the condition again before
# the message, as Spark Connect may, repeats the prefix: read once).
_CODE = re.compile(r"\[KPLEX_([A-Z_]+)\]\s*(?:\[KPLEX_\1\]\s*)?([^\n]*)")
_SPARK_NOT_FOUND = re.compile(r"\[TABLE_OR_VIEW_NOT_FOUND\][^\n]*")


def translate(exc: BaseException) -> BaseException:
    """The kplex exception that ``exc`` (a pyspark or Py4J error) carries, else ``exc``.

    >>> translate(RuntimeError("[KPLEX_NULL_KEY] NULL key in column `k`"))
    NullKeyError('[KPLEX_NULL_KEY] NULL key in column `k`')
    """
    text = str(exc)
    match = _CODE.search(text)
    if match:
        cls = _BY_CODE.get(match.group(1), KplexError)
        error = cls(f"[KPLEX_{match.group(1)}] {match.group(2)}")
        error.__cause__ = exc
        return error
    match = _SPARK_NOT_FOUND.search(text)
    if match:
        error = UnknownTableError(match.group(0))
        error.__cause__ = exc
        return error
    return exc


def _kplex_error_of(converted: BaseException, java_trace: str | None = None) -> BaseException:
    """``converted`` (pyspark's own exception for a JVM error) as a kplex error, when it is one."""
    if isinstance(converted, KplexError):
        return converted
    mapped = translate(converted)
    if isinstance(mapped, KplexError):
        mapped.__cause__ = None
        mapped.java_trace = java_trace if java_trace is not None else str(converted)
        mapped._parameters = _jvm_parameters(converted, mapped.getCondition())
    return mapped


def _jvm_parameters(converted: BaseException, condition: str | None) -> dict[str, str]:
    """The JVM error's message parameters (its culprits by name): those of pyspark's exception
    when it is the kplex error itself (classic, or Spark Connect's error details), else, in
    classic, those of the kplex error among its Java causes (a stream's or a job's error wraps
    it); none otherwise (Spark Connect gives only the outer error's).

    >>> class Converted(Exception):
    ...     def getCondition(self): return "KPLEX_UNKNOWN_TOPIC"
    ...     def getMessageParameters(self): return {"topic": "t"}
    >>> _jvm_parameters(Converted(), "KPLEX_UNKNOWN_TOPIC"), _jvm_parameters(Converted(), "KPLEX_NULL_KEY")
    ({'topic': 't'}, {})
    """
    try:
        own = getattr(converted, "getCondition", None) or getattr(converted, "getErrorClass", None)
        if own is not None and own() == condition:
            return {str(k): str(v) for k, v in (converted.getMessageParameters() or {}).items()}
        # Classic: a stream's or a job's error wraps kplex's; its Java causes are at hand.
        cause = getattr(converted, "_origin", None)
        for _ in range(16):
            if cause is None:
                break
            if cause.getClass().getName() == "io.kplex.spark.errors.KplexException" \
                    and f"KPLEX_{cause.code()}" == condition:
                return {str(k): str(v) for k, v in cause.getMessageParameters().items()}
            cause = cause.getCause()
        return {}
    except Exception:  # noqa: BLE001 - the parameters are a courtesy; the message names the culprit too
        return {}


def _classic_java_trace(java_exception: object) -> str | None:
    try:
        from pyspark import SparkContext

        jvm = SparkContext._jvm  # noqa: SLF001 - py4j gateway
        return None if jvm is None else str(jvm.org.apache.spark.util.Utils.exceptionString(java_exception))
    except Exception:  # noqa: BLE001 - the trace is a courtesy
        return None


_INSTALLED = False


def install_exception_conversion() -> None:
    """Makes pyspark raise kplex's JVM errors as :mod:`kplex.errors` exceptions, in classic
    and Spark Connect sessions, as delta-spark does for its own: no ``translated()`` needed.

    Importing :mod:`kplex` calls it. pyspark turns every JVM (or Connect server) error
    into a Python exception through one function per kind of session; kplex wraps each,
    so that an error whose text carries ``[KPLEX_<CODE>]`` (also inside a failed task's
    error) becomes the matching class here, its message kplex's, the rest in
    ``java_trace``. Anything else passes through unchanged.

    >>> import kplex                                   # doctest: +SKIP
    >>> spark.sql("INSERT INTO kplex.t SELECT ...")    # doctest: +SKIP
    Traceback (most recent call last):
    kplex.errors.NullKeyError: [KPLEX_NULL_KEY] NULL key in column `kplex_key(userid)` ...
    """
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:
        return
    classic = captured.convert_exception

    def convert_classic(e: object) -> BaseException:
        converted = classic(e)
        return _kplex_error_of(converted, _classic_java_trace(e) if "[KPLEX_" in str(converted) else None)

    captured.convert_exception = convert_classic
    try:  # Spark Connect's client needs grpc and pandas: patch it where it is installed
        from pyspark.errors.exceptions import connect
        from pyspark.sql.connect.client import core
    except ImportError:
        return
    remote = connect.convert_exception

    def convert_remote(*args: object, **kwargs: object) -> BaseException:
        return _kplex_error_of(remote(*args, **kwargs))

    connect.convert_exception = convert_remote
    core.convert_exception = convert_remote  # bound by name when core was imported


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise errors from Spark and the JVM as kplex exceptions where they are ours."""
    try:
        yield
    except KplexError:
        raise
    except Exception as exc:  # noqa: BLE001 - translate decides
        mapped = translate(exc)
        if mapped is exc:
            raise
        raise mapped from exc
