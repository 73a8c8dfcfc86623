"""The benchmark's cases: which contender script runs, with which arguments, and what
its output promises (the guarantees it is checked for).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from common import KPLEX_PRODUCER
from prepare import SparkLine

# Spark's own JSON functions, in place of kplex_json in the kplex INSERT (--parse-variants).
PARSE_VARIANTS = ("get_json_object", "json_tuple")


@dataclass
class Contender:
    """One run: which script, with which arguments, and what it promises."""

    name: str
    script: str
    v: int | None = None
    delivery: str = ""
    args: list[str] = field(default_factory=list)
    claims: tuple[str, ...] = ()  # guarantees its output must meet
    kplex_table: bool = False      # the script creates its own topic (CREATE TABLE)
    checked: bool = True           # its output holds the source's records
    committed_once: bool = False   # unchecked output written in one transaction: a commit marker per partition
    verify: str = "yes"            # "none": not checked at all (the profiling run)
    spark: str = ""                # the pyspark version it runs on (--spark); "": this Python's
    python: str = ""               # the interpreter that runs the script; "": this one

    @property
    def label(self) -> str:
        """The name in progress lines: ``kplex exactly_once V=9, Spark 3.5.7``."""
        v = f" V={self.v}" if self.v and self.script == "kplex_insert.py" else ""
        return self.name + v + (f", Spark {self.spark}" if self.spark else "")


def contenders(sizes_v: list[int], deliveries: list[str], reference_v: int, smoke: bool,
               extra_jars: str, parse_variants: tuple[str, ...] = (), uncompressed: bool = False,
               warm: bool = False, kafka_libs: Path | None = None) -> list[Contender]:
    """Every case of a run; ``kafka_libs`` is the Kafka jars' directory for the ceiling."""
    at_least_once = ("G1", "G2", "G4", "G5")  # what the at-least-once writers claim
    claims = {"at_least_once": at_least_once, "exactly_once": ("G1", "G2", "G3", "G4", "G5")}
    out = [
        Contender("ceiling (ProducerPerformance)", "ceiling.py",
                  args=["--kafka-libs", str(kafka_libs)] if kafka_libs else [], checked=False),
        *([Contender("ceiling (ProducerPerformance, one transaction)", "ceiling.py",
                     args=["--transactional", *(["--kafka-libs", str(kafka_libs)] if kafka_libs else [])],
                     checked=False, committed_once=True),
           # The producer's part of a kplex exactly-once write: its records (key, headers, placement).
           Contender("ceiling (kplex's records, one transaction)", "ceiling.py", v=reference_v,
                     args=["--kplex-records", *(["--kafka-libs", str(kafka_libs)] if kafka_libs else [])],
                     checked=False, committed_once=True)] if "exactly_once" in deliveries and not smoke else []),
        Contender("spark-sink", "spark_sink.py", v=reference_v, delivery="at_least_once",
                  args=["--extra-jars", extra_jars], claims=at_least_once),
    ]
    if not smoke:
        out.append(Contender("spark-sink (kplex producer conf)", "spark_sink.py", v=reference_v,
                             delivery="at_least_once",
                             args=["--extra-jars", extra_jars, "--producer-conf", json.dumps(KPLEX_PRODUCER)],
                             claims=at_least_once))
    out.append(Contender("python confluent-kafka", "python_rekey.py", v=reference_v, delivery="at_least_once",
                         claims=("G1", "G4", "G5")))
    for v in sizes_v:
        for delivery in deliveries:
            out.append(Contender(f"kplex {delivery}", "kplex_insert.py", v=v, delivery=delivery,
                                 args=["--delivery", delivery], claims=claims[delivery], kplex_table=True))
    # Variants of the same INSERT at the reference V: (name suffix, extra arguments).
    variants: list[tuple[str, list[str]]] = []
    if uncompressed:
        # kplex's producer default is lz4 (KafkaConf.producer()); this row shows what it saves.
        variants.append(("compression.type=none", ["--producer-conf", json.dumps({"compression.type": "none"})]))
    if warm:
        # The same INSERT as the second statement of a session: shows what the fresh JVM
        # every other row starts in (its JIT compiler's CPU) costs.
        variants.append(("warm session", ["--warm"]))
        # The same INSERT as a scheduler's SQL file on a running server (`kplex sql run --remote`),
        # whose JVM an earlier file warmed: what the product offers where a fresh JVM is too dear.
        variants.append(("running server", ["--server"]))
    variants += [(parse, ["--parse", parse]) for parse in parse_variants]
    for suffix, extra in variants:
        for delivery in deliveries:
            out.append(Contender(f"kplex {delivery} ({suffix})", "kplex_insert.py", v=reference_v,
                                 delivery=delivery, args=["--delivery", delivery, *extra],
                                 claims=claims[delivery], kplex_table=True))
    return out


def on_spark_lines(chosen: list[Contender], lines: list[SparkLine]) -> list[Contender]:
    """Every kplex case once per Spark line (each in that line's Python), one line after the
    other, so that a slow spell of the machine lands on one case's lines alike; the other
    contenders once, on this Python's Spark. Without ``lines``, ``chosen`` as it is.

    >>> [c.label for c in on_spark_lines(contenders([9], ["exactly_once"], 9, True, ""),
    ...                                  [SparkLine("3.5.7", "py35"), SparkLine("4.1.1", "py41")])][-2:]
    ['kplex exactly_once V=9, Spark 3.5.7', 'kplex exactly_once V=9, Spark 4.1.1']
    """
    if not lines:
        return chosen
    out = []
    for c in chosen:
        if c.script == "kplex_insert.py":
            out += [replace(c, spark=line.version, python=line.python) for line in lines]
        else:
            out.append(c)
    return out
