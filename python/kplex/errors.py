"""kplex's exceptions, and the one place that turns JVM exceptions into them.

Every kplex error is raised by its condition: :func:`kplex_error` renders the condition's
message template of ``error_conditions.json`` (the file the JVM plugin renders its own from,
by the same rules: :func:`render`) with the error's parameters. The JVM plugin starts every
message with ``[KPLEX_<CODE>]``; :func:`translate` maps the code to a Python class, so
callers can write::

    >>> from kplex.errors import NullKeyError, translated
    >>> with translated():                                         # doctest: +SKIP
    ...     spark.sql("INSERT INTO kplex.t SELECT ...")
    Traceback (most recent call last):
    NullKeyError: [KPLEX_NULL_KEY] NULL key in column `kplex_key(userid)` ...
"""
from __future__ import annotations

import json
import re
import sys
from contextlib import contextmanager
from importlib import import_module, resources
from typing import Iterator, Mapping

from pyspark.errors import PySparkException

#: Every error condition of kplex (JVM and Python): ``KPLEX_<CODE>`` -> sqlState, python class,
#: description, message template and sub-classes (``subClass``: name -> its message template).
CONDITIONS: dict[str, dict] = {
    name: c for name, c in json.loads(resources.files("kplex").joinpath("error_conditions.json").read_text()).items()
    if not name.startswith("_")
}


# <name>, or an escaped \< (a literal <).
_PLACEHOLDER = re.compile(r"\\<|<([a-z][a-z0-9_]*)>")


def template(condition: str) -> str | None:
    """The message template of ``condition`` (``CODE`` or ``CODE.SUB_CLASS``, with or without
    ``KPLEX_``): its lines joined with a space, a sub-class's after its condition's; None if
    it is not declared, or names no sub-class of a condition that has them.

    >>> template("NOT_A_KPLEX_TABLE.DROP")
    "'<topic>' is a plain Kafka topic; kplex only drops tables it created. Delete the topic with Kafka's tools."
    """
    main, _, sub = condition.removeprefix("KPLEX_").partition(".")
    declared = CONDITIONS.get(f"KPLEX_{main}")
    if declared is None:
        return None
    message = " ".join(declared.get("message", []))
    subclasses = declared.get("subClass", {})
    if not sub:
        return None if subclasses else message
    if sub not in subclasses:
        return None
    text = " ".join(subclasses[sub]["message"])
    return f"{message} {text}" if message else text


def render(condition: str, parameters: Mapping[str, object]) -> str:
    """``condition``'s template with ``parameters`` (None renders as ``null``), as the JVM's
    ``ErrorConditions.render`` does; a parameter the template uses and ``parameters`` lacks,
    or a condition not declared, is a bug: KeyError.

    >>> render("TABLE_BUSY", {"table": "t", "query": "q"})[:49]
    'table t is being written by another query (Spark '
    """
    text = template(condition)
    if text is None:
        raise KeyError(f"error condition {condition} is not declared in error_conditions.json"
                       " (with a sub-class where it has them)")
    return render_text(text, parameters, condition)


def render_text(text: str, parameters: Mapping[str, object], condition: str = "") -> str:
    """``text`` (a template) filled with ``parameters``, by :func:`render`'s rules."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "<"
        if name not in parameters:
            raise KeyError(f"error condition {condition} has no parameter <{name}> (given {sorted(parameters)})")
        given = parameters[name]
        return "null" if given is None else str(given)

    return _PLACEHOLDER.sub(value, text)


def template_parameters(text: str) -> list[str]:
    """The parameters ``text`` (a template) uses, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(text) if m.group(1)))


