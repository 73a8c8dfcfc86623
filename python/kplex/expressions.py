"""Key and order expressions of read-time tables, evaluated without Spark.

A read-time table (``'kplex.source' = ...``) stores its key and order as Spark SQL
expressions over the source record's columns; Spark evaluates them when it reads
the table. So that a consumer outside Spark gets the very same virtual partitions,
this module evaluates the subset of Spark SQL that such definitions use, with
Spark's results for it:

=======================================  ==========================================
expression                               result
=======================================  ==========================================
``key``, ``value``                       BINARY: the record's key and value bytes
``topic``, ``partition``, ``offset``     STRING, INT, BIGINT
``timestamp``                            TIMESTAMP: the record's Kafka timestamp
``'text'``, ``"text"``, ``42``, NULL     literals
``CAST(x AS STRING)``                    UTF-8 text of BINARY (bytes that are not
                                         UTF-8 kept as they are, as Spark keeps
                                         them), decimal text of numbers
``CAST(x AS BIGINT | INT)``              integer from STRING (surrounding blanks
                                         allowed; anything else is an error, as with
                                         Spark's ANSI mode), seconds of a TIMESTAMP
``CAST(x AS TIMESTAMP)``                 from BIGINT/INT seconds
``get_json_object(s, '$.a.b[0]')``      Spark's JSON path subset: ``.name``,
                                         ``['name']``, ``[index]``; a string comes
                                         back unquoted, an integer in decimal, an
                                         object or array as compact JSON; NULL if
                                         the path is missing or the text is not JSON;
                                         a fractional number as Java's
                                         ``Double.toString`` prints it (``1.0E10``),
                                         one beyond a double as ``"Infinity"``.
``coalesce(a, b, ...)``, ``lower(s)``,   as in Spark
``upper(s)``, ``concat(s, ...)``
=======================================  ==========================================

Anything else is refused when the table is opened (:class:`ExpressionError`),
naming what is missing, so a consumer never computes a different partition than
Spark would. Key bytes follow ``kplex_key`` (STRING as UTF-8, INT and BIGINT
big-endian, BINARY as is) and order values ``kplex_order`` (TIMESTAMP as epoch ms,
integers as they are).

>>> key = compile_key('get_json_object(CAST(value AS STRING), "$.userid")')
>>> order = compile_order("CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)")
>>> rec = SourceRecord(b"Page_62", b'{"viewtime":1565606197468,"userid":"User_6"}', "pageviews", 0, 7, 1)
>>> key(rec), order(rec)
(b'User_6', 1565606197468)
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable

import sqlglot
from sqlglot import exp

from kplex.errors import ExpressionError, kplex_error
from kplex.jsonpointer import spark_extract
from kplex.placement import jackson_string, java_double
from kplex.settings import KEY, ORDER

__all__ = ["ExpressionError", "SourceRecord", "compile_key", "compile_order", "pointer_or_expression"]

STRING, BINARY, INT, BIGINT, TIMESTAMP, NULL = "STRING", "BINARY", "INT", "BIGINT", "TIMESTAMP", "NULL"


@dataclass(frozen=True)
class SourceRecord:
    """The columns a key or order expression sees (``timestamp`` in epoch ms)."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: int | None


Eval = Callable[[SourceRecord], Any]

_COLUMNS: dict[str, tuple[str, Eval]] = {
    "key": (BINARY, lambda r: r.key),
    "value": (BINARY, lambda r: r.value),
    "topic": (STRING, lambda r: r.topic),
    "partition": (INT, lambda r: r.partition),
    "offset": (BIGINT, lambda r: r.offset),
    "timestamp": (TIMESTAMP, lambda r: r.timestamp),
}


def pointer_or_expression(text: str, cast: str | None = None) -> str:
    """A JSON pointer of the original kplex (``/userid``) as Spark SQL; other text as is.

    >>> pointer_or_expression("/viewtime", cast="BIGINT")
    "CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)"
    >>> pointer_or_expression("timestamp")
    'timestamp'
    """
    if text.startswith("/"):
        return spark_extract(text, cast=cast)
    return text


