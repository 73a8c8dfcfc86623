"""``kplex translate``: an original kplex job file (TOML or JSON) as kplex SQL.

What becomes what:

==============================  ===================================================
job field                       kplex SQL
==============================  ===================================================
``kafka.broker``                a ``-- kplex.bootstrap = ...`` comment, read by
                                ``kplex sql run``/``explain`` unless
                                ``--bootstrap`` or ``KPLEX_BOOTSTRAP`` say otherwise
``workers``                     ``SET spark.sql.shuffle.partitions = N`` (Spark's
                                parallelism); also the default of P (below)
``topics.<t>.max_delay_ms``,    a comment: a batch INSERT sorts each virtual
``polling_interval[_ms]``       partition over all of its input, so neither a
                                lateness bound nor polling is needed
``derive.<d>``                  ``CREATE TABLE IF NOT EXISTS kplex.<d>`` + ``INSERT``
``derive.<d>.from``             ``FROM kplex.<from>`` (default: ``<d>``)
``derive.<d>.key`` (pointer)    ``kplex_key(get_json_object(CAST(value AS STRING), path))``
``derive.<d>.timestamp`` +      ``kplex_order(CAST(get_json_object(...) AS BIGINT))``
``order = "TimeOrder"``         (epoch milliseconds); no timestamp: the record's
                                Kafka ``timestamp``
``output`` virtual partitions   ``'kplex.virtual_partitions' = count``, and
                                ``'kplex.physical_partitions'`` = P: the job has no
                                such field, so P is ``--physical-partitions`` or the
                                largest divisor of V not above ``workers`` (P divides
                                V: Kafka-compatible placement, G4)
``output = "stdout"``           one global timeline: table ``kplex.<d>`` (or
                                ``kplex.<d>_timeline`` when ``<d>`` is the source
                                topic) with V = P = 1 and a constant key, then a
                                SELECT of it in order, which ``kplex sql run``
                                prints on standard output
==============================  ===================================================

JSON pointers become Spark JSON paths as :mod:`kplex.jsonpointer`
documents. Any other field, or a value these rules cannot express, is an
error naming every such field (:class:`UntranslatableJob`).

>>> sql = translate_job({"kafka": {"broker": "k:9092"}, "derive": {"by_user": {"from": "pageviews",
...     "key": {"pointer": "/userid"}, "timestamp": "/viewtime", "order": "TimeOrder",
...     "output": {"virtual_partitions": {"count": 4}}}}}, name="job.toml")
>>> print(sql[sql.index("INSERT INTO"):])
INSERT INTO kplex.by_user
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)),
       value
FROM kplex.pageviews;
<BLANKLINE>
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import tomllib
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from kplex.jsonpointer import PointerError, spark_extract
from kplex.sqltools.errors import untranslatable_file, untranslatable_job
from kplex.sqltools.script import read_text

__all__ = ["translate_file", "translate_job", "load_job", "default_physical_partitions"]

_TOP = {"workers", "kafka", "topics", "derive"}
_KAFKA = {"broker"}
_TOPIC = {"max_delay_ms", "polling_interval_ms", "polling_interval"}
_DERIVE = {"from", "key", "timestamp", "order", "output"}
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Spark SQL's keywords, as sqlglot reads them: a table named like one is quoted.
_KEYWORDS = frozenset(k for k in Spark.Tokenizer.KEYWORDS if " " not in k)


def load_job(path: str | Path) -> dict[str, Any]:
    """Read a job file: TOML, or JSON when the name ends in ``.json``; UTF-8
    (:func:`~kplex.sqltools.script.read_text`), a table (a JSON object) at its top."""
    path = Path(path)
    text = read_text(path)
    kind = path.suffix.lstrip(".").upper() or "TOML"
    try:
        job = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise untranslatable_file(str(path), kind, error) from error
    if not isinstance(job, dict):
        raise untranslatable_file(str(path), kind, f"its top level is a JSON {_JSON_TYPES[type(job)]}, not an object")
    return job


#: What a JSON document's top level may be, by the name JSON gives it.
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def translate_file(path: str | Path, physical_partitions: int | None = None) -> str:
    """The kplex SQL of the job file at ``path``."""
    return translate_job(load_job(path), name=Path(path).name, physical_partitions=physical_partitions)


def default_physical_partitions(virtual: int, workers: int | None) -> int:
    """The largest divisor of ``virtual`` not above ``workers`` (1 without workers).

    >>> default_physical_partitions(9, 3), default_physical_partitions(9, 4), default_physical_partitions(8, 6)
    (3, 3, 4)
    """
    limit = max(1, workers or 1)
    return max(d for d in range(1, min(virtual, limit) + 1) if virtual % d == 0)


@dataclass(frozen=True)
class _Derive:
    name: str
    source: str
    key: str | None
    timestamp: str | None
    count: int | None  # None: stdout


class _Reader:
    """Walks a job, collecting every field it cannot translate."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def unknown(self, where: str, data: Mapping[str, Any], known: set[str]) -> None:
        for field in data:
            if field not in known:
                self.problems.append(f"{where}{field} (unknown field)")

    def table(self, where: str, value: Any) -> Mapping[str, Any]:
        if isinstance(value, Mapping):
            return value
        self.problems.append(f"{where} = {value!r} (expected a table)")
        return {}

    def integer(self, where: str, value: Any, minimum: int) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        self.problems.append(f"{where} = {value!r} (expected an integer >= {minimum})")
        return None

    def pointer(self, where: str, value: Any) -> str | None:
        if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in ("Pointer", "pointer"):
            value = next(iter(value.values()))
        if not isinstance(value, str):
            example = '{ pointer = "/userid" }'
            self.problems.append(f"{where} = {value!r} (only JSON pointers translate, e.g. {example})")
            return None
        try:
            spark_extract(value)
        except PointerError as error:
            self.problems.append(f"{where}: {error}")
            return None
        return value

    def output(self, where: str, value: Any) -> tuple[bool, int | None]:
        """(understood, count): count None means stdout."""
        if isinstance(value, str) and value.lower() == "stdout":
            return True, None
        kind = next(iter(value)) if isinstance(value, Mapping) and len(value) == 1 else None
        if kind not in ("VirtualPartitions", "virtual_partitions"):
            self.problems.append(f"{where} = {value!r} (only virtual partitions or stdout translate)")
            return False, None
        where = f"{where}.{kind}"
        inner = self.table(where, value[kind])
        self.unknown(f"{where}.", inner, {"count"})
        if "count" not in inner:
            self.problems.append(f"{where}.count (missing)")
            return False, None
        count = self.integer(f"{where}.count", inner["count"], 1)
        return count is not None, count