class KplexError(PySparkException):
    """Base class of every kplex error, a :class:`pyspark.errors.PySparkException`.

    Its message is kplex's own (``[KPLEX_<CODE>] what is wrong and what to do``, its
    condition's template filled with its parameters); :meth:`getCondition` is
    ``KPLEX_<CODE>`` (``KPLEX_<CODE>.<SUB_CLASS>`` for a condition with sub-classes, as
    Spark names them) and :meth:`getSqlState` its SQLSTATE, both from
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
        condition = f"KPLEX_{match.group(1)}{'.' + match.group(2) if match.group(2) else ''}" if match else None
        text = message[match.end(2 if match.group(2) else 1) + 1:].lstrip() if match else message
        PySparkException.__init__(self, message=text)  # the same call on every pyspark kplex runs on
        Exception.__init__(self, message)  # args (and repr) keep the whole message
        self._full = message
        self._text = text
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
        condition = CONDITIONS.get((self._condition or "").partition(".")[0])
        return condition["sqlState"] if condition else None

    def getMessageTemplate(self) -> str | None:  # noqa: N802 - the JVM's getDefaultMessageTemplate
        """The template its message was rendered from (None for one made from a bare text)."""
        return template(self._condition) if self._condition else None


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


class TopicInUseError(KplexError):
    """CREATE TABLE names a topic that is Kafka's or kplex's own, another table's, or written before."""

    code = "TOPIC_IN_USE"


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


class FunctionArgumentError(KplexError):
    """A kplex SQL function called with arguments it does not take."""

    code = "FUNCTION_ARGUMENT"


#: The module of the classes error_conditions.json names that are not defined here (the SQL
#: tools' errors, which import this module).
_ELSEWHERE = "kplex.sqltools.errors"


def _class_named(name: str) -> type[KplexError]:
    found = globals().get(name)
    return found if isinstance(found, type) else getattr(import_module(_ELSEWHERE), name)


class _Classes(Mapping[str, type]):
    """Code -> class, from error_conditions.json: the classes here, or of the SQL tools."""

    def __getitem__(self, code: str) -> type[KplexError]:
        return _class_named(CONDITIONS[f"KPLEX_{code}"]["python"])

    def __iter__(self) -> Iterator[str]:
        return (name[len("KPLEX_"):] for name in CONDITIONS)

    def __len__(self) -> int:
        return len(CONDITIONS)


_BY_CODE: Mapping[str, type[KplexError]] = _Classes()


