"""JSON pointers (RFC 6901), as original kplex jobs and ``kplex read --order /viewtime``
name keys and orders, turned into Spark SQL extractions.

:func:`segments` parses a pointer (the same rules as ``kplex_json``'s on the JVM);
:func:`json_path` and :func:`spark_extract` turn it into Spark SQL, which
:mod:`kplex.expressions` evaluates outside Spark and ``kplex translate`` writes out.

An original job points into a JSON record value with a pointer such as
``/userid``; the Spark SQL equivalent is ``get_json_object`` with a JSON path
over the value read as a string. Segment by segment, after unescaping ``~1``
to ``/`` and ``~0`` to ``~``:

- a plain name (letters, digits, ``_``; not starting with a digit):
  ``userid`` → ``.userid``
- digits without a leading zero: an array index, ``3`` → ``[3]``. A JSON path
  cannot say "index of an array or member of an object" as a pointer does;
  array indices are by far the common case, so a member named "3" is not
  reached.
- anything else: bracket notation, which keeps dots and spaces literal:
  ``weird.key`` → ``['weird.key']``, ``01`` → ``['01']`` (a leading zero is
  not an array index in RFC 6901)

Segments Spark's JSON path cannot express are errors: ``-`` (past the end of
an array), an empty name, or a name containing ``'`` (bracket notation has no
escape for it).

>>> json_path("/userid")
'$.userid'
>>> json_path("/a~1b/c.d/0/~0x")
"$['a/b']['c.d'][0]['~x']"
>>> spark_extract("/viewtime", cast="BIGINT")
"CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)"
"""

from __future__ import annotations

import re

from sqlglot import exp

__all__ = ["PointerError", "json_path", "spark_extract", "segments"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX = re.compile(r"0|[1-9][0-9]*")


class PointerError(ValueError):
    """A JSON pointer that is malformed or that Spark's JSON path cannot express."""


def segments(pointer: str) -> list[str]:
    """The unescaped reference tokens of ``pointer`` (``""`` → the whole document).

    >>> segments("/a~1b/~01")
    ['a/b', '~1']
    """
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    if re.search(r"~(?![01])", pointer):
        raise PointerError(f"JSON pointer {pointer!r}: '~' must be followed by 0 or 1")
    return [s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/")]


def json_path(pointer: str) -> str:
    """The Spark JSON path (``get_json_object``) of a JSON pointer."""
    path = "$"
    for segment in segments(pointer):
        if _PLAIN.fullmatch(segment):
            path += f".{segment}"
        elif _INDEX.fullmatch(segment):
            path += f"[{segment}]"
        elif segment == "-":
            raise PointerError(f"JSON pointer {pointer!r}: '-' (past the end of an array) selects nothing")
        elif segment == "" or "'" in segment:
            what = "an empty member name" if segment == "" else f"the member name {segment!r} (it contains ')"
            raise PointerError(f"JSON pointer {pointer!r}: Spark's JSON path cannot express {what}")
        else:
            path += f"['{segment}']"
    return path


def spark_extract(pointer: str, column: str = "value", cast: str | None = None) -> str:
    """Spark SQL that extracts ``pointer`` from the JSON text of ``column``
    (optionally cast); the empty pointer is the whole value.

    >>> spark_extract("")
    'CAST(value AS STRING)'
    >>> spark_extract("/a b")
    "get_json_object(CAST(value AS STRING), '$[\\\\'a b\\\\']')"
    """
    text = f"CAST({column} AS STRING)"
    if pointer != "":
        literal = exp.Literal.string(json_path(pointer)).sql("spark")
        text = f"get_json_object({text}, {literal})"
    return f"CAST({text} AS {cast})" if cast else text
