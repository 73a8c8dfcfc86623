"""Where a kplex record lands: Kafka's murmur2, virtual and physical partitions.

This is the Python twin of guarantee G4 and of "Canonical key bytes" in the
product contract: a consumer (or a test) that only has Python can compute the
virtual partition of any key exactly as the JVM writer and as a plain Kafka
producer with the default partitioner would.

>>> vp = virtual_partition(canonical_key("User_6"), 9)
>>> vp, physical_partition(vp, 3)
(8, 2)
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from decimal import Decimal
from typing import Any

__all__ = [
    "VP_HEADER",
    "ORDER_HEADER",
    "SOURCE_TOPIC_HEADER",
    "SOURCE_PARTITION_HEADER",
    "SOURCE_OFFSET_HEADER",
    "murmur2",
    "to_positive",
    "virtual_partition",
    "physical_partition",
    "canonical_key",
    "canonical_int_key",
    "canonical_bigint_key",
]

#: The headers of a kplex record that say where it landed and where it sorts (G5):
#: the virtual partition and the order value, ASCII decimal. The names of every header
#: kplex writes are pinned, with the JVM's (wire/KplexHeaders), by tests/vectors/headers.json.
VP_HEADER = "kplex.vp"
ORDER_HEADER = "kplex.order"
#: A late record sent to a side topic also carries where it came from.
SOURCE_TOPIC_HEADER = "kplex.source_topic"
SOURCE_PARTITION_HEADER = "kplex.source_partition"
SOURCE_OFFSET_HEADER = "kplex.source_offset"

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK32 = 0xFFFFFFFF


def _to_signed32(h: int) -> int:
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's 32-bit murmur2 hash, bit for bit.

    Mirrors ``org.apache.kafka.common.utils.Utils.murmur2`` (seed
    ``0x9747b28c``) and returns the same *signed* 32-bit int the Java method
    returns. The arithmetic is done on unsigned 32-bit words, which is
    equivalent to Java's wrapping ``int`` arithmetic; ``>>>`` is a plain
    right shift of the unsigned word.

    >>> murmur2(b"kafka")
    -798503068
    >>> murmur2(b"")
    275646681
    """
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    n_blocks = length // 4
    # Little-endian 32-bit blocks, like Java's (b0 & 0xff) + ((b1 & 0xff) << 8) + ...
    for k in struct.unpack_from(f"<{n_blocks}I", data):
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length & ~3
    rest = length % 4
    # Java's switch falls through: case 3, then 2, then 1.
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _to_signed32(h)


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit of a 32-bit int.

    >>> to_positive(-798503068)
    1348980580
    """
    return number & 0x7FFFFFFF


def virtual_partition(key_bytes: bytes | bytearray | memoryview, virtual_partitions: int) -> int:
    """The virtual partition of a key: ``(murmur2(key) & 0x7fffffff) % V``.

    This is Kafka's default partitioner formula, with V in place of the
    topic's partition count.

    >>> virtual_partition(b"User_6", 9)
    8
    """
    if virtual_partitions <= 0:
        raise ValueError(
            f"virtual_partitions must be a positive number, got {virtual_partitions}."
        )
    return to_positive(murmur2(key_bytes)) % virtual_partitions


def physical_partition(vp: int, physical_partitions: int) -> int:
    """The Kafka partition that holds virtual partition ``vp``: ``vp % P``.

    >>> physical_partition(8, 3)
    2
    """
    if physical_partitions <= 0:
        raise ValueError(
            f"physical_partitions must be a positive number, got {physical_partitions}."
        )
    if vp < 0:
        raise ValueError(f"a virtual partition is never negative, got {vp}.")
    return vp % physical_partitions


def canonical_int_key(value: int) -> bytes:
    """Canonical bytes of an INT key: 4-byte big-endian two's complement.

    Same bytes as Kafka's ``IntegerSerializer``.

    >>> canonical_int_key(42).hex()
    '0000002a'
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"an INT key must be an int, got {type(value).__name__}.")
    try:
        return struct.pack(">i", value)
    except struct.error:
        raise ValueError(
            f"{value} does not fit in a 32-bit INT key; use canonical_bigint_key for BIGINT."
        ) from None


