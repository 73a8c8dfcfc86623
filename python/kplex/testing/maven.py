"""One jar from Maven Central, resolved with ``mvn`` into kplex's cache on first use.

For tests that need a Spark connector of the running Spark (``spark-avro``, Spark's own
Kafka connector): ``$KPLEX_CACHE`` (else ``<repo>/.cache``) ``/maven/<group>/<artifact>-<version>.jar``.

>>> spark_jar("spark-avro", "4.1.1")  # doctest: +SKIP
PosixPath('/work/main/.cache/maven/org.apache.spark/spark-avro_2.13-4.1.1.jar')
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["MavenError", "jar", "scala_of", "spark_jar"]

REPO = Path(__file__).resolve().parents[3]


class MavenError(RuntimeError):
    """A jar that mvn could not resolve (the artifact is named)."""


def jar(group: str, artifact: str, version: str) -> Path:
    """The path of ``group:artifact:version``'s jar, downloaded by ``mvn dependency:copy`` once."""
    folder = Path(os.environ.get("KPLEX_CACHE") or REPO / ".cache") / "maven" / group
    path = folder / f"{artifact}-{version}.jar"
    if path.is_file():
        return path
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenError(f"mvn is not on PATH; install Maven to resolve {group}:{artifact}:{version}")
    staging = folder / f"partial-{os.getpid()}"
    result = subprocess.run([mvn, "-B", "-q", "-Dstyle.color=never", "dependency:copy",
                             f"-Dartifact={group}:{artifact}:{version}", f"-DoutputDirectory={staging}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    got = staging / path.name
    if result.returncode != 0 or not got.is_file():
        shutil.rmtree(staging, ignore_errors=True)
        last = "\n".join(result.stdout.splitlines()[-10:])
        raise MavenError(f"mvn could not resolve {group}:{artifact}:{version} (exit {result.returncode}):\n{last}")
    got.replace(path)
    shutil.rmtree(staging, ignore_errors=True)
    return path


def scala_of(spark_version: str) -> str:
    """The Scala a Spark line's published modules are built for: 2.12 for 3.5, 2.13 for 4.x.

    >>> scala_of("3.5.7"), scala_of("4.1.1")
    ('2.12', '2.13')
    """
    return "2.12" if spark_version.startswith("3.") else "2.13"


def spark_jar(module: str, spark_version: str) -> Path:
    """A Spark module's jar (``spark-avro``, ``spark-sql-kafka-0-10``...) for that Spark and its Scala."""
    return jar("org.apache.spark", f"{module}_{scala_of(spark_version)}", spark_version)