def __getattr__(name: str) -> type[KplexError]:
    """A class the conditions file names that lives with the SQL tools, e.g. ``CheckFailed``."""
    if name in {c["python"] for c in CONDITIONS.values()}:
        return getattr(import_module(_ELSEWHERE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kplex_error(condition: str, /, **parameters: object) -> KplexError:
    """The error of ``KPLEX_<condition>`` (``CODE``, or ``CODE.SUB_CLASS`` for a condition with
    sub-classes): the class ``error_conditions.json`` names for it, its message
    ``[KPLEX_<CODE>]`` and the condition's template filled with ``parameters`` (:func:`render`),
    and those parameters (what :meth:`KplexError.getMessageParameters` returns, None left out).
    Every error kplex's Python side raises is made here: no text is written by hand.

    >>> e = kplex_error("BAD_OPTION.MINIMUM", option="consumers", minimum=1, value=0)
    >>> type(e).__name__, str(e), e.getCondition()
    ('OptionError', '[KPLEX_BAD_OPTION] consumers must be >= 1, got 0.', 'KPLEX_BAD_OPTION.MINIMUM')
    >>> e.getMessageParameters()
    {'option': 'consumers', 'minimum': '1', 'value': '0'}
    """
    main = condition.partition(".")[0]
    error = _BY_CODE[main](f"[KPLEX_{main}] {render(condition, parameters)}")
    error._condition = f"KPLEX_{condition}"
    error._parameters = {name: str(value) for name, value in parameters.items() if value is not None}
    return error


def kplex_error_from_jvm(condition: str | None, message: str, parameters: Mapping[str, str]) -> Exception:
    """The package's error for one the JVM reported as data (``KplexAdmin``'s command line, run
    outside Spark by :mod:`kplex.admin`): its ``KPLEX_`` ``condition``, its whole ``message`` and
    its ``parameters``, kept as the JVM had them; a ``RuntimeError`` of ``message`` for one that
    is not kplex's.

    >>> e = kplex_error_from_jvm("KPLEX_UNKNOWN_TOPIC.BROKER", "[KPLEX_UNKNOWN_TOPIC] topic 't' ...", {"topic": "t"})
    >>> type(e).__name__, e.getCondition(), e.getMessageParameters()
    ('UnknownTableError', 'KPLEX_UNKNOWN_TOPIC.BROKER', {'topic': 't'})
    """
    error = translate(RuntimeError(message))
    if not condition or not isinstance(error, KplexError):
        return RuntimeError(message)
    error.__cause__ = None
    error._condition = condition
    error._parameters = dict(parameters)
    return error


# [KPLEX_<CODE>] (or [KPLEX_<CODE>.<SUB_CLASS>], as Spark prints a sub-class) and the rest of
# its line (a client that prints the condition again before the message, as Spark Connect
# may, repeats the prefix: read once).
_CODE = re.compile(r"\[KPLEX_([A-Z_]+)(?:\.([A-Z0-9_]+))?\]\s*(?:\[KPLEX_\1(?:\.[A-Z0-9_]+)?\]\s*)?([^\n]*)")
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
        condition = match.group(1) + (f".{match.group(2)}" if match.group(2) else "")
        error = cls(f"[KPLEX_{condition}] {match.group(3)}")
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
        condition, mapped._parameters = _jvm_details(converted, mapped.getCondition())
        mapped._condition = condition
    return mapped


def _jvm_details(converted: BaseException, condition: str | None) -> tuple[str | None, dict[str, str]]:
    """The JVM error's condition (with its sub-class, which the message's prefix does not
    name) and message parameters (its culprits by name): those of pyspark's exception when it
    is the kplex error itself (classic, or Spark Connect's error details), else, in classic,
    those of the kplex error among its Java causes (a stream's or a job's error wraps it);
    ``condition`` and none otherwise (Spark Connect gives only the outer error's).

    >>> class Converted(Exception):
    ...     def getCondition(self): return "KPLEX_UNKNOWN_TOPIC.BROKER"
    ...     def getMessageParameters(self): return {"topic": "t"}
    >>> _jvm_details(Converted(), "KPLEX_UNKNOWN_TOPIC"), _jvm_details(Converted(), "KPLEX_NULL_KEY")
    (('KPLEX_UNKNOWN_TOPIC.BROKER', {'topic': 't'}), ('KPLEX_NULL_KEY', {}))
    """
    main = (condition or "").partition(".")[0]
    try:
        own = getattr(converted, "getCondition", None) or getattr(converted, "getErrorClass", None)
        named = own() if own is not None else None
        if named is not None and str(named).partition(".")[0] == main:
            return str(named), {str(k): str(v) for k, v in (converted.getMessageParameters() or {}).items()}
        # Classic: a stream's or a job's error wraps kplex's; its Java causes are at hand.
        cause = getattr(converted, "_origin", None)
        for _ in range(16):
            if cause is None:
                break
            if cause.getClass().getName() == "io.kplex.spark.errors.KplexException" \
                    and f"KPLEX_{cause.code()}" == main:
                return str(cause.getCondition()), {str(k): str(v) for k, v in cause.getMessageParameters().items()}
            cause = cause.getCause()
        return condition, {}
    except Exception:  # noqa: BLE001 - the parameters are a courtesy; the message names the culprit too
        return condition, {}


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
    try:  # Spark Connect's errors need grpc: patch them where it is installed
        from pyspark.errors.exceptions import connect
    except ImportError:
        return
    remote = connect.convert_exception

    def convert_remote(*args: object, **kwargs: object) -> BaseException:
        return _kplex_error_of(remote(*args, **kwargs))

    connect.convert_exception = convert_remote
    # Connect's client binds the function by name when it is imported: one imported later
    # binds this one; one imported already is patched here. Importing the client from here
    # would cost every `import kplex` about 0.6 s (it pulls in pandas and more), classic
    # sessions included.
    core = sys.modules.get("pyspark.sql.connect.client.core")
    if core is not None and getattr(core, "convert_exception", None) is remote:
        core.convert_exception = convert_remote


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