def translate_job(job: Mapping[str, Any], name: str = "job", physical_partitions: int | None = None) -> str:
    """The kplex SQL of a parsed job (``name`` only appears in comments and errors)."""
    r = _Reader()
    r.unknown("", job, _TOP)
    workers = r.integer("workers", job["workers"], 1) if "workers" in job else None
    kafka = r.table("kafka", job.get("kafka", {}))
    r.unknown("kafka.", kafka, _KAFKA)
    broker = kafka.get("broker")
    if broker is not None and not isinstance(broker, str):
        r.problems.append(f"kafka.broker = {broker!r} (expected a string)")
        broker = None
    topics = _topics(r, r.table("topics", job.get("topics", {})))
    derive = r.table("derive", job.get("derive", {}))
    derives = [_derive(r, d, r.table(f"derive.{d}", spec)) for d, spec in derive.items()]
    if not derives and not r.problems:
        r.problems.append("derive (missing: nothing to translate)")
    if physical_partitions is not None and physical_partitions < 1:
        r.problems.append(f"--physical-partitions = {physical_partitions} (expected an integer >= 1)")
    if r.problems:
        raise untranslatable_job(name, r.problems)
    parts = [_header(name, broker, workers), *topics]
    for d in derives:
        assert d is not None
        parts.append(_derive_sql(d, workers, physical_partitions))
    return "\n\n".join(parts) + "\n"


