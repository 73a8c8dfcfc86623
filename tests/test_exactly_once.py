"""G3: an INSERT is all or nothing for read_committed consumers.

Faults are real: tasks that throw after their rows reached the broker, an executor
JVM that halts, a driver process killed with SIGKILL, a broker stopped mid-write.
Counting is done by a plain confluent-kafka consumer (kplex.testing.verify), which also
checks per-virtual-partition order (G2) in every case.
"""
from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kplex.errors import translated
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]
ROWS = 2_000
INSERT = """INSERT INTO {catalog}.{target}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)),
       value
FROM kplex.{source}"""


@pytest.fixture(scope="module")
def source(bootstrap: str) -> str:
    topic = f"pageviews_eos_{uuid.uuid4().hex[:8]}"  # unique: a reused broker (KPLEX_BOOTSTRAP) keeps topics
    datagen.generate_pageviews(bootstrap, topic, ROWS, partitions=3, users=15, seed=5, out_of_order_ms=3_000)
    return topic


@pytest.fixture
def faults(spark):
    """Sets spark.kplex.testing.* for one test, and always clears them."""
    keys: list[str] = []

    def set_(**settings: object) -> None:
        for key, value in settings.items():
            keys.append(f"spark.kplex.testing.{key}")
            spark.conf.set(keys[-1], str(value))
    yield set_
    for key in keys:
        spark.conf.unset(key)


def create(spark, table: str, catalog: str = "kplex", delivery: str = "exactly_once") -> None:
    spark.sql(f"CREATE TABLE {catalog}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3', 'kplex.delivery' = '{delivery}')")


def uncommitted_count(bootstrap: str, topic: str) -> int:
    return len(verify.read_topic(bootstrap, topic, isolation="read_uncommitted"))


def assert_exactly_once(bootstrap: str, source: str, target: str) -> None:
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == ROWS


def test_tasks_failing_after_sending_part_of_their_rows_are_retried_and_every_row_lands_once(
        spark, bootstrap, source, fresh_name, faults):
    target = fresh_name("retried")
    create(spark, target)
    faults(fail_after_rows=100)
    spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    assert_exactly_once(bootstrap, source, target)
    assert uncommitted_count(bootstrap, target) > ROWS  # the failed attempts did write, then were aborted


def test_at_least_once_mode_shows_the_duplicates_that_exactly_once_hides(
        spark, bootstrap, source, fresh_name, faults):
    target = fresh_name("alo")
    create(spark, target, delivery="at_least_once")
    faults(fail_after_rows=100)
    spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.missing == 0 and report.duplicated > 0


def test_a_job_that_fails_for_good_shows_no_row_and_a_rerun_writes_each_row_once(
        spark, bootstrap, source, fresh_name, faults):
    target = fresh_name("failed")
    create(spark, target)
    faults(fail_after_rows=100, fail_attempts=-1)
    with pytest.raises(Exception, match="injected failure"), translated():
        spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    assert verify.read_topic(bootstrap, target) == []
    assert uncommitted_count(bootstrap, target) > 0
    spark.conf.unset("spark.kplex.testing.fail_after_rows")
    spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    assert_exactly_once(bootstrap, source, target)


def run_script(code: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "python")})


def why(result: subprocess.CompletedProcess) -> str:
    """The Python traceback of a failed script, not Spark's shutdown noise after it."""
    start = result.stderr.find("Traceback")
    return result.stderr[start:start + 4000] if start >= 0 else result.stderr[-4000:]


def cluster_job(bootstrap: str, source: str, target: str, conf: dict[str, str],
                master: str = "local-cluster[2,1,1024]") -> str:
    """A script running the INSERT on two executor JVMs, then printing the table's
    transactional ids (as seen by the transaction coordinators)."""
    return f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master={master!r}, conf={conf!r})
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3')")
spark.sql('''{INSERT.format(catalog="kplex", target=target, source=source)}''')
jvm = spark._jvm
props = jvm.java.util.Properties()
props.put("bootstrap.servers", {bootstrap!r})
admin = jvm.io.kplex.shaded.org.apache.kafka.clients.admin.Admin.create(props)
ids = sorted(t.transactionalId() for t in admin.listTransactions().all().get()
             if t.transactionalId().startswith("kplex.{target}."))