def compile_key(text: str) -> Callable[[SourceRecord], bytes | None]:
    """The canonical key bytes of ``text`` (as ``kplex_key`` makes them), or None for NULL."""
    kind, fn = _compile(text, KEY)
    if kind == STRING:
        return lambda r: None if (v := fn(r)) is None else v.encode("utf-8", errors="surrogateescape")
    if kind == BINARY:
        return fn
    if kind == INT:
        return lambda r: None if (v := fn(r)) is None else struct.pack(">i", v)
    if kind == BIGINT:
        return lambda r: None if (v := fn(r)) is None else struct.pack(">q", v)
    if kind == NULL:
        return lambda r: None
    raise _bad("KEY_TYPE", KEY, text, type=kind)


def compile_order(text: str) -> Callable[[SourceRecord], int | None]:
    """The order value of ``text`` (as ``kplex_order`` makes it), or None for NULL."""
    kind, fn = _compile(text, ORDER)
    if kind in (INT, BIGINT, TIMESTAMP, NULL):
        return fn
    raise _bad("ORDER_TYPE", ORDER, text, type=kind)


def _bad(sub_class: str, prop: str, text: str, **parameters: object) -> ExpressionError:
    """``[KPLEX_BAD_EXPRESSION]`` of ``sub_class``, naming the table property whose expression it is."""
    return kplex_error(f"BAD_EXPRESSION.{sub_class}", property=prop, expression=text, **parameters)


def _compile(text: str, prop: str) -> tuple[str, Eval]:
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError as e:
        raise _bad("NOT_SQL", prop, text, cause=e) from None
    return _Compiler(text, prop).compile(tree)


