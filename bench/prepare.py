"""What a benchmark run sets up before its first contender: a snapshot of the kplex
package (jars included), Spark's Kafka connector, a description of the machine; and
``say``, the progress line every part of bench/run.py prints.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kplex.testing.local_kafka import LocalKafka, kafka_version

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# Spark's Kafka connector jars passed with spark.jars (the rest is in pyspark already).
CONNECTOR_JARS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "commons-pool2", "kafka-clients")


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)



def kplex_snapshot(workdir: Path) -> Path:
    """Copy python/kplex (with its jars) into the work dir, building the jars first
    if they are missing; returns the directory to put on PYTHONPATH."""
    jars = REPO / "python" / "kplex" / "jars"
    for _ in range(60):  # a build elsewhere removes and re-copies them: wait it out
        if (jars / "kplex-spark.jar").is_file():
            break
        time.sleep(2)
    else:
        say("kplex-spark.jar is missing: running gradle -q bundleJars")
        subprocess.run(["gradle", "-q", "bundleJars"], cwd=REPO, check=True)
    time.sleep(1)  # let a copy in progress finish
    target = workdir / "pkg"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(REPO / "python" / "kplex", target / "kplex",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if not (target / "kplex" / "jars" / "kplex-spark.jar").is_file():
        raise SystemExit("kplex-spark.jar vanished while it was copied; run again")
    return target


def connector_jars(spark_version: str) -> list[str]:
    """Spark's Kafka connector and its runtime jars, resolved once with Maven."""
    cache = Path(os.environ.get("KPLEX_CACHE") or REPO / ".cache") / f"spark-sql-kafka-{spark_version}"
    marker = cache / ".complete"
    if not marker.is_file():
        say(f"resolving spark-sql-kafka-0-10 {spark_version} into {cache}")
        staging = cache.with_name(cache.name + f".partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        run = subprocess.run(
            ["mvn", "-B", "-q", "-Dstyle.color=never", "-s", str(BENCH / "maven-settings.xml"),
             "-f", str(BENCH / "pom.xml"), f"-Dspark.version={spark_version}",
             "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:
            raise SystemExit(f"mvn could not resolve Spark's Kafka connector:\n{run.stdout[-3000:]}")
        (staging / ".complete").write_text(spark_version + "\n")
        shutil.rmtree(cache, ignore_errors=True)
        staging.rename(cache)
    return sorted(str(p) for p in cache.glob("*.jar") if p.name.startswith(CONNECTOR_JARS))


def machine() -> dict[str, str]:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], stderr=subprocess.PIPE, text=True).stderr.splitlines()[0]
    import confluent_kafka
    import pyspark
    return {
        "cpu": f"{os.cpu_count()} x {cpu}",
        "memory": f"{mem_kib / 2**20:.0f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "java": java.replace('"', ""),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "kafka broker": kafka_version(),
        "confluent-kafka": f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})",
    }


def broker_pid(cluster: LocalKafka) -> int | None:
    procs = getattr(cluster, "_procs", {}) or {}
    for proc in procs.values():
        return proc.pid
    pids = getattr(cluster, "_pids", {}) or {}
    return next(iter(pids.values()), None)
