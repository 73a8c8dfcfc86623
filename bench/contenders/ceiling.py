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
"""
from __future__ import annotations

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


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--kafka-libs", type=Path, help="the Kafka jars' directory (default: resolved"
                        " by kplex.testing.local_kafka)")
    parser.add_argument("--transactional", action="store_true",
                        help="send every record in one Kafka transaction, committed at the end (what an exactly-once"
                             " kplex task does): Kafka's own price of a transaction")
    args = parser.parse_args()
    if args.kafka_libs is None:
        from kplex.testing.local_kafka import kafka_libs

        args.kafka_libs = kafka_libs()
    payloads = args.workdir / f"payloads-{args.source}.txt"
    if not payloads.exists():
        write_payloads(args.bootstrap, args.source, payloads, PAYLOADS)
    props = [f"bootstrap.servers={args.bootstrap}"] + [f"{k}={v}" for k, v in PRODUCER_PROPS.items()]
    command = ["java", "-Xmx512M", "-cp", f"{args.kafka_libs}/*", "org.apache.kafka.tools.ProducerPerformance",
               "--topic", args.target, "--num-records", str(args.records),
               "--payload-file", str(payloads), "--throughput", "-1",
               "--producer-props", *props]
    if args.transactional:
        # One transaction for the whole run: committed once, at the end (its duration is never reached).
        command += ["--transactional-id", f"kplex-bench-ceiling-{args.target}", "--transaction-duration-ms", "3600000"]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    found = _SUMMARY.findall(run.stdout)
    if run.returncode != 0 or not found:
        sys.exit(f"ProducerPerformance failed (exit {run.returncode})")
    sent, per_second, _ = found[-1]
    emit({"job_s": int(sent) / float(per_second), "records": int(sent),
          "reported_records_per_s": float(per_second)})


if __name__ == "__main__":
    main()
