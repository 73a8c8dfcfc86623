"""The contenders of bench/streaming/run.py, as data: what each one claims and the
command line that starts it. Every contender reads the same kind of source topic (a
fresh copy of the same generated pageviews) and re-keys it by userid into a fresh
output topic, until its standard input closes.

==========================  ==============================================================
kplex exactly once          Structured Streaming, kplex source -> kplex sink (the default
                            delivery), each virtual partition in viewtime order
kplex at least once         the same, ``'kplex.delivery'='at_least_once'``
Spark Kafka sink            Structured Streaming, kplex source -> Spark's own Kafka sink
                            (spark-sql-kafka-0-10): at least once, no order
Kafka Streams EOS           RekeyStreams.java: ``selectKey(userid).repartition().to(DST)``,
                            ``processing.guarantee=exactly_once_v2``
==========================  ==============================================================
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kstreams import StreamsBuild

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Settings:
    """What every contender of one run shares."""

    bootstrap: str
    workdir: Path
    kplex_python: Path  # the snapshot of python/ that Spark contenders import
    spark_kafka_jars: str  # comma-separated, for spark.jars
    streams: StreamsBuild
    v: int = 9
    p: int = 3
    max_delay_ms: int = 1000
    idle_release_ms: int = 1000
    trigger: str = "0 seconds"
    max_offsets_per_trigger: int = 0  # the Spark queries' source option; 0: none
    memory: str = "1g"
    streams_threads: int = 2
    empty_partitions: int = 0  # the source's last partitions that no record goes to
    profile_live: bool = False  # a CPU profile of each contender's JVM during the live phase (live_profile.py)


@dataclass(frozen=True)
class Slot:
    """One contender's run: its topics and files."""

    source: str
    target: str
    directory: Path

    @property
    def progress(self) -> Path:
        return self.directory / "progress.jsonl"

    @property
    def phases(self) -> Path:
        return self.directory / "phases.json"

    @property
    def log(self) -> Path:
        return self.directory / "output.log"


@dataclass(frozen=True)
class Contender:
    name: str
    slug: str  # topic and directory names
    guarantee: str
    exactly_once: bool  # duplicates count as a failure
    keeps_order: bool  # writes kplex.vp/kplex.order headers: G2 is checked
    creates_target: bool  # makes its own output (a kplex table); otherwise the harness creates the topic
    reports_progress: bool  # a Spark query: writes StreamingQueryProgress lines
    command: Callable[[Settings, Slot], list[str]]


def spark_query(sink: str, delivery: str = "exactly_once") -> Callable[[Settings, Slot], list[str]]:
    """The command of a Spark contender (bench/streaming/spark_query.py)."""

    def command(s: Settings, slot: Slot) -> list[str]:
        cmd = [sys.executable, str(HERE / "spark_query.py"), "--bootstrap", s.bootstrap,
               "--source", slot.source, "--target", slot.target, "--sink", sink, "--delivery", delivery,
               "--checkpoint", str(slot.directory / "checkpoint"), "--progress", str(slot.progress),
               "--phases", str(slot.phases),
               "--v", str(s.v), "--p", str(s.p), "--max-delay-ms", str(s.max_delay_ms),
               "--idle-release-ms", str(s.idle_release_ms), "--trigger", s.trigger, "--memory", s.memory,
               "--max-offsets-per-trigger", str(s.max_offsets_per_trigger)]
        if sink == "kafka":
            cmd += ["--extra-jars", s.spark_kafka_jars]
        return cmd

    return command


def kafka_streams(s: Settings, slot: Slot) -> list[str]:
    """The command of the Kafka Streams contender (RekeyStreams.java)."""
    return s.streams.command(s.bootstrap, slot.source, slot.target, f"bench-{slot.target}",
                             slot.directory / "state", threads=s.streams_threads, heap=s.memory)


#: In the order they run; the first sets the default input rate of the latency phase.
CONTENDERS: tuple[Contender, ...] = (
    Contender("kplex streaming, exactly once", "kplex_eo", "exactly once, per-vp order",
              exactly_once=True, keeps_order=True, creates_target=True, reports_progress=True,
              command=spark_query("kplex", "exactly_once")),
    Contender("kplex streaming, at least once", "kplex_alo", "at least once, per-vp order",
              exactly_once=False, keeps_order=True, creates_target=True, reports_progress=True,
              command=spark_query("kplex", "at_least_once")),
    Contender("Spark Kafka sink", "spark_kafka", "at least once, no order",
              exactly_once=False, keeps_order=False, creates_target=False, reports_progress=True,
              command=spark_query("kafka")),
    Contender("Kafka Streams EOS", "kstreams_eos", "exactly once (v2), no event-time order",
              exactly_once=True, keeps_order=False, creates_target=False, reports_progress=False,
              command=kafka_streams),
)

#: The contender whose sustained rate every ratio divides by.
BASELINE = "kstreams_eos"
#: The contender whose sustained rate sets the default input rate of the latency phase.
RATE_SETTER = "kplex_eo"


def select(only: str) -> tuple[Contender, ...]:
    """The contenders whose slug is in the comma-separated ``only`` (all when empty)."""
    wanted = {s.strip() for s in only.split(",") if s.strip()}
    unknown = wanted - {c.slug for c in CONTENDERS}
    if unknown:
        raise SystemExit(f"--only: unknown {sorted(unknown)}; choose from {','.join(c.slug for c in CONTENDERS)}")
    return tuple(c for c in CONTENDERS if not wanted or c.slug in wanted)