print("EXECUTORS", spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)
print("TXNS", " ".join(ids))
admin.close()
spark.stop()
"""


@pytest.fixture(scope="module")
def two_host_cluster(tmp_path_factory):
    """A standalone Spark master and two workers on two loopback hosts (127.0.0.2 and
    127.0.0.3): Spark launches a speculative copy only on another host than the
    original attempt's, and local-cluster's executors all share one."""
    import socket

    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_NO_DAEMONIZE": "1"}

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    port, logs = free_port(), tmp_path_factory.mktemp("standalone")
    spark_class = str(home / "bin" / "spark-class")
    processes = [subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(free_port())], env=env, stdout=open(logs / "master.log", "w"),
        stderr=subprocess.STDOUT, start_new_session=True)]
    for host in ("127.0.0.2", "127.0.0.3"):
        processes.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", host, "--cores", "1",
             "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(logs / host),
             f"spark://127.0.0.1:{port}"], env=env, stdout=open(logs / f"{host}.log", "w"),
            stderr=subprocess.STDOUT, start_new_session=True))
    try:
        deadline = time.monotonic() + 120
        while (logs / "master.log").read_text().count("Registering worker") < 2:
            assert time.monotonic() < deadline, (logs / "master.log").read_text()[-2000:]
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in processes:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_speculative_copies_of_a_slow_task_change_nothing(bootstrap, source, fresh_name, two_host_cluster):
    """Whether Spark launches a speculative copy is the scheduler's call (timing, free
    executors): every run must be exactly once, and at least one of up to three runs must
    have had a second attempt, or the test proved nothing and fails."""
    conf = {
        "spark.sql.shuffle.partitions": "3", "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.driver.host": "127.0.0.1", "spark.speculation": "true",
        # Schedule only once both executors are up: with one, there is no other host to
        # put a speculative copy on (standalone mode waits for none by default).
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.speculation.interval": "200ms", "spark.speculation.quantile": "0.5",
        "spark.speculation.multiplier": "1.5", "spark.speculation.minTaskRuntime": "500ms",
        # Judge the straggler by its run time alone, not by the record rates that reach
        # the driver only with executor heartbeats.
        "spark.speculation.efficiency.enabled": "false",
        "spark.kplex.testing.sleep_ms": "1500"}
    runs = []
    for _ in range(3):
        target = fresh_name("speculative")
        result = run_script(cluster_job(bootstrap, source, target, conf, master=two_host_cluster))
        assert result.returncode == 0, why(result)
        assert_exactly_once(bootstrap, source, target)
        txns = result.stdout.split("TXNS", 1)[1].split()
        runs.append((txns, result.stdout.split("TXNS", 1)[0][-300:]))
        if any(not t.endswith(".0") for t in txns):  # a second (speculative) attempt ran
            return
    pytest.fail(f"no run had a speculative attempt: {runs}")


def test_an_executor_jvm_killed_mid_write_changes_nothing(spark, bootstrap, source, fresh_name):
    """The executor running partition 0 halts after 50 rows reached the broker. Its map
    outputs die with it (no external shuffle service), so Spark may rerun whole stages,
    and now and then gives up: the job then must fail cleanly (nothing visible), and a
    rerun must write every row once. Either way, nothing is lost or doubled."""
    target = fresh_name("lostexec")
    # 3 shuffle partitions, so that partition 0 (whose executor halts) has rows.
    result = run_script(cluster_job(bootstrap, source, target, {
        "spark.sql.shuffle.partitions": "3", "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.task.maxFailures": "8", "spark.stage.maxConsecutiveAttempts": "8",
        "spark.kplex.testing.halt_after_rows": "50"}))
    assert uncommitted_count(bootstrap, target) > 0  # the halted attempt did write
    if result.returncode == 0:
        txns = result.stdout.split("TXNS", 1)[1].split()
        assert any(not t.endswith(".0.0") for t in txns), txns  # partition 0 ran again elsewhere
    else:
        assert verify.read_topic(bootstrap, target) == [], why(result)
        spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    assert_exactly_once(bootstrap, source, target)


def stable_offsets_reach_the_end(bootstrap: str, topic: str) -> bool:
    """True when read_committed consumers can read to the end: LSO == high watermark."""
    ends = {}
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-lso-probe",
                             "isolation.level": isolation})
        try:
            ends[isolation] = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                               for p in range(3)]
        finally:
            consumer.close()
    return ends["read_committed"] == ends["read_uncommitted"]


def test_a_driver_killed_mid_write_is_cleaned_up_by_the_next_run(spark, bootstrap, source, fresh_name):
    target = fresh_name("deaddriver")
    create(spark, target)
    job = subprocess.Popen([sys.executable, "-c", f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[2]", conf={{"spark.sql.shuffle.partitions": "4",
                      "spark.kplex.testing.sleep_ms": "5000"}})
spark.sql('''{INSERT.format(catalog="kplex", target=target, source=source)}''')
"""], env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while uncommitted_count(bootstrap, target) == 0:  # wait until tasks are writing
            assert job.poll() is None and time.monotonic() < deadline, "the job never started writing"
            time.sleep(1)
        time.sleep(2)
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    assert not stable_offsets_reach_the_end(bootstrap, target)  # open transactions pin the LSO
    assert verify.read_topic(bootstrap, target) == []
    spark.sql(INSERT.format(catalog="kplex", target=target, source=source))
    assert_exactly_once(bootstrap, source, target)
    assert stable_offsets_reach_the_end(bootstrap, target)


