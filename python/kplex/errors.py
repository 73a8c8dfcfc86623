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

import re
from contextlib import contextmanager
from typing import Iterator


class KplexError(Exception):
    """Base class of every kplex error."""

    code = "ERROR"


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


class LateRecordError(KplexError):
    """A record of a read-time table came later than its ``kplex.max_delay_ms`` allows."""

    code = "LATE_RECORD"


class ExpressionError(KplexError):
    """A key or order expression that cannot be evaluated: a read-time table's, or a malformed JSON pointer."""

    code = "BAD_EXPRESSION"


class ReadOnlyTableError(KplexError):
    """A write into a read-time table (it has no topic of its own)."""

    code = "READ_ONLY"


_BY_CODE: dict[str, type[KplexError]] = {
    "NULL_KEY": NullKeyError,
    "NULL_ORDER": NullOrderError,
    "ORDER_TYPE": OrderTypeError,
    "MISSING_COLUMN": ColumnError,
    "AMBIGUOUS_COLUMN": ColumnError,
    "UNEXPECTED_COLUMN": ColumnError,
    "COLUMN_TYPE": ColumnError,
    "BAD_OPTION": OptionError,
    "MISSING_OPTION": OptionError,
    "UNKNOWN_PROPERTY": OptionError,
    "NO_BOOTSTRAP": OptionError,
    "NAMESPACE": OptionError,
    "UNKNOWN_TOPIC": UnknownTableError,
    "NOT_A_KPLEX_TABLE": NotAKplexTableError,
    "PARTITION_MISMATCH": PartitionMismatchError,
    "UNREACHABLE": BrokerUnreachableError,
    "SEND_FAILED": WriteFailedError,
    "COMMIT_FAILED": WriteFailedError,
    "LATE_RECORD": LateRecordError,
    "BAD_EXPRESSION": ExpressionError,
    "JSON_POINTER": ExpressionError,
    "READ_ONLY": ReadOnlyTableError,
    "BAD_VIRTUAL_TABLE": OptionError,
}

_CODE = re.compile(r"\[KPLEX_([A-Z_]+)\]\s*([^\n]*)")
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