def canonical_bigint_key(value: int) -> bytes:
    """Canonical bytes of a BIGINT key: 8-byte big-endian two's complement.

    Same bytes as Kafka's ``LongSerializer``.

    >>> canonical_bigint_key(-1).hex()
    'ffffffffffffffff'
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a BIGINT key must be an int, got {type(value).__name__}.")
    try:
        return struct.pack(">q", value)
    except struct.error:
        raise ValueError(f"{value} does not fit in a 64-bit BIGINT key.") from None


def canonical_key(value: Any) -> bytes:
    """Canonical key bytes of a Python value, as ``kplex_key`` makes them.

    * ``str`` -> UTF-8 (Kafka's ``StringSerializer``)
    * ``bytes``/``bytearray``/``memoryview`` -> as is
    * ``int`` -> BIGINT, 8-byte big-endian (use :func:`canonical_int_key`
      for a column that is an INT on the Spark side)
    * anything else JSON can express (``dict``, ``list``, ``bool``,
      ``float``, ...) -> compact JSON as the plugin's Jackson writes it,
      UTF-8, non-ASCII kept as is, control characters as ``\\uXXXX`` in
      upper-case hex, a character outside the Basic Multilingual Plane (an
      emoji) as its UTF-16 surrogate pair so escaped: a ``dict`` as a Spark STRUCT (its fields sorted by
      name, in UTF-16 order as Java sorts), an ``int`` or ``bool`` name by
      its JSON text, a ``float`` as Java's ``Double.toString`` writes it
      (``1.5``, ``1.2345678E7``), a ``Decimal`` as Java's ``BigDecimal`` prints
      it (give it the column's scale: ``Decimal("1.50")`` for a DECIMAL(3,2)),
      a ``date`` as ``"2024-02-29"`` and a ``datetime`` as Java's ``Instant``
      prints it (UTC; naive: a TIMESTAMP_NTZ). A SMALLINT or TINYINT column's
      key is its decimal text, ``str(v).encode()``. A Spark MAP is written differently only
      for a key that is another key followed by a space or ``!``, or that
      holds a quote, a backslash, a control character or a character
      outside the Basic Multilingual Plane (docs/contract.md).

    ``None`` is an error: the contract has no NULL key by default.

    >>> canonical_key("Usér")
    b'Us\\xc3\\xa9r'
    >>> canonical_key(42).hex()
    '000000000000002a'
    >>> canonical_key({"b": 1, "a": [True, "ü"]}).decode()
    '{"a":[true,"ü"],"b":1}'
    >>> canonical_key({10: 2.5e-05, 9: 12345678.0}).decode()
    '{"10":2.5E-5,"9":1.2345678E7}'
    """
    if value is None:
        raise ValueError("a kplex key is never null; filter or replace null keys first.")
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return canonical_bigint_key(value)
    try:
        text = _json(value)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"cannot make a kplex key of a {type(value).__name__}: {e}. "
            "Convert it to str, bytes, int, or a JSON-compatible dict/list first."
        ) from None
    return text.encode("utf-8")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def jackson_string(text: str) -> str:
    r"""A JSON string as Jackson writes it to bytes: the short escapes, other control
    characters as ``\uXXXX`` in upper-case hex, a character outside the Basic Multilingual
    Plane as its UTF-16 surrogate pair escaped so, everything else as is.

    >>> jackson_string('q"\x1f\n')
    '"q\\"\\u001F\\n"'
    >>> jackson_string("a\U0001F600")
    '"a\\uD83D\\uDE00"'
    """
    return '"' + "".join(_ESCAPES.get(c) or _escaped(c) for c in text) + '"'


def _escaped(c: str) -> str:
    if c < " ":
        return f"\\u{ord(c):04X}"
    if c > "\uffff":
        high, low = divmod(ord(c) - 0x10000, 0x400)
        return f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04X}"
    return c


def _json(value: Any) -> str:
    """Compact JSON as kplex_key writes a value that is not a STRING, INT, BIGINT or BINARY."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        return jackson_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a DECIMAL")
        return str(value)  # the scientific string of Java's BigDecimal.toString, as Jackson writes it
    if isinstance(value, dt.datetime):
        return jackson_string(_instant(value))
    if isinstance(value, dt.date):
        return jackson_string(f"{value.year:04d}-{value.month:02d}-{value.day:02d}")
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(item) for item in value) + "]"
    if isinstance(value, dict):
        fields = sorted(((_field_name(k), v) for k, v in value.items()), key=lambda f: f[0].encode("utf-16-be"))
        return "{" + ",".join(jackson_string(name) + ":" + _json(v) for name, v in fields) + "}"
    raise TypeError(f"{type(value).__name__} is not JSON")


def _instant(value: dt.datetime) -> str:
    """A TIMESTAMP (an aware ``datetime``; a naive one is a TIMESTAMP_NTZ, taken as UTC) as
    Java's ``Instant.toString`` writes it: UTC, seconds always, a fraction in groups of three
    digits only when not zero.

    >>> _instant(dt.datetime(2024, 2, 29, 13, 0, 0, 120000, tzinfo=dt.timezone(dt.timedelta(hours=1))))
    '2024-02-29T12:00:00.120Z'
    """
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc)
    micros = value.microsecond
    fraction = "" if micros == 0 else f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:"
            f"{value.second:02d}{fraction}Z")


def _field_name(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, (bool, int, float)):
        return _json(key)
    raise TypeError(f"a {type(key).__name__} cannot name a field")


def java_double(value: float) -> str:
    """A DOUBLE as Java's ``Double.toString`` writes it: the shortest digits that read back as
    the same number, positional from 10^-3 up to 10^7, else ``d.dddE<n>``.

    >>> [java_double(x) for x in (0.001, 1234567.0, 1e7, 1e-05, -0.0, 1.5e300)]
    ['0.001', '1234567.0', '1.0E7', '1.0E-5', '-0.0', '1.5E300']
    """
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{value} is not a JSON number")
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    shortest = Decimal(repr(abs(value)))
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"