def test_the_recover_command_unblocks_read_committed_consumers(spark, bootstrap, fresh_name):
    from confluent_kafka import Producer

    from kplex.admin import recover

    target = fresh_name("recover")
    create(spark, target)
    # What a task of a crashed run leaves behind: an open transaction under the table's ids.
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"kplex.{target}.0.0.0"})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce(target, b"orphan", partition=0)
    producer.flush()
    assert not stable_offsets_reach_the_end(bootstrap, target)
    report = recover(bootstrap, target)
    assert "fenced 1 open transactions" in report
    assert stable_offsets_reach_the_end(bootstrap, target)
    assert verify.read_topic(bootstrap, target) == []


def test_a_broker_stopped_mid_write_loses_and_doubles_nothing(spark, source, bootstrap, fresh_name, faults):
    from kplex.testing.local_kafka import LocalKafka

    with LocalKafka(brokers=3) as cluster:
        spark.conf.set("spark.sql.catalog.kplex3", "io.kplex.spark.KplexCatalog")
        spark.conf.set("spark.sql.catalog.kplex3.kafka.bootstrap.servers", cluster.bootstrap)
        target = fresh_name("failover")
        create(spark, target, catalog="kplex3")
        faults(sleep_ms=600)
        stopped: list[float | BaseException] = []

        def stop() -> None:
            began = time.monotonic()
            try:
                cluster.stop_broker(1)
                stopped.append(began)
            except BaseException as e:  # noqa: BLE001 - reported below, in the test's thread
                stopped.append(e)
        stopping = threading.Timer(3.0, stop)
        stopping.start()
        sql = INSERT.format(catalog="kplex3", target=target, source=source)
        try:
            spark.sql(sql)
        except Exception:  # noqa: BLE001 - failing cleanly is allowed: nothing may be visible
            assert verify.read_topic(cluster.bootstrap, target) == []
            spark.sql(sql)
        ended = time.monotonic()
        stopping.join(120)
        assert stopped and isinstance(stopped[0], float), f"the broker was not stopped: {stopped}"
        assert stopped[0] < ended, "the broker was stopped after the write had ended"
        expected = verify.read_topic(bootstrap, source)
        report = verify.check_records(expected, verify.read_topic(cluster.bootstrap, target), 9, 3)
        assert report.ok, report.summary()


