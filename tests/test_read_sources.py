"""Read-time tables over several source topics ('kplex.source' = 'views, clicks'), read
without Spark.

The merge's sources are every (topic, partition) of every listed topic; lateness is
judged per (topic, partition); ties after (order, key, value) go by topic name (as
Spark's read-time plan sorts), then partition, then offset. The definition is written straight into a
metadata topic of the test's own (the record the JVM catalog stores, format in
kplex.definitions), and the expected sequences are computed here from what a plain
consumer reads back from the sources, with kplex.placement.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Producer
from read_support import USERID, produce

from kplex.definitions import parse_definition
from kplex.errors import DefinitionError
from kplex.placement import virtual_partition
from kplex.reader import TableInfo
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]
ORDER = """CAST(get_json_object(CAST(value AS STRING), "$._time") AS BIGINT)"""
V = 4


def definition(name: str, source: str, v: int = V, physical: int = 0, **props: str) -> dict:
    """A read-time table's record in _kplex_tables, as the JVM catalog writes it."""
    properties = {"kplex.source": source, "kplex.virtual_partitions": str(v),
                  "kplex.physical_partitions": str(physical), "kplex.key": USERID, "kplex.order": ORDER,
                  "kplex.max_delay_ms": "0", "kplex.late_policy": "fail"}
    properties.update({f"kplex.{k}": val for k, val in props.items()})
    return {"format": "kplex-table", "version": 1, "name": name, "topic": source, "source": source,
            "virtual_partitions": v, "physical_partitions": physical, "delivery": "exactly_once",
            "key": None, "order": None, "null_key": "fail", "null_order": "fail", "created_ms": 0,
            "properties": properties}


@pytest.fixture(scope="module")
def metadata_topic(bootstrap: str) -> str:
    """The tests' own _kplex_tables: nothing Spark's catalog lists."""
    topic = f"_kplex_tables_sources_{uuid.uuid4().hex[:8]}"
    datagen.ensure_topic(bootstrap, topic, 1)
    return topic


def define(bootstrap: str, metadata_topic: str, record: dict) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(metadata_topic, key=record["name"].encode(), value=json.dumps(record).encode())
    assert producer.flush(30) == 0


def kplex_read(bootstrap: str, metadata_topic: str, args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    return subprocess.run(f"{sys.executable} -m kplex read {args} --metadata-topic {metadata_topic}",
                          shell=True, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def two_clocks(seed: int = 11) -> tuple[dict[int, list[dict]], dict[int, list[dict]]]:
    """views (3 partitions) and clicks (2) on one rising clock, each record lagging it by up to
    500 ms; a few records are in both topics, identical (a tie only the topic breaks)."""
    rng = random.Random(seed)
    views: dict[int, list[dict]] = {p: [] for p in range(3)}
    clicks: dict[int, list[dict]] = {p: [] for p in range(2)}
    clock = 1_565_780_158_477
    for i in range(400):
        clock += rng.randint(0, 40)
        rec = {"_time": clock - rng.randint(0, 500), "userid": rng.randint(1, 15), "n": i}
        if i % 50 == 0:  # in both: views' last partition, clicks' first
            views[2].append(rec)
            clicks[0].append(rec)
        elif rng.random() < 0.5:
            views[rng.randrange(3)].append(rec)
        else:
            clicks[rng.randrange(2)].append(rec)
    return views, clicks


def expected_sequences(bootstrap: str, topics: list[str], v: int) -> dict[int, list[tuple]]:
    """Per virtual partition: (topic, partition, offset) sorted as kplex merges them, computed
    from a plain consumer's read of the sources."""
    rows = []
    for index, topic in enumerate(sorted(topics)):
        for r in verify.read_topic(bootstrap, topic):
            rec = json.loads(r.value)
            key = str(rec["userid"]).encode()
            rows.append((virtual_partition(key, v), (rec["_time"], key, r.value, index, r.partition, r.offset),
                         (topic, r.partition, r.offset)))
    seqs: dict[int, list[tuple]] = defaultdict(list)
    for vp, _, where in sorted(rows, key=lambda row: row[1]):
        seqs[vp].append(where)
    return dict(seqs)


def test_a_table_over_two_topics_merges_both_in_event_time_order_ties_by_topic_name(
        bootstrap, metadata_topic, tmp_path):
    base = f"read_sources_{uuid.uuid4().hex[:8]}"
    views, clicks = f"{base}_views", f"{base}_clicks"  # listed views first: not by name
    view_records, click_records = two_clocks()
    produce(bootstrap, views, view_records)
    produce(bootstrap, clicks, click_records)
    define(bootstrap, metadata_topic, definition(base, f" {views} ,{clicks}", physical=5, max_delay_ms="500"))

    done = kplex_read(bootstrap, metadata_topic, f"{base} --out-dir out --format json --stats", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "408 records out of 408 read; late: 0 dropped" in done.stderr  # 400, 8 of them in both topics
    expected = expected_sequences(bootstrap, [views, clicks], V)
    assert sum(map(len, expected.values())) == 408
    for vp in range(V):
        got = [json.loads(line) for line in (tmp_path / "out" / f"{base}.{vp}").read_text().splitlines()]
        assert [(r["topic"], r["partition"], r["offset"]) for r in got] == expected.get(vp, []), vp
        assert {r["vp"] for r in got} <= {vp}
    ties = [json.loads(line) for vp in range(V)
            for line in (tmp_path / "out" / f"{base}.{vp}").read_text().splitlines()
            if json.loads(json.loads(line)["value"])["n"] % 50 == 0]
    assert [r["topic"] for r in ties] == [clicks, views] * 8  # each tie: clicks (first by name) first


def test_lateness_is_judged_per_topic_partition_not_per_partition_number(bootstrap, metadata_topic, tmp_path):
    base = f"read_sources_late_{uuid.uuid4().hex[:8]}"
    early, ahead = f"{base}_early", f"{base}_ahead"
    produce(bootstrap, ahead, {0: [{"_time": 9_000, "userid": 1}]})
    produce(bootstrap, early, {0: [{"_time": t, "userid": 1} for t in (1_000, 2_000, 500)]})  # 500: late
    define(bootstrap, metadata_topic, definition(base, f"{ahead},{early}", v=1, max_delay_ms="1000",
                                                 late_policy="drop"))
    done = kplex_read(bootstrap, metadata_topic, f"{base} --format json --stats", tmp_path)
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["topic"], r["order"]) for r in got] == [(early, 1_000), (early, 2_000), (ahead, 9_000)]
    assert "1 dropped" in done.stderr  # 500 after 2000 on early-0; 1000 after 9000 on ahead-0 is not late


@pytest.mark.parametrize("source,topics", [
    ("pageviews", ("pageviews",)),
    ("clicks, views", ("clicks", "views")),
    (" views,clicks ,x ", ("views", "clicks", "x")),
    ("clicks,, views,", ("clicks", "views")),
], ids=["one topic", "two, as listed", "names trimmed", "empty entries left out"])
def test_the_source_topics_of_a_definition_are_split_on_commas_and_trimmed(source, topics):
    info = TableInfo.from_definition(parse_definition(json.dumps(definition("t", source))))
    assert info.kind == "read_time" and info.topics == topics


@pytest.mark.parametrize("source", ["a, a", " , "], ids=["duplicate", "no topic"])
def test_a_source_list_with_a_duplicate_or_no_topic_is_refused(source):
    with pytest.raises(DefinitionError, match="kplex.source"):
        TableInfo.from_definition(parse_definition(json.dumps(definition("t", source))))
