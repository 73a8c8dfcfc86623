"""kplex's settings, as data: the one Python module that reads ``kplex/options.json``, for
their names, defaults and validation (the table properties of the ``kplex`` catalog above all).

Every setting of kplex is one entry of ``kplex/options.json``, the file the JVM plugin
validates by too (its ``spec/OptionSpecs``); those that a ``CREATE TABLE kplex.<name>
TBLPROPERTIES (...)`` may carry are :data:`PROPERTIES`, and :func:`validate` checks names
and values.

>>> validate({"kplex.virtual_partitions": "9", "kplex.physical_partitions": "three"})
["'kplex.physical_partitions' must be an integer >= 1, got 'three'"]
>>> validate({"kplex.virtual_partition": "9", "kplex.physical_partitions": "3"})
["unknown table property 'kplex.virtual_partition'; did you mean 'kplex.virtual_partitions'?", "missing table property 'kplex.virtual_partitions' (required)"]
>>> OPTIONS["kplex.late_policy"].choices, OPTIONS["kplex.late_policy"].default
(('fail', 'drop', 'side_topic'), 'fail')
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Collection, Mapping

__all__ = [
    "PropertySpec",
    "OPTIONS",
    "PROPERTIES",
    "VIRTUAL_PARTITIONS",
    "PHYSICAL_PARTITIONS",
    "validate",
    "problem_of",
    "missing_required",
    "suggest",
    "parse_int",
    "default",
    "value",
    "session_key",
    "read_time_default",
]

# The names of the settings this package reads (each one options.json declares: test_options).
VIRTUAL_PARTITIONS = "kplex.virtual_partitions"
PHYSICAL_PARTITIONS = "kplex.physical_partitions"
SOURCE = "kplex.source"
TOPIC = "kplex.topic"
DELIVERY = "kplex.delivery"
KEY = "kplex.key"
ORDER = "kplex.order"
NULL_KEY = "kplex.null_key"
NULL_ORDER = "kplex.null_order"
MAX_DELAY_MS = "kplex.max_delay_ms"
LATE_POLICY = "kplex.late_policy"
LATE_TOPIC = "kplex.late_topic"
METADATA_TOPIC = "metadata_topic"
STARTING_OFFSETS = "startingOffsets"
STARTING_TABLE = "startingTable"
RELEASE_AT_END = "releaseAtEnd"


#: The longest topic name Kafka allows; with the characters below, Kafka's rule (the JVM's TopicNames).
MAX_TOPIC_NAME = 249
_TOPIC_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name_problem(topic: str) -> str | None:
    """What makes ``topic`` illegal as a Kafka topic's name, in the JVM plugin's words; None if
    it is legal. The broker's own answer ("Invalid topic") names neither the topic nor why.

    >>> topic_name_problem("pageviews_by_user") is None, topic_name_problem("bad name!")
    (True, "it contains ' ', '!'")
    """
    if not topic:
        return "it is empty"
    if topic in (".", ".."):
        return "'.' and '..' are not allowed"
    if len(topic) > MAX_TOPIC_NAME:
        return f"it is {len(topic)} characters long"
    illegal = dict.fromkeys(c for c in topic if c not in _TOPIC_CHARACTERS)
    return "it contains " + ", ".join(f"'{c}'" for c in illegal) if illegal else None


@dataclass(frozen=True)
class PropertySpec:
    """What one setting accepts, as ``options.json`` declares it: an integer from ``minimum``
    up to ``maximum`` (``also`` allowed besides), one of ``choices``, or free text (neither);
    its ``default`` and where it may be set (``set_as``: table, write, read, catalog, session, server)."""

    name: str
    minimum: int | None = None
    also: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False

    maximum: int | None = None
    #: 64 for a Java long (milliseconds), else a Java int.
    bits: int = 32
    kind: str = "text"
    default: str | None = None
    set_as: tuple[str, ...] = ()
    #: The session setting of a read option a stream in SQL takes from the session, or None.
    session_key: str | None = None
    #: What a read-time table stores when the property is not given, or None.
    read_time_default: str | None = None
    #: Values with a meaning of their own, by what they mean (startingOffsets' ``resume_from_table``).
    special_values: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> PropertySpec:
        """The spec of one ``options.json`` entry.

        >>> PropertySpec.from_json({"name": "kplex.x", "type": "long", "min": 0, "set_as": ["table"]}).bits
        64
        """
        return cls(entry["name"], minimum=entry.get("min"), also=entry.get("also"),
                   choices=tuple(entry.get("choices", ())), required=entry.get("required", False),
                   maximum=entry.get("max"), bits=64 if entry["type"] == "long" else 32, kind=entry["type"],
                   default=entry.get("default"), set_as=tuple(entry["set_as"]),
                   session_key=entry.get("session_key"), read_time_default=entry.get("read_time_default"),
                   special_values=dict(entry.get("special_values", {})))

    def problem(self, value: str) -> str | None:
        """Why ``value`` is wrong for this property, or None when it is right
        (choices, and true or false, compare case-insensitively, as the catalog does)."""
        if self.minimum is not None:
            number = parse_int(value, self.bits)
            too_big = number is not None and self.maximum is not None and number > self.maximum
            if number is None or too_big or (number < self.minimum and number != self.also):
                extra = f" (or {self.also})" if self.also is not None else ""
                upto = f" and <= {self.maximum}" if self.maximum is not None else ""
                return f"'{self.name}' must be an integer >= {self.minimum}{upto}{extra}, got '{value}'"
        elif self.choices and value.strip().lower() not in self.choices:
            options = ", ".join(f"'{c}'" for c in self.choices)
            return f"'{self.name}' must be one of {options}, got '{value}'"
        elif self.kind == "boolean" and value.strip().lower() not in ("true", "false"):
            return f"'{self.name}' must be true or false, got '{value}'"
        elif self.kind == "topic" and topic_name_problem(value):
            return f"'{self.name}' = '{value}' cannot name a Kafka topic: {topic_name_problem(value)}"
        return None


#: Every setting of kplex, by name, in ``options.json``'s order (table properties first).
OPTIONS: dict[str, PropertySpec] = {
    entry["name"]: PropertySpec.from_json(entry)
    for entry in json.loads(resources.files("kplex").joinpath("options.json").read_text())["options"]
}

#: The value of :data:`STARTING_OFFSETS` that resumes where the table's last stream stopped
#: (options.json declares it; the JVM's ReadBounds.FROM_TABLE reads it too).
RESUME_FROM_TABLE: str = OPTIONS[STARTING_OFFSETS].special_values["resume_from_table"]

#: The settings a table may carry (TBLPROPERTIES), in the order the catalog names them.
PROPERTIES: dict[str, PropertySpec] = {name: spec for name, spec in OPTIONS.items() if "table" in spec.set_as}

#: Properties a derived topic (no ``kplex.source``) cannot do without.
REQUIRED = tuple(name for name, spec in PROPERTIES.items() if spec.required)


def default(name: str) -> str | None:
    """The default of setting ``name``, as ``options.json`` declares it (None: it has none).

    >>> default("kplex.max_delay_ms"), default("kplex.late_policy"), default("metadata_topic")
    ('0', 'fail', '_kplex_tables')
    """
    return OPTIONS[name].default


def value(properties: Mapping[str, str], name: str) -> str | None:
    """Setting ``name`` as ``properties`` give it, else its declared default.

    >>> value({"kplex.late_policy": "drop"}, LATE_POLICY), value({}, LATE_POLICY), value({}, LATE_TOPIC)
    ('drop', 'fail', None)
    """
    given = properties.get(name)
    return given if given is not None else default(name)


def session_key(name: str) -> str:
    """The session setting that sets read option ``name`` for a stream in SQL (which takes no
    read options), as ``options.json`` declares it.

    >>> session_key(RELEASE_AT_END)
    'kplex.stream.releaseAtEnd'
    """
    key = OPTIONS[name].session_key
    if key is None:
        raise KeyError(f"{name} has no session setting")
    return key


def read_time_default(name: str) -> str | None:
    """What a read-time table stores for property ``name`` when not given (None: nothing).

    >>> read_time_default(KEY), read_time_default(ORDER)
    ('key', 'timestamp')
    """
    return OPTIONS[name].read_time_default


def parse_int(value: str, bits: int = 32) -> int | None:
    """The ``bits``-bit integer ``value`` spells in decimal, or None, as the catalog reads
    numbers (Java's ``Integer.parseInt``, or ``Long.parseLong`` for 64): ``'9'`` → 9,
    ``'9.0'`` → None, ``'3000000000'`` → None (and 3000000000 with 64 bits)."""
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    number = int(text)
    return number if -2**(bits - 1) <= number < 2**(bits - 1) else None


def suggest(name: str) -> str | None:
    """The known property closest to a wrong ``name``, if any is close
    (compared without the ``kplex.`` prefix: ``kplex.colour`` resembles nothing).

    >>> suggest("kplex.virtual_partition"), suggest("physical_partitions"), suggest("kplex.colour")
    ('kplex.virtual_partitions', 'kplex.physical_partitions', None)
    """
    bare = name.lower().removeprefix("kplex.")
    candidates = [n.removeprefix("kplex.") for n in PROPERTIES]
    match = difflib.get_close_matches(bare, candidates, n=1, cutoff=0.75)
    return f"kplex.{match[0]}" if match else None


def name_problem(name: str) -> tuple[str, str] | None:
    """(severity, message) when ``name`` is not a property of a kplex table.

    The catalog rejects unknown ``kplex.*`` names and ignores all others, so
    an unknown ``kplex.*`` name, or any name close to a kplex property, is an
    error; another name is only a warning.
    """
    if name.lower() in PROPERTIES:
        return None
    if name.lower().startswith("kafka."):
        return "error", (f"table property '{name}' is a Kafka client setting: kplex does not store those with a"
                         f" table, whose definition any Kafka consumer can read. Set it on the catalog"
                         f" (spark.sql.catalog.kplex.{name}) or as a write or read option")
    guess = suggest(name)
    if guess:
        return "error", f"unknown table property '{name}'; did you mean '{guess}'?"
    if name.lower().startswith("kplex."):
        known = ", ".join(f"'{n}'" for n in PROPERTIES)
        return "error", f"unknown table property '{name}'; kplex properties are {known}"
    return "warning", f"table property '{name}' is not a kplex property: kplex ignores it"


def validate(properties: Mapping[str, str], creating: bool = True) -> list[str]:
    """Every error in a kplex table's properties, as messages (empty when fine).

    ``creating`` adds the required properties of a new table; a read-time virtual
    table (one with ``kplex.source``) requires only ``kplex.virtual_partitions``.
    """
    problems = [p[1] for p in (problem_of(n, v) for n, v in properties.items()) if p and p[0] == "error"]
    return problems + (list(missing_required(properties).values()) if creating else [])


def problem_of(name: str, value: str) -> tuple[str, str] | None:
    """(severity, message) when the property ``name`` = ``value`` is wrong, else None."""
    spec = PROPERTIES.get(name.lower())
    if spec is None:
        return name_problem(name)
    problem = spec.problem(value)
    return ("error", problem) if problem else None


#: The kplex settings a session may give as ``SET spark.<name>`` (test hooks aside, as the JVM names them).
SESSION_SETTINGS: tuple[str, ...] = tuple(
    f"spark.{name}" for name, spec in OPTIONS.items()
    if "session" in spec.set_as and name.startswith("kplex.") and not name.startswith("kplex.testing."))

#: The settings a stream in SQL takes from its session (``SET kplex.stream.<option>``).
STREAM_SETTINGS: tuple[str, ...] = tuple(sorted(spec.session_key for spec in OPTIONS.values() if spec.session_key))


def session_setting_problem(key: str, value: str | None = None) -> str | None:
    """Why ``SET key = value`` would fail the next kplex write or stream, or None (also for a
    key that is not kplex's). As the plugin checks them: ``spark.kplex.*`` in any case, the
    test hooks accepted; ``kplex.stream.*`` exactly as named, Spark's keys being case-sensitive.
    ``value`` is what Spark stores: the text after ``=``, quotes kept.

    >>> session_setting_problem("spark.kplex.nul_key", "drop")
    "unknown kplex session setting 'spark.kplex.nul_key'; did you mean 'spark.kplex.null_key'?"
    >>> session_setting_problem("kplex.stream.releaseatend", "true")
    "unknown kplex stream setting 'kplex.stream.releaseatend'; did you mean 'kplex.stream.releaseAtEnd'?"
    >>> session_setting_problem("spark.kplex.null_key", "'drop'")
    "'kplex.null_key' must be one of 'fail', 'drop', got ''drop'' (SET keeps quotes: write it without them)"
    >>> session_setting_problem("kplex.stream.releaseAtEnd", "'true'")
    "'releaseAtEnd' must be true or false, got ''true'' (SET keeps quotes: write it without them)"
    >>> session_setting_problem("spark.KPLEX.Null_Key", "drop"), session_setting_problem("spark.sql.x", "1")
    (None, None)
    """
    lower = key.lower()
    if lower.startswith("spark.kplex."):
        spec = OPTIONS.get(lower.removeprefix("spark."))
        if spec is not None and "server" in spec.set_as:
            return (f"'{key}' is read from a server's start-up configuration only (--conf {key}=...);"
                    " a SET changes nothing")
        if spec is None or "session" not in spec.set_as:
            return _unknown("session", key, SESSION_SETTINGS)
    elif lower.startswith("kplex.stream."):
        spec = next((s for s in OPTIONS.values() if s.session_key == key), None)
        if spec is None:
            return _unknown("stream", key, STREAM_SETTINGS)
    else:
        return None
    problem = spec.problem(value) if value is not None else None
    if problem and value is not None and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        if spec.problem(value[1:-1]) is None:
            problem += " (SET keeps quotes: write it without them)"
    return problem


def _unknown(kind: str, key: str, known: tuple[str, ...]) -> str:
    meant = closest(key, known)
    if meant:
        return f"unknown kplex {kind} setting '{key}'; did you mean '{meant}'?"
    return f"unknown kplex {kind} setting '{key}'; known: {', '.join(known)}"


def closest(name: str, known: Collection[str]) -> str | None:
    """The name of ``known`` nearest to a misspelt ``name``, compared without case, if at most 3
    edits away (the first of equally near ones), as the plugin suggests one
    (``TableProperties.closest``).

    >>> closest("kplex.stream.startingOffset", STREAM_SETTINGS), closest("spark.kplex.colour", SESSION_SETTINGS)
    ('kplex.stream.startingOffsets', None)
    """
    best, best_distance = None, 4
    for candidate in known:
        d = _edits(name.lower(), candidate.lower())
        if d < best_distance:
            best, best_distance = candidate, d
    return best


def _edits(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(current[j - 1] + 1, previous[j] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def missing_required(names: Collection[str]) -> dict[str, str]:
    """The required properties a new table lacks: name → message. A read-time table
    (``kplex.source``) needs V only: its P is its source's partition count."""
    lowered = {n.lower() for n in names}
    required = (VIRTUAL_PARTITIONS,) if SOURCE in lowered else REQUIRED
    return {n: f"missing table property '{n}' (required)" for n in required if n not in lowered}
