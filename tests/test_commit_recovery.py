"""A table is never left unwritable and nothing is lost without a word: a commit Kafka cut
short (the driver died between two transaction commits and nothing finished the commit
within transaction.timeout.ms), a query stopped while it commits, a writer that stood
still past its claim timeout. Every check reads the derived topic back with a plain
read_committed consumer.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from test_exactly_once import INSERT, ROWS, assert_exactly_once, run_script, stable_offsets_reach_the_end, why
from test_streaming import SELECT, STREAM_SCRIPT, assert_exactly_once_in_order, create, run_available_now, run_driver

from kplex.admin import recover
from kplex.status import status
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]
# Short enough that Kafka aborts what a dead driver left within a test, long enough for a micro-batch.
TIMEOUT_MS = "15000"
SHORT_TIMEOUT = {"spark.sql.catalog.kplex.kafka.transaction.timeout.ms": TIMEOUT_MS}


def await_kafka_aborts(bootstrap: str, topic: str) -> None:
    """Waits until the broker has aborted every open transaction on `topic` (nothing may
    touch the table meanwhile): its last stable offset reaches the end."""
    deadline = time.time() + 120
    while not stable_offsets_reach_the_end(bootstrap, topic):
        assert time.time() < deadline, f"Kafka did not abort the open transactions on {topic}"
        time.sleep(1)


def test_an_epoch_kafka_cut_short_is_completed_exactly_once_when_the_query_restarts(
        spark, bootstrap, fresh_name, tmp_path):
    """The query's second run: the driver halts after the first of an epoch's two transaction
    commits; nothing touches the table until Kafka has aborted the other. `kplex recover`
    names what is missing; a new query may not resume from the table over it; the restarted
    query, on more cores, writes just that; the table takes an INSERT after."""
    source, target = fresh_name("views_cut"), fresh_name("by_user_cut")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=41)
    create(spark, target, delay_ms=1_000)
    chk = tmp_path / "chk"
    first = run_driver(bootstrap, source, target, chk, SHORT_TIMEOUT)
    assert first is not None and "DONE" in first.stdout, first.stderr[-3000:]
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=43,
                               start_ms=datagen.ARTICLE_START_MS + 5_000_000)
    halted = run_driver(bootstrap, source, target, chk, {**SHORT_TIMEOUT, "spark.kplex.testing.halt_after_commits": "1"})
    assert halted is not None and "DONE" not in halted.stdout
    await_kafka_aborts(bootstrap, target)
    visible = len(verify.read_topic(bootstrap, target))
    assert 300 < visible < 600, visible  # one task's transaction of the epoch (300 records read); the rest: aborted

    said = recover(bootstrap, target)
    assert "was cut short" in said, said
    assert re.search(r"virtual partitions \[[\d, ]+\] are in the table, \[[\d, ]+\] are missing", said), said
    assert "restarts from its checkpoint" in said, said

    # A new query resuming from the table would start before the cut-short epoch, and read its
    # committed part again: refused, naming the query whose rerun completes it; nothing written.
    resumed = run_driver(bootstrap, source, target, tmp_path / "chk_resumed", SHORT_TIMEOUT, starting="table")
    assert "DONE" not in resumed.stdout
    assert re.search(r"\[KPLEX_RESUME_FROM_TABLE\] the last stream from topic '\w+' into table \w+, query [-\w]+, has an"
                     r" epoch Kafka cut short .* \(epoch \d+: virtual partitions \[[\d, ]+\] of it are in the table",
                     resumed.stderr), resumed.stderr[-3000:]
    assert len(verify.read_topic(bootstrap, target)) == visible

    # Restarted with more parallelism than it had (executors added): the rerun of the cut-short
    # epoch runs the 2 writer tasks of its first run, the epochs after it 4.
    done = run_driver(bootstrap, source, target, chk, {**SHORT_TIMEOUT, "spark.default.parallelism": "4"})
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    assert_exactly_once_in_order(bootstrap, source, target, 600)
    assert stable_offsets_reach_the_end(bootstrap, target)
    assert "cut short" not in recover(bootstrap, target)  # completed: nothing more to report

    # Writable: an INSERT of later records goes in.
    later = fresh_name("views_later")
    datagen.generate_pageviews(bootstrap, later, 60, partitions=3, users=15, seed=42,
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{later}")
    assert len(verify.read_topic(bootstrap, target)) == 660


def test_an_insert_kafka_cut_short_leaves_the_table_writable_and_says_which_rows_to_write_again(
        spark, bootstrap, fresh_name):
    source, target = fresh_name("views_insert_cut"), fresh_name("insert_cut")
    datagen.generate_pageviews(bootstrap, source, ROWS, partitions=3, users=15, seed=45, out_of_order_ms=3_000)
    spark.sql(f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              " 'kplex.physical_partitions' = '3')")
    done = run_script(f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[2]", conf={{"spark.sql.shuffle.partitions": "4",
                      "spark.sql.adaptive.coalescePartitions.enabled": "false",  # 4 tasks, 4 transactions
                      "spark.kplex.testing.halt_after_commits": "1", **{SHORT_TIMEOUT!r}}})
spark.sql('''{INSERT.format(catalog="kplex", target=target, source=source)}''')
""")
    assert done.returncode != 0, why(done)
    await_kafka_aborts(bootstrap, target)
    visible = len(verify.read_topic(bootstrap, target))
    assert 0 < visible < ROWS, visible

    said = recover(bootstrap, target)
    missing = re.search(r"kplex_vpartition\(<key expression>, 9\) IN \(([\d, ]+)\)", said)
    assert missing, said
    assert "cut short" not in recover(bootstrap, target), "an INSERT's loss is reported once"

    # What the report says to do: the INSERT again, for the missing virtual partitions only.
    key = "kplex_key(get_json_object(CAST(value AS STRING), '$.userid'))"
    spark.sql(INSERT.format(catalog="kplex", target=target, source=source)
              + f" WHERE kplex_vpartition({key}, 9) IN ({missing.group(1)})")
    assert_exactly_once(bootstrap, source, target)