def test_an_exactly_once_insert_returns_only_once_its_records_are_visible(spark, bootstrap, fresh_name):
    # Kafka acknowledges a commit before the markers are on the partitions; the INSERT
    # waits for them, so the last stable offset (what read_committed consumers read up
    # to) has reached the end of every partition when it returns.
    from confluent_kafka import IsolationLevel
    from confluent_kafka import TopicPartition as TP
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for _ in range(3):
        table = fresh_name("visible")
        spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
                  " 'kplex.physical_partitions' = '3')")
        spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(CAST(id % 50 AS STRING)), kplex_order(id),"
                  " CAST(CAST(id AS STRING) AS BINARY) AS value FROM range(3000)")
        partitions = [TP(table, p) for p in range(3)]
        stable = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions},
                                    isolation_level=IsolationLevel.READ_COMMITTED)
        high = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions},
                                  isolation_level=IsolationLevel.READ_UNCOMMITTED)
        for tp in partitions:
            assert stable[tp].result().offset == high[tp].result().offset > 0


def test_the_producers_an_insert_prepares_for_its_commit_are_all_closed_after_it(
        spark, bootstrap, fresh_name, faults):
    # The driver makes a producer per writer task while the tasks write (PreparedCommitters),
    # commits in them, then closes them in the background, and those no task used too: once
    # the INSERT returned, no producer thread of the table's transactional ids stays. While it
    # runs (a writer task slowed by the test hook, seconds long), the same look finds them.
    table = fresh_name("prepared")
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
              " 'kplex.physical_partitions' = '3')")
    threads = spark._jvm.java.lang.Thread

    def left() -> list[str]:
        return sorted(t.getName() for t in threads.getAllStackTraces().keySet()
                      if f"kplex.{table}." in t.getName() or t.getName().startswith("kplex-prepared-committer"))

    faults(sleep_ms=300)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        insert = pool.submit(spark.sql, f"INSERT INTO kplex.{table} SELECT kplex_key(CAST(id % 50 AS STRING)),"
                             " kplex_order(id), CAST(CAST(id AS STRING) AS BINARY) AS value FROM range(3000)")
        seen: set[str] = set()
        while not insert.done():
            seen.update(left())
            time.sleep(0.1)
        insert.result()  # the INSERT's own error, if it failed
    assert any(f"kplex.{table}." in name for name in seen), f"no producer thread of the table found: {seen}"
    deadline = time.monotonic() + 20
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left() == []
    assert len(verify.read_topic(bootstrap, table)) == 3000


def test_a_driver_dead_between_two_commits_is_finished_by_the_next_read(spark, bootstrap, source, fresh_name):
    target = fresh_name("halfcommit")
    create(spark, target)
    done = run_script(f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[2]", conf={{"spark.sql.shuffle.partitions": "4",
                      "spark.sql.adaptive.coalescePartitions.enabled": "false",  # 4 tasks, 4 transactions
                      "spark.kplex.testing.halt_after_commits": "1"}})
spark.sql('''{INSERT.format(catalog="kplex", target=target, source=source)}''')
""")
    assert done.returncode != 0, why(done)  # the driver JVM halted after committing one task's transaction
    partial = len(verify.read_topic(bootstrap, target))
    assert 0 < partial < ROWS, partial  # half visible: what the window looks like
    # Any session touching the table finishes the commit first: here a read, in another driver.
    assert spark.sql(f"SELECT count(*) FROM kplex.{target}").first()[0] == ROWS
    assert_exactly_once(bootstrap, source, target)
    assert stable_offsets_reach_the_end(bootstrap, target)
