"""Contender: the ceiling, Kafka's own producer benchmark (ProducerPerformance from
kafka-tools, what kafka-producer-perf-test.sh runs), producing as many records of
the source's mean value size, with kplex's producer settings.

    python bench/contenders/ceiling.py --bootstrap B --source pageviews \\
        --target perf --records 1000000 --record-size 150
"""
from __future__ import annotations

import re
import subprocess
import sys

from common import REPO, arguments, emit

sys.path.insert(0, str(REPO / "scripts"))
from local_kafka import kafka_libs  # noqa: E402

# KafkaConf.producer()'s defaults, so that the ceiling is what kplex's producer could reach.
PRODUCER_PROPS = {
    "acks": "all",
    "enable.idempotence": "true",
    "linger.ms": "10",
    "batch.size": str(256 * 1024),
    "buffer.memory": str(64 << 20),
}
_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--record-size", type=int, default=150)
    args = parser.parse_args()
    props = [f"bootstrap.servers={args.bootstrap}"] + [f"{k}={v}" for k, v in PRODUCER_PROPS.items()]
    command = ["java", "-Xmx512M", "-cp", f"{kafka_libs()}/*", "org.apache.kafka.tools.ProducerPerformance",
               "--topic", args.target, "--num-records", str(args.records),
               "--record-size", str(args.record_size), "--throughput", "-1",
               "--producer-props", *props]
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
