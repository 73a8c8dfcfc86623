"""Read-time tables ('kplex.source'): V ordered virtual partitions computed while reading.

The reference is what a materialized INSERT of the same definition wrote, read back
with a plain consumer: the on-the-fly partitions must hold the same rows in the same
order, through Spark and through the Python reader.
"""
from __future__ import annotations

import uuid

import pytest

from kplex.errors import ExpressionError, OptionError, ReadOnlyTableError, translated
from kplex.reader import TableReader, read_table_definition
from kplex.testing import verify
from read_support import (
    USERID,
    consumer_sequences,
    create_materialized,
    create_virtual,
    pageviews,
    python_sequences,
    spark_sequences,
)

LAG_MS = 3_000


@pytest.fixture(scope="module")
def source(bootstrap: str) -> str:
    """3 partitions keyed by page; viewtime out of order by up to LAG_MS within and across them."""
    topic = f"read_virtual_{uuid.uuid4().hex[:8]}"
    pageviews(bootstrap, topic, 600, out_of_order_ms=LAG_MS)
    return topic


@pytest.mark.parametrize("v,p", [(9, 3), (1, 1)], ids=["V=9 over P=3", "V=1 one global order"])
def test_virtual_partitions_read_on_the_fly_match_a_materialized_insert(
        spark, bootstrap, source, fresh_name, v, p):
    live, stored = fresh_name("live"), fresh_name("stored")
    create_virtual(spark, live, source, v, max_delay_ms=str(LAG_MS))
    create_materialized(spark, stored, source, v, p)
    expected = consumer_sequences(bootstrap, stored)
    assert sum(map(len, expected.values())) == 600

    df = spark.table(f"kplex.{live}")
    assert df.rdd.getNumPartitions() == v
    assert spark_sequences(df.collect()) == expected
    assert python_sequences(TableReader(bootstrap, live)) == expected


def test_a_virtual_table_creates_no_topic_and_stores_a_self_describing_definition(
        spark, bootstrap, source, fresh_name):
    live = fresh_name("live")
    create_virtual(spark, live, source, 4)
    definition = read_table_definition(bootstrap, live)
    assert definition["topic"] == source
    assert definition["virtual_partitions"] == 4 and definition["physical_partitions"] == 3
    assert definition["properties"] == {
        "kplex.source": source, "kplex.virtual_partitions": "4", "kplex.physical_partitions": "3",
        "kplex.key": USERID, "kplex.order": definition["properties"]["kplex.order"],
        "kplex.max_delay_ms": "0", "kplex.late_policy": "fail"}
    with pytest.raises(ValueError, match="does not exist"):
        verify.read_topic(bootstrap, live, timeout=10)
    assert live in {r.tableName for r in spark.sql("SHOW TABLES IN kplex").collect()}


def test_writing_into_a_virtual_table_is_refused_and_dropping_it_keeps_the_source(
        spark, bootstrap, source, fresh_name):
    live = fresh_name("live")
    create_virtual(spark, live, source, 4)
    with pytest.raises(ReadOnlyTableError, match=source), translated():
        spark.sql(f"INSERT INTO kplex.{live} SELECT kplex_key('k'), kplex_order(1L), 'v'")
    spark.sql(f"DROP TABLE kplex.{live}")
    assert read_table_definition(bootstrap, live) is None
    assert len(verify.read_topic(bootstrap, source)) == 600


@pytest.mark.parametrize("prop,text,message", [
    ("key", "no_such_column", "no_such_column"),
    ("order", USERID, "STRING"),
    ("order", "rand()", "not deterministic"),
], ids=["unknown column", "order of a wrong type", "non-deterministic"])
def test_a_bad_key_or_order_expression_is_refused_when_the_table_is_created(
        spark, bootstrap, source, fresh_name, prop, text, message):
    live = fresh_name("bad")
    with pytest.raises(ExpressionError, match=message), translated():
        create_virtual(spark, live, source, 4, **{prop: text})
    assert read_table_definition(bootstrap, live) is None


def test_side_topic_policy_needs_a_late_topic(spark, source, fresh_name):
    with pytest.raises(OptionError, match="kplex.late_topic"), translated():
        create_virtual(spark, fresh_name("bad"), source, 4, late_policy="side_topic")