def test_a_query_stopped_while_it_commits_finishes_the_commit(spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_stop"), fresh_name("by_user_stop")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=43)
    create(spark, target, delay_ms=1_000)
    spark.conf.set("spark.kplex.testing.pause_between_commits_ms", "1500")
    try:
        query = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
                 .option("releaseAtEnd", "true").load().selectExpr(*SELECT)
                 .writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
        deadline = time.time() + 120
        while not verify.read_topic(bootstrap, target):  # the first transaction is committed: mid-commit
            assert time.time() < deadline and query.isActive, "no commit started"
            time.sleep(0.2)
        query.stop()
    finally:
        spark.conf.unset("spark.kplex.testing.pause_between_commits_ms")
    # The commit ran to its end before the query stopped: its record is gone, no transaction
    # is left open, and what it wrote is visible.
    assert pending_commit(bootstrap, target) is None
    assert stable_offsets_reach_the_end(bootstrap, target)
    assert len(verify.read_topic(bootstrap, target)) > 0
    run_available_now(spark, source, target, tmp_path / "chk")  # the rest of the run
    assert_exactly_once_in_order(bootstrap, source, target, 600)


def pending_commit(bootstrap: str, table: str) -> bytes | None:
    """The table's commit record in _kplex_commits (a commit under way or left half done), read
    with a plain consumer."""
    latest = {}
    for r in verify.read_topic(bootstrap, "_kplex_commits"):
        latest[r.key] = r.value
    return latest.get(table.encode())


# local[2, 4]: a failed task is tried again, as on a cluster.
PAUSED_STREAM = STREAM_SCRIPT.replace('master="local[2]"', 'master="local[2,4]"').replace("q.awaitTermination()", """try:
    q.awaitTermination()
except Exception as e:
    print("FAILED", str(e), flush=True)
    sys.exit(1)""")


#: What a consumer's offsets request meets while a new topic's partitions get their leaders.
NO_LEADER_YET = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
                 KafkaError._UNKNOWN_PARTITION}


def uncommitted_records(views: list[Consumer], partitions: list[TopicPartition]) -> bool:
    """Whether a partition's end as `views[0]` (read_uncommitted) sees it is past its last
    stable offset as `views[1]` (read_committed) does: records written, not yet committed. Not
    yet while a partition of the topic just made has no leader for the consumers to ask."""
    try:
        return any(views[0].get_watermark_offsets(tp, timeout=10)[1] > views[1].get_watermark_offsets(tp, timeout=10)[1]
                   for tp in partitions)
    except KafkaException as e:
        if e.args[0].code() in NO_LEADER_YET:
            return False
        raise


def test_a_writer_paused_past_its_claim_timeout_is_taken_over_and_fails_cleanly(
        spark, bootstrap, fresh_name, tmp_path):
    """SIGSTOP a driver while its tasks write, for longer than the claim timeout, and run
    `kplex recover` meanwhile: it takes the claim over and fences the paused writer's
    transactions. On SIGCONT the writer fails saying its claim was taken, having committed
    nothing; a restart writes everything once, in order."""
    source, target = fresh_name("views_paused"), fresh_name("by_user_paused")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=44)
    create(spark, target, delay_ms=1_000)
    chk = tmp_path / "chk"
    code = PAUSED_STREAM.format(bootstrap=bootstrap, source=source, target=target, chk=str(chk),
                                conf={"spark.kplex.testing.sleep_ms": "400"}, select=list(SELECT),
                                starting="earliest")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "python")}, start_new_session=True)
    try:
        deadline = time.time() + 180
        # Batch 0's tasks are writing (slowly) once the topic holds records not yet committed:
        # a partition whose end (read_uncommitted) is past its last stable offset (read_committed),
        # as plain consumers see them; only then is the driver paused, holding its claim.
        views = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"watch-{target}", "isolation.level": level})
                 for level in ("read_uncommitted", "read_committed")]
        partitions = [TopicPartition(target, p) for p in range(3)]
        try:
            while not uncommitted_records(views, partitions):
                assert proc.poll() is None and time.time() < deadline, "the query never started writing"
                time.sleep(0.1)
        finally:
            for view in views:
                view.close()
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            seen = status(bootstrap, target)
            assert seen["open_transactions"], seen
            said = recover(bootstrap, target, claim_timeout_ms=3_000)
            assert "fenced" in said, said
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert proc.returncode != 0 and "[KPLEX_CLAIM_TAKEN]" in out and "Nothing of it was committed" in out, out
    assert verify.read_topic(bootstrap, target) == []
    done = run_driver(bootstrap, source, target, chk, {})
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    assert_exactly_once_in_order(bootstrap, source, target, 600)
