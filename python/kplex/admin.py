"""Operator commands that run in a JVM but need no Spark job.

    >>> from kplex.admin import recover
    >>> print(recover("127.0.0.1:9092", "pageviews_by_user"))  # doctest: +SKIP
    fenced 2 open transactions
"""
from __future__ import annotations

from typing import Mapping

from kplex.definitions import TABLES_TOPIC
from kplex.errors import translated
from kplex.session import kplex_session
from kplex.settings import METADATA_TOPIC


def recover(bootstrap: str, table: str, metadata_topic: str = TABLES_TOPIC,
            kafka_options: Mapping[str, str] | None = None, claim_timeout_ms: int | None = None) -> str:
    """Finish a commit that a dead driver left half done, and fence (Kafka aborts) every
    open transaction of ``table``, so read_committed consumers are not held back. Returns
    what it found and did: a commit Kafka cut short names the virtual partitions it lost
    and how they get written (an INSERT's is reported once). ``kafka_options`` are Java
    client settings (credentials: ``security.protocol``, ``sasl.jaas.config``, ...), as the
    catalog's ``kafka.*`` settings; ``claim_timeout_ms``: a writer's claim unrenewed for this
    long is taken over (``kplex.writer_claim_timeout_ms``, default 6000)."""
    spark = kplex_session(bootstrap, master="local[1]", app_name="kplex-recover",
                          conf={f"spark.sql.catalog.kplex.{METADATA_TOPIC}": metadata_topic},
                          kafka_options=kafka_options)
    with translated():
        admin = spark._jvm.io.kplex.spark.KplexAdmin  # noqa: SLF001
        return admin.recover(spark._jsparkSession, "kplex", table, -1 if claim_timeout_ms is None else claim_timeout_ms)  # noqa: SLF001


def spread_control_plane(bootstrap: str, kafka_options: Mapping[str, str] | None = None,
                         claim_timeout_ms: int | None = None) -> str:
    """Spread a commit log written by a kplex before its control plane was scoped by table (every table's
    records in partition 0 of ``_kplex_commits``) over its partitions by table, so that a
    commit reads its own table's records only, however many tables and how much history the
    log holds. Run it with no kplex writer at work: a live writer's claim, or a commit left
    pending (``kplex recover`` finishes it), is refused with ``[KPLEX_CONTROL_PLANE_BUSY]``
    naming the table, and nothing changes. A log kplex created is spread already.

    >>> print(spread_control_plane("127.0.0.1:9092"))  # doctest: +SKIP
    spread _kplex_commits over 16 partitions by table (1204 records moved out of partition 0)
    """
    spark = kplex_session(bootstrap, master="local[1]", app_name="kplex-control-plane",
                          kafka_options=kafka_options)
    with translated():
        admin = spark._jvm.io.kplex.spark.KplexAdmin  # noqa: SLF001
        return admin.spreadControlPlane(spark._jsparkSession, "kplex",  # noqa: SLF001
                                        -1 if claim_timeout_ms is None else claim_timeout_ms)