class _Compiler:
    def __init__(self, text: str, prop: str) -> None:
        self.text = text
        self.prop = prop

    def refuse(self, what: str, **parameters: object) -> ExpressionError:
        """``BAD_EXPRESSION.BEYOND_PYTHON_<what>``: a part of the expression kplex does not
        evaluate outside Spark, named by ``parameters``."""
        return _bad(f"BEYOND_PYTHON_{what}", self.prop, self.text, **parameters)

    def compile(self, node: exp.Expression) -> tuple[str, Eval]:
        if isinstance(node, exp.Paren):
            return self.compile(node.this)
        if isinstance(node, exp.Column):
            if node.table:
                raise self.refuse("QUALIFIED_COLUMN", column=node.sql("spark"))
            name = node.name.lower()
            if name not in _COLUMNS:
                raise _bad("NO_COLUMN", self.prop, self.text, column=node.name, columns=", ".join(_COLUMNS))
            return _COLUMNS[name]
        if isinstance(node, exp.Null):
            return NULL, lambda r: None
        if isinstance(node, exp.Literal):
            if node.is_string:
                value = node.this
                return STRING, lambda r: value
            number = int(node.this) if node.this.lstrip("-").isdigit() else None
            if number is None:
                raise self.refuse("LITERAL", value=node.this)
            kind = INT if -(2**31) <= number < 2**31 else BIGINT
            return kind, lambda r: number
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, exp.JSONExtractScalar):
            return self.json_object(node)
        if isinstance(node, exp.Coalesce):
            parts = [self.compile(a) for a in [node.this, *node.expressions]]
            kinds = {k for k, _ in parts if k != NULL}
            if len(kinds) > 1:
                raise self.refuse("COALESCE", types=sorted(kinds))
            fns = [f for _, f in parts]
            return (kinds.pop() if kinds else NULL), lambda r: next(
                (v for v in (f(r) for f in fns) if v is not None), None)
        if isinstance(node, (exp.Lower, exp.Upper)):
            kind, fn = self.compile(node.this)
            if kind not in (STRING, NULL):
                raise self.refuse("LOWER_UPPER", function=node.key, type=kind)
            op = str.lower if isinstance(node, exp.Lower) else str.upper
            return STRING, lambda r: None if (v := fn(r)) is None else op(_decoded(v))
        if isinstance(node, exp.Concat):
            parts = [self.as_string(*self.compile(a)) for a in node.expressions]
            return STRING, lambda r: _concat([f(r) for f in parts])
        raise self.refuse("EXPRESSION", part=node.sql("spark"))

    def as_string(self, kind: str, fn: Eval) -> Eval:
        if kind in (STRING, NULL):
            return fn
        if kind == BINARY:
            return lambda r: None if (v := fn(r)) is None else v.decode("utf-8", errors="surrogateescape")
        if kind in (INT, BIGINT):
            return lambda r: None if (v := fn(r)) is None else str(v)
        raise self.refuse("AS_TEXT", type=kind)

    def cast(self, node: exp.Cast) -> tuple[str, Eval]:
        kind, fn = self.compile(node.this)
        to = node.to.this
        if to in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR):
            return STRING, self.as_string(kind, fn)
        if to == exp.DataType.Type.BINARY:
            if kind in (BINARY, NULL):
                return BINARY, fn
            if kind == STRING:
                return BINARY, lambda r: None if (v := fn(r)) is None else v.encode("utf-8", errors="surrogateescape")
        if to in (exp.DataType.Type.BIGINT, exp.DataType.Type.INT):
            target = BIGINT if to == exp.DataType.Type.BIGINT else INT
            if kind in (INT, BIGINT, NULL):
                return target, fn
            if kind == STRING:
                return target, lambda r: None if (v := fn(r)) is None else self.parse_int(v, target)
            if kind == TIMESTAMP:
                return target, lambda r: None if (v := fn(r)) is None else v // 1000
        if to in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
            if kind in (TIMESTAMP, NULL):
                return TIMESTAMP, fn
            if kind in (INT, BIGINT):
                return TIMESTAMP, lambda r: None if (v := fn(r)) is None else v * 1000
        raise self.refuse("CAST", type=kind, target_type=node.to.sql("spark"))

    def parse_int(self, text: str, target: str) -> int:
        # As Spark's cast under ANSI: ASCII digits after an optional sign, between characters
        # up to the space, which are trimmed (no `_`, no other digits, no other spaces).
        stripped = text.strip("".join(chr(c) for c in range(33)))
        if not _INTEGER.fullmatch(stripped):
            raise _bad("CAST_FAILS", self.prop, self.text, value=text, type=target)
        number = int(stripped, 10)
        bits = 63 if target == BIGINT else 31
        if not -(2**bits) <= number < 2**bits:
            raise _bad("OVERFLOW", self.prop, self.text, value=text, type=target)
        return number

    def json_object(self, node: exp.JSONExtractScalar) -> tuple[str, Eval]:
        kind, fn = self.compile(node.this)
        text_of = self.as_string(kind, fn)
        path = node.expression
        if not isinstance(path, exp.JSONPath):
            raise self.refuse("JSON_PATH")
        steps: list[str | int] = []
        for part in path.expressions:
            if isinstance(part, exp.JSONPathRoot):
                continue
            if isinstance(part, exp.JSONPathKey) and isinstance(part.this, str):
                steps.append(part.this)
            elif isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int):
                steps.append(part.this)
            else:
                raise self.refuse("JSON_PATH_STEP", step=part.sql("spark"))

        def extract(r: SourceRecord) -> str | None:
            text = text_of(r)
            return None if text is None else get_json_object(_decoded(text), steps)

        return STRING, extract


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _decoded(text: str) -> str:
    """``text`` as Spark decodes a string's bytes for its string functions and JSON reading:
    bytes that are not UTF-8 (held as ``surrogateescape`` code points) each maximal bad
    sequence as U+FFFD, as Java's decoder does.

    >>> _decoded(b"\\xe2\\x82AB\\xff".decode("utf-8", errors="surrogateescape"))
    '\ufffdAB\ufffd'
    """
    if text.isascii():
        return text
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _concat(values: list[str | None]) -> str | None:
    return None if any(v is None for v in values) else "".join(values)  # type: ignore[arg-type]


class _Number(str):
    """A JSON number as Spark's get_json_object prints it: an integer canonical, any other as
    Java's ``Double.toString`` writes the double it reads as (``1.0E10``, ``1.5``), and one
    beyond a double's range as Jackson writes an infinite double, a quoted ``"Infinity"``."""

    def __new__(cls, text: str) -> _Number:
        try:
            return super().__new__(cls, str(int(text)))
        except ValueError:
            number = float(text)
            if math.isinf(number):
                return super().__new__(cls, '"Infinity"' if number > 0 else '"-Infinity"')
            return super().__new__(cls, java_double(number))


_NOT_JSON = object()


