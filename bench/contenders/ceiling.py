"""Contender: the ceiling, Kafka's own producer benchmark (ProducerPerformance from
kafka-tools, what kafka-producer-perf-test.sh runs), producing as many records as
the source holds, with kplex's producer settings. Its payloads are real values of
the source (10,000 of them, each record one picked at random, as
``--payload-file`` does), so that compression meets the same data as kplex's: with
``--record-size`` every record would be the same bytes, which lz4 shrinks to almost
nothing.

    python bench/contenders/ceiling.py --bootstrap B --source pageviews \\
        --target perf --records 1000000 [--kafka-libs DIR]

``--kafka-libs`` is the directory of the Kafka jars (bench/run.py passes the broker's);
by default :func:`kplex.testing.local_kafka.kafka_libs` resolves them.

``--kplex-records`` sends each record as a kplex exactly-once writer task does instead (key,
``kplex.vp`` and ``kplex.order`` headers, the virtual partition's physical partition, one
transaction; ``KplexRecordsCeiling.java`` next to this script): the producer's part of a kplex
write, without its reading, parsing, shuffle and sort.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from common import KPLEX_PRODUCER, arguments, emit
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

# KafkaConf.producer()'s defaults, so that the ceiling is what kplex's producer could reach.
PRODUCER_PROPS = {"acks": "all", "enable.idempotence": "true", **KPLEX_PRODUCER}
PAYLOADS = 10_000
RECORDS_CEILING = "KplexRecordsCeiling"
_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")


def write_payloads(bootstrap: str, topic: str, path: Path, count: int) -> None:
    """The first ``count`` values of a topic, one per line (JSON values hold no newline)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kplex-bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "log_level": 3})
    partitions = consumer.list_topics(topic, timeout=10.0).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    values: list[bytes] = []
    try:
        while len(values) < count:
            batch = consumer.consume(min(count - len(values), 1000), timeout=10.0)
            if not batch:
                break
            values += [m.value() for m in batch if m.error() is None and m.value() and b"\n" not in m.value()]
    finally:
        consumer.close()
    if not values:
        sys.exit(f"no values to use as payloads in topic {topic}")
    path.write_bytes(b"\n".join(values[:count]))


def compiled(kafka_libs: Path, workdir: Path) -> Path:
    """The directory of KplexRecordsCeiling's class, compiled once per work dir (so that no run's
    CPU time counts the compiler, as Java's source launcher would)."""
    classes = workdir.resolve() / "ceiling-classes"
    source = Path(__file__).with_name(f"{RECORDS_CEILING}.java")
    built = classes / f"{RECORDS_CEILING}.class"
    if not built.exists() or built.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["javac", "-d", str(classes), "-cp", f"{kafka_libs}/*", str(source)], check=True)
    return classes


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--kafka-libs", type=Path, help="the Kafka jars' directory (default: resolved"
                        " by kplex.testing.local_kafka)")
    parser.add_argument("--transactional", action="store_true",
                        help="send every record in one Kafka transaction, committed at the end (what an exactly-once"
                             " kplex task does): Kafka's own price of a transaction")
    parser.add_argument("--kplex-records", action="store_true",
                        help="send kplex's records (key, its two headers, placement by --v and --p) in one"
                             " transaction, with KplexRecordsCeiling.java instead of ProducerPerformance")
    args = parser.parse_args()
    if args.kafka_libs is None:
        from kplex.testing.local_kafka import kafka_libs

        args.kafka_libs = kafka_libs()
    payloads = args.workdir / f"payloads-{args.source}.txt"
    if not payloads.exists():
        write_payloads(args.bootstrap, args.source, payloads, PAYLOADS)
    props = [f"bootstrap.servers={args.bootstrap}"] + [f"{k}={v}" for k, v in PRODUCER_PROPS.items()]
    if args.kplex_records:
        classes = compiled(args.kafka_libs, args.workdir)
        command = ["java", "-Xmx512M", "-cp", f"{args.kafka_libs}/*{os.pathsep}{classes}", RECORDS_CEILING,
                   "--bootstrap", args.bootstrap, "--topic", args.target, "--num-records", str(args.records),
                   "--payload-file", str(payloads), "--v", str(args.v), "--p", str(args.p),
                   "--transactional-id", f"kplex-bench-ceiling-{args.target}", "--producer-props", *props[1:]]
    else:
        command = ["java", "-Xmx512M", "-cp", f"{args.kafka_libs}/*", "org.apache.kafka.tools.ProducerPerformance",
                   "--topic", args.target, "--num-records", str(args.records),
                   "--payload-file", str(payloads), "--throughput", "-1",
                   "--producer-props", *props]
    if args.transactional and not args.kplex_records:  # KplexRecordsCeiling is always one transaction
        # One transaction for the whole run: committed once, at the end (its duration is never reached).
        command += ["--transactional-id", f"kplex-bench-ceiling-{args.target}", "--transaction-duration-ms", "3600000"]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    found = _SUMMARY.findall(run.stdout)
    if run.returncode != 0 or not found:
        sys.exit(f"{RECORDS_CEILING if args.kplex_records else 'ProducerPerformance'} failed (exit {run.returncode})")
    sent, per_second, _ = found[-1]
    emit({"job_s": int(sent) / float(per_second), "records": int(sent),
          "reported_records_per_s": float(per_second)})


if __name__ == "__main__":
    main()
