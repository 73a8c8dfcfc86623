"""The control plane scoped by table (issue #34), against real brokers, read back with plain
clients: kplex keeps every record of a table in one partition of `_kplex_commits`
(murmur2(table) mod 16), and `kplex control-plane spread` moves a log written before scopes (one
partition) to that layout, refusing while a writer is at work.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from test_streaming import SELECT, create

from kplex.status import CONTROL_PLANE_PARTITIONS, control_plane_partition
from kplex.testing import datagen, verify
from kplex.testing.local_kafka import LocalKafka

ROOT = Path(__file__).resolve().parents[1]
LOG = "_kplex_commits"


def partitions(bootstrap: str, topic: str = LOG) -> int:
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics[topic].partitions)


def latest_by_partition(bootstrap: str) -> dict[int, dict[str, bytes | None]]:
    """Per partition of the log, each key's latest value (None: deleted), read with a plain consumer."""
    out: dict[int, dict[str, bytes | None]] = {}
    for r in verify.read_topic(bootstrap, LOG):
        out.setdefault(r.partition, {})[r.key.decode()] = r.value
    return out


def test_a_tables_records_live_in_its_own_partition_of_the_log(spark, bootstrap, fresh_name):
    source, table = fresh_name("plane_src"), fresh_name("plane")
    datagen.generate_pageviews(bootstrap, source, 100, partitions=3, users=5, seed=1)
    create(spark, table)
    spark.sql(f"INSERT INTO kplex.{table} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    assert partitions(bootstrap) == CONTROL_PLANE_PARTITIONS
    log = latest_by_partition(bootstrap)
    assert log[0]["_layout"] == str(CONTROL_PLANE_PARTITIONS).encode()
    mine = f"epoch/{table}/_inserts"
    where = [p for p, keys in log.items() if keys.get(mine) is not None]
    assert where == [control_plane_partition(table)], where


def test_inserts_reading_on_from_a_kplex_table_keep_one_read_range_per_partition(spark, bootstrap, fresh_name):
    """INSERTs that each read on from where the one before stopped, from a kplex table (a
    transactional topic: a commit marker lies between one INSERT's last row and the next one's
    first), keep the table's `_inserts` mark at one read range per source partition, however
    many there are: a gap that holds no record is joined. A gap with records no INSERT read
    stays, so those are not taken as read (a stream over them later writes or judges them)."""
    source, table = fresh_name("gaps_src"), fresh_name("gaps")
    spark.sql(f"CREATE TABLE kplex.{source} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    create(spark, table)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"gaps-{source}"})

    def grow(first: int) -> dict[int, int]:
        """30 pageviews into the source; its end offsets before them."""
        before = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=30)[1] for p in range(3)}
        spark.sql(f"INSERT INTO kplex.{source} SELECT kplex_key(CAST(id % 7 AS STRING)), kplex_order(id),"
                  f" to_json(named_struct('userid', CONCAT('u', id % 7), 'viewtime', id)) FROM range({first}, {first + 30})")
        return before

    def insert_from(starts: dict[int, int]) -> None:
        where = " OR ".join(f"(partition = {p} AND offset >= {o})" for p, o in starts.items())
        spark.sql(f"INSERT INTO kplex.{table} SELECT {', '.join(SELECT)} FROM kplex.{source} WHERE {where}")

    def reads() -> dict[str, list[list[int]]]:
        mark = json.loads(latest_by_partition(bootstrap)[control_plane_partition(table)][f"epoch/{table}/_inserts"])
        return mark["reads"][source]

    for first in range(0, 150, 30):  # five INSERTs, each reading what the source got since the one before
        insert_from(grow(first))
        assert all(len(ranges) == 1 for ranges in reads().values()), reads()
    read_once = reads()
    ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=30)[1] for p in range(3)}
    assert {int(p): r[0][0] for p, r in read_once.items()} == {p: 0 for p in range(3) if ends[p] > 0}, read_once
    # Rows 150..179 go unread: the next INSERT reads on after them. Their gap stays.
    grow(150)
    insert_from(grow(180))
    skipped = {int(p): ranges for p, ranges in reads().items()}
    for p, ranges in skipped.items():
        assert len(ranges) == 2 and ranges[0] == read_once[str(p)][0], skipped
    # Read read_uncommitted, a marker's gap is not joined: to that reader aborted records are records.
    starts = grow(210)
    where = " OR ".join(f"(partition = {p} AND offset >= {o})" for p, o in starts.items())
    (spark.read.format("kplex").option("table", source).option("kafka.isolation.level", "read_uncommitted").load()
     .where(where).selectExpr(*SELECT).writeTo(f"kplex.{table}").append())
    uncommitted = {int(p): ranges for p, ranges in reads().items()}
    assert all(len(uncommitted[p]) == 3 and uncommitted[p][:2] == skipped[p] for p in skipped), uncommitted
    # What the table holds: each INSERT's rows once (150 + 30 + 30), none of the unread ones.
    written = sorted(json.loads(r.value)["viewtime"] for r in verify.read_topic(bootstrap, table))
    assert written == [*range(150), *range(180, 240)]
    consumer.close()