def _topics(r: _Reader, topics: Mapping[str, Any]) -> list[str]:
    comments = []
    for topic, spec in topics.items():
        spec = r.table(f"topics.{topic}", spec)
        r.unknown(f"topics.{topic}.", spec, _TOPIC)
        said = []
        if "max_delay_ms" in spec:
            delay = r.integer(f"topics.{topic}.max_delay_ms", spec["max_delay_ms"], 0)
            said.append(f"max_delay_ms = {delay}")
        if "polling_interval_ms" in spec:
            every = r.integer(f"topics.{topic}.polling_interval_ms", spec["polling_interval_ms"], 0)
            said.append(f"polling_interval_ms = {every}")
        if "polling_interval" in spec:
            said.append(f"polling_interval = {_interval(r, f'topics.{topic}.polling_interval', spec['polling_interval'])}")
        if said:
            comments.append(_comment(
                f"topics.{topic}: {', '.join(said)}. Not needed here: a batch INSERT sorts each "
                "virtual partition over all of its input, so records may arrive any amount out "
                "of order, and nothing polls."))
    return comments


def _interval(r: _Reader, where: str, value: Any) -> str:
    spec = r.table(where, value)
    r.unknown(f"{where}.", spec, {"secs", "nanos"})
    secs = r.integer(f"{where}.secs", spec.get("secs", 0), 0) or 0
    nanos = r.integer(f"{where}.nanos", spec.get("nanos", 0), 0) or 0
    return f"{secs + nanos / 1e9:g} s"


def _derive(r: _Reader, name: str, spec: Mapping[str, Any]) -> _Derive | None:
    where = f"derive.{name}"
    r.unknown(f"{where}.", spec, _DERIVE)
    source = spec.get("from", name)
    if not isinstance(source, str):
        r.problems.append(f"{where}.from = {source!r} (expected a topic name)")
    if spec.get("order") != "TimeOrder":
        shown = f" = {spec['order']!r}" if "order" in spec else ""
        r.problems.append(f"{where}.order{shown} ({'only TimeOrder translates' if shown else 'missing'})")
    key = r.pointer(f"{where}.key", spec["key"]) if "key" in spec else None
    timestamp = r.pointer(f"{where}.timestamp", spec["timestamp"]) if "timestamp" in spec else None
    if "output" not in spec:
        r.problems.append(f"{where}.output (missing)")
        return None
    understood, count = r.output(f"{where}.output", spec["output"])
    if understood and count is not None and "key" not in spec:
        r.problems.append(f"{where}.key (missing: virtual partitions need a key)")
    return _Derive(name, str(source), key, timestamp, count) if understood else None


def _comment(text: str, width: int = 78) -> str:
    """``text`` as ``--`` lines of at most ``width`` characters (no newline can escape)."""
    words, lines, line = " ".join(text.split()).split(" "), [], "--"
    for word in words:
        if len(line) + 1 + len(word) > width and line != "--":
            lines.append(line)
            line = "--"
        line += " " + word
    lines.append(line)
    return "\n".join(lines)


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql("spark")


def _table(name: str) -> str:
    plain = _PLAIN.fullmatch(name) and name.upper() not in _KEYWORDS  # `select` is a name only in backticks
    return "kplex." + (name if plain else "`" + name.replace("`", "``") + "`")


