"""What a kplex write asks of Spark (WriteRequirements.of), read off the physical plan.

Truth table (the distribution always carries V, the NULL policies and the column names,
so that a refused NULL fails the shuffle that feeds the writers):

| key column        | order column       | null_key | null_order | clustered by                                   | sorted by (NULLS FIRST)          |
| ----------------- | ------------------ | -------- | ---------- | ---------------------------------------------- | -------------------------------- |
| kplex_key (BINARY)| kplex_order BIGINT | fail     | fail       | kplex_write_vpartition(key, 9, order, fail, fail, ...) | order, key, value        |
| `key` STRING      | `order_value` TIMESTAMP | drop | first     | kplex_write_vpartition(key, 9, order, drop, first, ...) | kplex_write_order(order), kplex_key(key), value |
| kplex_key (BINARY)| kplex_order BIGINT | fail     | first      | kplex_write_vpartition(key, 9, order, fail, first, ...) | kplex_write_order(order), key, value |

A TIMESTAMP order sorts by its milliseconds (kplex_write_order), the order value the records
carry, so that records of one millisecond go by key, then value, as a stream's held records do.
Under null_order = first a BIGINT order sorts by kplex_write_order too, which makes a NULL the
value it is written with (Long.MIN_VALUE), so that it ties with that value instead of going first.
"""
from __future__ import annotations

import re

import pytest

CASES = [
    ("kplex_key(CAST(id AS STRING)), kplex_order(id), CAST('v' AS BINARY) AS value",
     {}, ("fail", "fail"), ["kplex_order(id)", "kplex_key(CAST(id AS STRING))", "value"]),
    ("CAST(id AS STRING) AS key, timestamp_millis(id) AS order_value, CAST('v' AS BINARY) AS value",
     {"null_key": "drop", "null_order": "first"}, ("drop", "first"),
     ["invoke(kplex.kplex_write_order(timestamp).invoke(order_value))", "invoke(kplex.kplex_key(string).invoke(key))",
      "value"]),
    ("kplex_key(CAST(id AS STRING)), kplex_order(id), CAST('v' AS BINARY) AS value",
     {"null_order": "first"}, ("fail", "first"),
     ["applyfunctionexpression(kplex.kplex_write_order(bigint), kplex_order(id))", "kplex_key(CAST(id AS STRING))",
      "value"]),
]


@pytest.mark.parametrize("select,props,policies,sort_keys", CASES, ids=["kplex functions", "named columns", "null order first"])
def test_the_write_clusters_by_the_checked_virtual_partition_and_sorts_by_order_then_key_then_value(
        spark, fresh_name, select, props, policies, sort_keys):
    table = fresh_name("plan")
    extra = "".join(f", 'kplex.{k}' = '{v}'" for k, v in props.items())
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3'{extra})")
    plan = spark.sql(f"EXPLAIN INSERT INTO kplex.{table} SELECT {select} FROM range(10)").first()[0]
    exchange = re.search(r"Exchange hashpartitioning\((.*)\), \d+", plan)
    assert exchange, plan
    assert "kplex.kplex_write_vpartition(" in exchange.group(1), plan
    assert ", 9, " in exchange.group(1) and all(p in exchange.group(1) for p in policies), plan
    sort = re.search(r"Sort \[(.*?)\], false", plan)
    assert sort, plan
    keys = [k.strip() for k in re.split(r" ASC NULLS FIRST,?", sort.group(1)) if k.strip()]
    assert [re.sub(r"#\d+L?", "", k) for k in keys] == sort_keys, plan
