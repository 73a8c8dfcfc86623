"""kplex for Spark: repartition Kafka topics onto ordered virtual partitions.

    >>> from pyspark.sql import SparkSession
    >>> from kplex import configure_spark_with_kplex
    >>> spark = configure_spark_with_kplex(SparkSession.builder, "127.0.0.1:9092").getOrCreate()
    >>> spark.sql("INSERT INTO kplex.pageviews_by_user SELECT ...")   # doctest: +SKIP
"""
from __future__ import annotations

from kplex.definitions import read_table_definition
from kplex.errors import KplexError, install_exception_conversion, translate, translated
from kplex.placement import canonical_key, murmur2, physical_partition, virtual_partition
from kplex.reader import TableReader, iter_virtual_partition
from kplex.session import (
    configure_spark_with_kplex,
    jars,
    kplex_session,
    last_write_summary,
    read_metrics,
    register_functions,
)

__version__ = "0.1.0"

# kplex's JVM errors arrive as kplex.errors exceptions, classic and Spark Connect alike.
install_exception_conversion()

__all__ = [
    "KplexError",
    "TableReader",
    "canonical_key",
    "configure_spark_with_kplex",
    "iter_virtual_partition",
    "jars",
    "kplex_session",
    "last_write_summary",
    "murmur2",
    "physical_partition",
    "read_metrics",
    "read_table_definition",
    "register_functions",
    "translate",
    "translated",
    "virtual_partition",
]