class _Members(dict):
    """An object's members, the first of equal names as the dict's value; ``every``: each
    name's values in the document's order (Spark's path goes on with the next one while a
    path through the earlier ones gives no value); ``pairs``: every member as written."""

    every: dict[str, list[Any]]
    pairs: list[tuple[str, Any]]


def _members(pairs: list[tuple[str, Any]]) -> _Members:
    out = _Members()
    out.every = {}
    out.pairs = pairs
    for name, value in pairs:
        out.setdefault(name, value)
        out.every.setdefault(name, []).append(value)
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Jackson, as Spark sets it, reads no NaN or Infinity


_LENIENT = json.JSONDecoder(strict=False, parse_int=_Number, parse_float=_Number, object_pairs_hook=_members,
                            parse_constant=_no_constant)


def _walk(node: Any, steps: list[str | int]) -> Any:
    """The value at ``steps`` below ``node``, or None: through equal member names, the first
    that gives a value."""
    if not steps:
        return node
    step, rest = steps[0], steps[1:]
    if isinstance(step, int):
        if not isinstance(node, list) or not 0 <= step < len(node):
            return None
        return _walk(node[step], rest)
    if not isinstance(node, _Members):
        return None
    for candidate in node.every.get(step, []):
        found = _walk(candidate, rest)
        if found is not None:
            return found
    return None


def _double_quoted(text: str) -> str:
    """``text`` with its single-quoted strings written double-quoted (Jackson's
    ALLOW_SINGLE_QUOTES, which Spark's get_json_object turns on), double-quoted ones as they are.

    >>> _double_quoted('{' + "'a': 'b'}")
    '{"a": "b"}'
    """
    out, i, quote = [], 0, None
    while i < len(text):
        c = text[i]
        if quote is None:
            if c in "'\"":
                quote = c
                out.append('"')
            else:
                out.append(c)
        elif c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("'" if nxt == "'" else c + nxt)  # Jackson takes \' in either kind of string
            i += 1
        elif c == quote:
            quote = None
            out.append('"')
        else:
            out.append('\\"' if c == '"' else c)
        i += 1
    return "".join(out)


def _json_document(text: str) -> Any:
    """The first JSON document of ``text`` as Spark's get_json_object reads it (Jackson with
    ALLOW_UNESCAPED_CONTROL_CHARS and ALLOW_SINGLE_QUOTES): raw control characters inside
    strings, single-quoted strings, every value of equal member names (:class:`_Members`), and
    whatever follows the document left unread; ``_NOT_JSON`` if there is no such document.

    >>> _json_document('  {"a": 1, "a": 2} tail')
    {'a': '1'}
    """
    stripped = text.lstrip(" \t\r\n")
    for attempt in (stripped, _double_quoted(stripped) if "'" in stripped else None):
        if attempt is None:
            continue
        try:
            return _LENIENT.raw_decode(attempt)[0]
        except ValueError:
            pass
    return _NOT_JSON


def get_json_object(text: str, steps: list[str | int]) -> str | None:
    """Spark's ``get_json_object`` for a path of member names and array indices.

    >>> get_json_object('{"a": {"b": [1, {"c": "x"}]}, "n": 1.50}', ["a", "b", 1])
    '{"c":"x"}'
    >>> get_json_object('{"n": 1.50}', ["n"]), get_json_object('{"n": null}', ["n"])
    ('1.5', None)
    """
    document = _json_document(text)
    if document is _NOT_JSON:
        return None
    node = _walk(document, steps)
    if node is None:
        return None
    if isinstance(node, _Number):
        return str(node)
    if isinstance(node, str):
        return node
    if isinstance(node, bool):
        return "true" if node else "false"
    return _compact(node)


def _compact(node: Any) -> str:
    """An object or array as Spark's get_json_object prints it (Jackson copying it to UTF-8):
    every member as written, strings escaped as Jackson escapes them."""
    if isinstance(node, _Number):
        return str(node)
    if isinstance(node, _Members):
        return "{" + ",".join(jackson_string(k) + ":" + _compact(v) for k, v in node.pairs) + "}"
    if isinstance(node, list):
        return "[" + ",".join(_compact(v) for v in node) + "]"
    if isinstance(node, str):
        return jackson_string(node)
    return json.dumps(node)
