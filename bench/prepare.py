"""What a benchmark run sets up before its first contender: a snapshot of the kplex
package (jars included), Spark's Kafka connector, a Python for each Spark line that
``--spark`` asks for, a description of the machine; and ``say``, the progress line every
part of bench/run.py prints.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kplex.session import SPARK_JARS
from kplex.testing.local_kafka import LocalKafka, kafka_version

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# Spark's Kafka connector jars passed with spark.jars (the rest is in pyspark already).
CONNECTOR_JARS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "commons-pool2", "kafka-clients")


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)



def kplex_snapshot(workdir: Path) -> Path:
    """Copy python/kplex (with the plugin jar of every Spark line, kplex.session.SPARK_JARS)
    into the work dir, building the jars first if one is missing; returns the directory to
    put on PYTHONPATH."""
    jars = REPO / "python" / "kplex" / "jars"
    names = sorted(set(SPARK_JARS.values()))
    for _ in range(60):  # a build elsewhere removes and re-copies them: wait it out
        if all((jars / name).is_file() for name in names):
            break
        time.sleep(2)
    else:
        missing = [name for name in names if not (jars / name).is_file()]
        say(f"{', '.join(missing)} missing: running gradle -q bundleJars")
        subprocess.run(["gradle", "-q", "bundleJars"], cwd=REPO, check=True)
    time.sleep(1)  # let a copy in progress finish
    target = workdir / "pkg"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(REPO / "python" / "kplex", target / "kplex",
                    ignore=shutil.ignore_patterns("__pycache__"))
    missing = [name for name in names if not (target / "kplex" / "jars" / name).is_file()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} vanished while it was copied; run again")
    return target


@dataclass(frozen=True)
class SparkLine:
    """A Spark line the kplex contenders run on (``--spark``): the pyspark version, and the
    Python interpreter that imports it."""

    version: str
    python: str


def spark_lines(versions: list[str]) -> list[SparkLine]:
    """A Python for each pyspark version: this one for the installed pyspark, else the
    virtual environment that ``scripts/test_spark_version.sh VERSION --prepare`` makes (or
    reuses) in $KPLEX_CACHE_DIR (default ~/.cache/kplex)/venv-pyspark-VERSION.

    >>> spark_lines([])
    []
    """
    import pyspark

    cache = Path(os.environ.get("KPLEX_CACHE_DIR") or Path.home() / ".cache" / "kplex")
    lines = []
    for version in versions:
        if version == pyspark.__version__:
            lines.append(SparkLine(version, sys.executable))
            continue
        say(f"the Python of pyspark {version}: scripts/test_spark_version.sh {version} --prepare")
        subprocess.run(["bash", str(REPO / "scripts" / "test_spark_version.sh"), version, "--prepare"],
                       cwd=REPO, check=True, stdin=subprocess.DEVNULL)
        python = cache / f"venv-pyspark-{version}" / "bin" / "python"
        found = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"],
                               stdout=subprocess.PIPE, text=True).stdout.strip()
        if found != version:
            raise SystemExit(f"{python} imports pyspark {found or '(none)'}, not {version}: remove "
                             f"{python.parent.parent} and run again")
        lines.append(SparkLine(version, str(python)))
    return lines


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
