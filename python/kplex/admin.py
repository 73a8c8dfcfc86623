"""Operator commands that run in a JVM but need no Spark job.

    >>> from kplex.admin import recover
    >>> print(recover("127.0.0.1:9092", "pageviews_by_user"))  # doctest: +SKIP
    fenced 2 open transactions
"""
from __future__ import annotations

from kplex.errors import translated
from kplex.session import kplex_session


def recover(bootstrap: str, table: str, metadata_topic: str = "_kplex_tables") -> str:
    """Finish a commit that a dead driver left half done, and fence (Kafka aborts) every
    open transaction of ``table``, so read_committed consumers are not held back."""
    spark = kplex_session(bootstrap, master="local[1]", app_name="kplex-recover")
    with translated():
        return spark._jvm.io.kplex.spark.KplexAdmin.recover(bootstrap, table, metadata_topic)  # noqa: SLF001