def _header(name: str, broker: str | None, workers: int | None) -> str:
    parts = [
        _comment(f"kplex SQL translated by `kplex translate` from {name}. Check it with `kplex sql check "
                 "FILE`, see what it will do with `kplex sql explain FILE`, run it with `kplex sql run FILE`.")
        + "\n--\n"
        + _comment("The original job tails its topics forever; this is a batch job: each INSERT "
                   "processes what its source topic holds when it runs. Running the file again "
                   "writes nothing twice: a record an earlier run read is skipped (already_written), "
                   "so a rerun adds what arrived since, and a new record below what its virtual "
                   "partition holds by then is late (kplex.late_policy)."),
    ]
    if broker:
        parts.append(_comment("kafka.broker: `kplex sql run` and `kplex sql explain` connect here unless "
                              "--bootstrap or KPLEX_BOOTSTRAP name another cluster.")
                     + f"\n-- kplex.bootstrap = {','.join(s.strip() for s in broker.split(',') if s.strip()) or '?'}")
    if workers:
        parts.append(_comment(f"workers = {workers}: the original's consumer threads; here the "
                              "parallelism of Spark's shuffles.")
                     + f"\nSET spark.sql.shuffle.partitions = {workers};")
    return "\n\n".join(parts)


def _order_sql(d: _Derive) -> tuple[str, str]:
    """(SQL of the order value, its description)."""
    if d.timestamp is None:
        return "timestamp", "TimeOrder: the Kafka record timestamp"
    return spark_extract(d.timestamp, cast="BIGINT"), f"TimeOrder: JSON pointer {d.timestamp} of the value, epoch ms"


def _derive_sql(d: _Derive, workers: int | None, physical: int | None) -> str:
    order, order_text = _order_sql(d)
    time_from = f"{d.timestamp}" if d.timestamp is not None else "the record timestamp"
    if d.count is None:
        table = d.name if d.name != d.source else f"{d.name}_timeline"
        v = p = 1
        key, key_text = _literal(d.source), "constant: one global timeline"
        ignored = f" The job's key ({d.key}) does not matter for one timeline." if d.key is not None else ""
        intro = _comment(
            f"derive.{d.name}: output = stdout, in {time_from} order (TimeOrder): one global timeline of "
            f"{d.source}. A table with one virtual partition on one physical partition holds it, "
            f"{_table(table)}; every record takes the constant key {key} (any non-null key would do: "
            f"with V = 1 they all land in virtual partition 0).{ignored}")
    else:
        # A derive without `from` reads the topic of its own name: the table takes another.
        table, v = (d.name if d.name != d.source else f"{d.name}_by_key"), d.count
        p = physical or default_physical_partitions(v, workers)
        assert d.key is not None
        key, key_text = spark_extract(d.key), f"JSON pointer {d.key} of the value"
        change = "change it with `kplex translate --physical-partitions N`"
        if physical:
            why = "given with --physical-partitions"
        elif workers:
            why = (f"the largest divisor of V not above workers ({workers}), so that P divides V (the "
                   f"placement of a Kafka producer keyed the same way, G4) and each worker has a partition; {change}")
        else:
            why = f"as the job gives no workers (P is the largest divisor of V not above workers); {change}"
        intro = _comment(
            f"derive.{d.name}: {d.source} re-keyed by {d.key} into {v} virtual partitions, each in "
            f"{time_from} order (TimeOrder). The job does not say how many physical partitions: "
            f"P = {p}, {why}.")
    create = (
        f"CREATE TABLE IF NOT EXISTS {_table(table)}\nTBLPROPERTIES (\n"
        f"  'kplex.virtual_partitions' = '{v}',\n  'kplex.physical_partitions' = '{p}',\n"
        f"  'kplex.key' = {_literal(key_text)},\n  'kplex.order' = {_literal(order_text)}\n);"
    )
    insert = (
        f"INSERT INTO {_table(table)}\nSELECT kplex_key({key}),\n       kplex_order({order}),\n"
        f"       value\nFROM {_table(d.source)};"
    )
    parts = [f"{intro}\n{create}", insert]
    if d.count is None:
        parts.append(_comment("output = stdout: print the timeline in order; `kplex sql run` prints the "
                              "rows of a query on standard output, one per line.")
                     + f"\nSELECT CAST(value AS STRING) AS value\nFROM {_table(table)}\nORDER BY `offset`;")
    return "\n\n".join(parts)