def spread(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-m", "kplex", "control-plane", "spread", "--bootstrap", bootstrap, *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_a_log_written_before_scopes_is_spread_by_table_once_no_writer_is_at_work(tmp_path):
    """A one-partition log as an earlier kplex wrote it: marks of two tables, a stale claim of a
    third, a taken-over marker. A live claim refuses the spread, naming its table, and nothing
    changes; once it is gone the spread moves each table's records to its partition (in their
    order, the stale claim keeping its age), writes the layout record, deletes the originals;
    run again, it has nothing to do."""
    with LocalKafka(brokers=1, workdir=tmp_path / "broker") as cluster:
        bootstrap = cluster.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(LOG, 1, 1, config={"cleanup.policy": "compact"})]).values():
            future.result(30)
        now = int(time.time() * 1000)
        old = [("epoch/alpha/q1", {"table": "alpha", "query": "q1", "epoch": 3, "highs": {}, "written": {"0": 7},
                                   "held": []}, now - 5_000),
               ("epoch/beta/_inserts", {"table": "beta", "query": "_inserts", "epoch": 0, "highs": {},
                                        "written": {"2": 9}, "held": []}, now - 4_000),
               ("writer-taken/gamma/c1", {"by": "x"}, now - 3_000),
               ("writer/gamma/c2", {"query": "dead", "beat": 4}, now - 3_600_000)]
        producer = Producer({"bootstrap.servers": bootstrap})
        for key, value, at in old:
            producer.produce(LOG, key=key, value=json.dumps(value).encode(), partition=0, timestamp=at)
        producer.produce(LOG, key="writer/delta/live", value=b'{"query":"running","beat":1}', partition=0)
        assert producer.flush(30) == 0

        # Live: renewed within the claim timeout (a long one here, so that it stays live while the
        # command's JVM starts).
        refused = spread(bootstrap, "--claim-timeout-ms", "600000")
        assert refused.returncode != 0, refused.stdout + refused.stderr[-2000:]
        assert "KPLEX_CONTROL_PLANE_BUSY" in refused.stderr and "table delta" in refused.stderr, refused.stderr[-2000:]
        assert partitions(bootstrap) == 1, "nothing changed"

        producer.produce(LOG, key="writer/delta/live", value=None, partition=0)
        assert producer.flush(30) == 0
        done = spread(bootstrap)
        assert done.returncode == 0, done.stderr[-3000:]
        assert partitions(bootstrap) == CONTROL_PLANE_PARTITIONS
        log = latest_by_partition(bootstrap)
        assert log[0]["_layout"] == str(CONTROL_PLANE_PARTITIONS).encode()
        moved = 0
        for key, value, at in old:
            home = control_plane_partition(key.split("/")[1])
            assert json.loads(log[home][key]) == value, key
            if home != 0:
                moved += 1
                assert log[0][key] is None, f"{key}: its original in partition 0 is deleted"
        assert f"({moved} records moved out of partition 0)" in done.stdout, done.stdout
        # The stale claim keeps its age: its copy carries its timestamp.
        copies = {r.key.decode(): r.timestamp for r in verify.read_topic(bootstrap, LOG)
                  if r.partition == control_plane_partition("gamma") and r.value is not None}
        assert copies["writer/gamma/c2"] == now - 3_600_000
        again = spread(bootstrap)
        assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout + again.stderr[-2000:]


def test_a_stream_over_a_thousand_virtual_partitions_records_each_epochs_changes_and_is_resumed_from_them(
        spark, bootstrap, fresh_name, tmp_path):
    """V = 1,000: after a first run writes about 180 virtual partitions, each later run writes 3.
    Their epoch marks hold what changed since a base, not every virtual partition (the log,
    read with a plain consumer); the next run on the checkpoint, and a new query resuming from
    the table, read them whole: every record once, in order, none late."""
    from test_stream_resume import late, resume
    from test_streaming import run_available_now

    source, target = fresh_name("changes_src"), fresh_name("changes_by_user")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=200, seed=3, out_of_order_ms=1_000)
    spark.sql(f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '1000',"
              " 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '1000')")
    chk = tmp_path / "chk"
    total, start = 3_000, datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000
    query = run_available_now(spark, source, target, chk)
    assert query.exception() is None, query.exception()
    for round_ in range(4):
        datagen.generate_pageviews(bootstrap, source, 200, partitions=3, users=3, seed=10 + round_, create=False,
                                   start_ms=start)
        total, start = total + 200, start + 200 * 500 + 60_000
        query = run_available_now(spark, source, target, chk)
        assert query.exception() is None, query.exception()
        assert late(query) == 0

    key = f"epoch/{target}/{query.id}"
    latest = {k: v for k, v in latest_by_partition(bootstrap)[control_plane_partition(target)].items()
              if k.startswith(key)}
    mark, base = json.loads(latest[key]), json.loads(latest[key + "#base"])
    assert "base_epoch" in mark and "base_epoch" not in base, sorted(mark)
    assert len(base["written"]) > 150, "the base holds every virtual partition written"
    # What changed since the base (the last runs' 3 users, and what the first run released at its end).
    assert 0 < 4 * len(mark["written"]) < len(base["written"]), (len(mark["written"]), len(base["written"]))
    assert mark["epoch"] > base["epoch"] >= mark["base_epoch"]

    # A new query on a new checkpoint resumes from the table: it reads the marks whole.
    datagen.generate_pageviews(bootstrap, source, 200, partitions=3, users=3, seed=20, create=False,
                               start_ms=start)
    resumed = resume(spark, source, target, tmp_path / "new", select=SELECT)
    assert resumed.exception() is None, resumed.exception()
    assert late(resumed) == 0
    report = verify.check_derived_topic(bootstrap, source, target, 1_000, 3)
    assert report.ok, report.summary()
    assert report.derived_count == total + 200
