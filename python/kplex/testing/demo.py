"""The seed article's example, for real: generate ``pageviews``, repartition it by
user with ``sql/pageviews_by_user.sql``, and check the result with a plain consumer.

    >>> from kplex.testing.demo import run_demo
    >>> ok = run_demo("127.0.0.1:9092", records=10_000)      # doctest: +SKIP
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

from kplex.errors import translated
from kplex.kafka import config as kafka_config
from kplex.session import kplex_session, last_write_summary
from kplex.sqltools.script import read_script
from kplex.testing import datagen, verify

JOB = Path(__file__).resolve().parent.parent / "sql" / "pageviews_by_user.sql"
SOURCE, TARGET, V, P = "pageviews", "pageviews_by_user", 9, 3


class DemoTopicsExist(Exception):
    """The demo's topics exist on the cluster and the demo was not told to replace them."""


def run_demo(bootstrap: str, records: int = 10_000, master: str = "local[2]", replace: bool = False,
             kafka_settings: Mapping[str, str] | None = None) -> bool:
    """Run the demo and print each step; True if every guarantee checks out. The demo makes
    topics ``pageviews`` and ``pageviews_by_user`` afresh: where either exists, it deletes them
    only when ``replace`` (they may be a user's own, named as in the README's example), else
    raises :class:`DemoTopicsExist` before changing anything. ``kafka_settings``: Kafka's Java
    client settings for a secured cluster (``--kafka-config``'s), used by every client it makes."""
    from confluent_kafka.admin import AdminClient

    settings = dict(kafka_settings or {})
    config = kafka_config.librdkafka(settings) if settings else None
    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap})
    stale = [t for t in (SOURCE, TARGET) if t in admin.list_topics(timeout=10).topics]
    if stale and not replace:
        raise DemoTopicsExist(f"topic(s) {', '.join(stale)} exist on {bootstrap}; the demo deletes and makes"
                              " them again: run it with --replace to allow that, or on another broker")
    if stale:
        for future in admin.delete_topics(stale).values():
            future.result()
        time.sleep(1)
    print(f"1. generating {records} pageviews on {P} partitions, keyed by pageid")
    summary = datagen.generate_pageviews(bootstrap, SOURCE, records, partitions=P,
                                         out_of_order_ms=2_000, seed=7, config=config)
    print(f"   per partition: {summary.per_partition}")
    spark = kplex_session(bootstrap, master=master,
                          conf={"spark.sql.shuffle.partitions": "4",
                                "spark.ui.showConsoleProgress": "false"}, app_name="kplex-demo",
                          kafka_options=settings)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.sql(f"DROP TABLE IF EXISTS kplex.{TARGET}")
        print(f"2. running {JOB.name}:")
        for statement in (st.text for st in read_script(JOB).statements):
            print("   " + statement.replace("\n", "\n   ") + ";")
            started = time.monotonic()
            with translated():
                spark.sql(statement)
            print(f"   -- {time.monotonic() - started:.1f} s")
        written = last_write_summary(spark) or {}
        print(f"   wrote {written.get('rows')} rows ({written.get('delivery')}), per virtual partition:"
              f" {written.get('rows_per_vp')}")
    finally:
        spark.stop()
    print("3. reading both topics back with a plain Kafka consumer (read_committed):")
    report = verify.check_derived_topic(bootstrap, SOURCE, TARGET, V, P, config=config)
    print(report.summary())
    return report.ok
