"""Wiring kplex into a SparkSession: jars, SQL extension, catalog and functions.

Example:
    >>> from pyspark.sql import SparkSession
    >>> from kplex import configure_spark_with_kplex
    >>> builder = SparkSession.builder.master("local[2]")
    >>> spark = configure_spark_with_kplex(builder, bootstrap="127.0.0.1:9092").getOrCreate()
    >>> spark.sql("SHOW TABLES IN kplex").show()
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

CATALOG_CLASS = "io.kplex.spark.KplexCatalog"
EXTENSIONS_CLASS = "io.kplex.spark.KplexExtensions"
JARS_DIR = Path(__file__).resolve().parent / "jars"


def jars() -> list[str]:
    """The plugin jar and its runtime jars, shipped inside this package.

    >>> [Path(j).name for j in jars()]  # doctest: +SKIP
    ['kafka-clients-4.1.1.jar', 'kplex-spark.jar']
    """
    found = sorted(str(p) for p in JARS_DIR.glob("*.jar"))
    if not any(p.endswith("kplex-spark.jar") for p in found):
        raise FileNotFoundError(
            f"kplex-spark.jar is missing from {JARS_DIR}: this is a source checkout without a"
            " build. Run `gradle bundleJars` (scripts/setup.sh does it) and reinstall.")
    return found


def configure_spark_with_kplex(
    builder: SparkSession.Builder,
    bootstrap: str | None = None,
    catalog: str = "kplex",
    kafka_options: dict[str, str] | None = None,
) -> SparkSession.Builder:
    """Set the configuration that kplex needs on a session builder, and return it.

    Adds the bundled jars to ``spark.jars``, the SQL extension that registers
    ``kplex_key``, ``kplex_order``, ``kplex_vpartition`` and ``kplex_json``, and the ``kplex``
    catalog pointing at ``bootstrap`` (default: ``$KPLEX_BOOTSTRAP``).

    >>> builder = configure_spark_with_kplex(SparkSession.builder, "127.0.0.1:9092")
    """
    bootstrap = bootstrap or os.environ.get("KPLEX_BOOTSTRAP")
    existing = builder._options.get("spark.jars", "")  # noqa: SLF001 - Builder has no getter
    jar_list = ",".join(j for j in [existing, *jars()] if j)
    extensions = builder._options.get("spark.sql.extensions", "")  # noqa: SLF001
    ext_list = ",".join(e for e in [extensions, EXTENSIONS_CLASS] if e and EXTENSIONS_CLASS not in extensions)
    builder = (builder.config("spark.jars", jar_list)
               .config("spark.sql.extensions", ext_list or EXTENSIONS_CLASS)
               .config(f"spark.sql.catalog.{catalog}", CATALOG_CLASS))
    if bootstrap:
        builder = builder.config(f"spark.sql.catalog.{catalog}.kafka.bootstrap.servers", bootstrap)
    for key, value in (kafka_options or {}).items():
        builder = builder.config(f"spark.sql.catalog.{catalog}.kafka.{key}", value)
    return builder


def kplex_session(
    bootstrap: str | None = None,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    app_name: str = "kplex",
) -> SparkSession:
    """A SparkSession with kplex configured (the one the CLI uses).

    >>> spark = kplex_session("127.0.0.1:9092", master="local[2]")  # doctest: +SKIP
    """
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.ui.enabled", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = configure_spark_with_kplex(builder, bootstrap).getOrCreate()
    register_functions(spark)
    return spark


def register_functions(spark: SparkSession) -> None:
    """Register kplex's SQL functions in a running session.

    Needed only where ``spark.sql.extensions`` could not be set before the session
    started (a shared Databricks cluster, say); the jars must be on its classpath.

    >>> register_functions(spark)  # doctest: +SKIP
    """
    spark._jvm.io.kplex.spark.KplexFunctions.register(spark._jsparkSession)  # noqa: SLF001


def last_write_summary(spark: SparkSession) -> dict[str, Any] | None:
    """What the last committed kplex write of this session's driver wrote.

    >>> last_write_summary(spark)  # doctest: +SKIP
    {'table': 'pageviews_by_user', 'rows': 1000, 'rows_per_vp': {'0': 117, ...}, ...}
    """
    raw = spark._jvm.io.kplex.spark.WriteSummary.lastJson()  # noqa: SLF001
    return json.loads(raw) if raw else None
