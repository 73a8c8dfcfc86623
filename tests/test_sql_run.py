"""``kplex sql run``: first with a stand-in Spark session (order, printing,
failures, checks, dialects), then against the real broker and Spark: the
original job files, translated, give what the hand-written SQL of sql/ gives,
and a failing third statement keeps the first two's effects."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from kplex.cli import main
from kplex.sqltools.errors import CheckFailed, NoBootstrap, StatementFailed
from kplex.sqltools.run import RunSummary, StatementOutcome, run_file
from kplex.sqltools.translate import translate_file

ROOT = Path(__file__).resolve().parents[1]
JOBS = ROOT / "tests" / "sql_cases" / "translate"

THREE_STATEMENTS_AND_A_FOURTH = """\
CREATE TABLE kplex.t TBLPROPERTIES ('kplex.virtual_partitions' = '2', 'kplex.physical_partitions' = '1');
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(offset), value FROM kplex.s;
INSERT INTO kplex.t
SELECT kplex_key(key), kplex_order(offset), value FROM kplex.broken;
CREATE TABLE kplex.never TBLPROPERTIES ('kplex.virtual_partitions' = '2', 'kplex.physical_partitions' = '1');
"""


class FakeFrame:
    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows

    def toLocalIterator(self) -> Iterator[tuple]:  # noqa: N802 - Spark's name
        return iter(self.rows)


class FakeSpark:
    """Records the SQL it is given; fails on a statement naming ``fail_on``."""

    def __init__(self, fail_on: str | None = None, rows: list[tuple] | None = None) -> None:
        self.ran: list[str] = []
        self.fail_on = fail_on
        self.rows = rows or []

    def sql(self, text: str) -> FakeFrame:
        self.ran.append(text)
        if self.fail_on and self.fail_on in text:
            raise RuntimeError(f"[TABLE_OR_VIEW_NOT_FOUND] The table `kplex`.`{self.fail_on}` cannot be found.")
        return FakeFrame(self.rows)


def summary_of(spark: Any) -> dict:
    return {"table": "t", "rows": 3, "rows_per_vp": {"0": 1, "1": 2}}


def write(tmp_path: Path, text: str, name: str = "job.sql") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_statements_run_in_order_and_query_rows_go_to_stdout_tab_separated(tmp_path: Path) -> None:
    job = write(tmp_path, "SET spark.sql.shuffle.partitions = 2;\nSELECT key, value FROM kplex.s;\n")
    spark, out, progress = FakeSpark(rows=[(b"k1", b'{"a":1}'), (None, bytearray(b"v"))]), io.StringIO(), io.StringIO()

    summary = run_file(job, session=spark, out=out, progress=progress)

    assert spark.ran == ["SET spark.sql.shuffle.partitions = 2", "SELECT key, value FROM kplex.s"]
    assert out.getvalue() == 'k1\t{"a":1}\nNULL\tv\n'
    assert [o.printed for o in summary.outcomes] == [None, 2]
    assert "[2/2] line 2: SELECT key, value FROM kplex.s" in progress.getvalue()


def test_a_write_reports_its_rows_and_the_summary_counts_them_per_virtual_partition(tmp_path: Path) -> None:
    job = write(tmp_path, "INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(offset), value FROM kplex.s;\n")
    progress = io.StringIO()

    summary = run_file(job, session=FakeSpark(), progress=progress, write_summary=summary_of)

    assert summary.outcomes[0].rows == 3 and summary.outcomes[0].rows_per_vp == {0: 1, 1: 2}
    assert "done in " in progress.getvalue() and ": 3 rows written to kplex.t" in progress.getvalue()
    assert "  kplex.t: 3 rows (statement 1, line 1)\n    vp 0: 1  vp 1: 2" in progress.getvalue()


def test_a_failing_third_statement_stops_the_run_there_naming_it_and_its_line(tmp_path: Path) -> None:
    job = write(tmp_path, THREE_STATEMENTS_AND_A_FOURTH)
    spark, progress = FakeSpark(fail_on="broken"), io.StringIO()

    with pytest.raises(StatementFailed) as failure:
        run_file(job, session=spark, progress=progress, write_summary=summary_of)

    error = failure.value
    assert (error.number, error.line) == (3, 3)
    assert len(spark.ran) == 3, "the fourth statement must not run"
    assert [o.number for o in error.summary.outcomes] == [1, 2]
    assert str(error).startswith(f"{job}:3: statement 3 failed (INSERT INTO kplex.t): [TABLE_OR_VIEW_NOT_FOUND]")
    assert "stopped at statement 3; statements 1-2 ran and their effects are kept" in str(error)
    assert "FAILED after" in progress.getvalue()


def test_a_file_with_check_errors_runs_nothing(tmp_path: Path) -> None:
    job = write(tmp_path, "SET a = 1;\nINSERT INTO kplex.t SELECT kplex_key(key), kplex_ordr(offset), value FROM kplex.s;\n")
    spark = FakeSpark()
    with pytest.raises(CheckFailed) as failure:
        run_file(job, session=spark)
    assert spark.ran == []
    assert "unknown function kplex_ordr; did you mean kplex_order?" in str(failure.value)


def test_variables_are_substituted_and_other_dialects_transpiled_to_spark_sql(tmp_path: Path) -> None:
    job = write(tmp_path, "INSERT INTO kplex.${target}\nSELECT kplex_key(json_extract_scalar(from_utf8(value), '$.u')),"
                          " kplex_order(offset), value FROM kplex.${source};\n")
    spark = FakeSpark()
    run_file(job, variables={"target": "by_u", "source": "events"}, dialect="trino", session=spark,
             progress=io.StringIO())
    assert spark.ran == ["INSERT INTO kplex.by_u SELECT kplex_key(get_json_object(decode(value, 'utf-8'), '$.u')),"
                         " kplex_order(offset), value FROM kplex.events"]


def test_without_a_broker_anywhere_the_run_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KPLEX_BOOTSTRAP", raising=False)
    with pytest.raises(NoBootstrap, match="Pass --bootstrap HOST:PORT, set KPLEX_BOOTSTRAP"):
        run_file(write(tmp_path, "SELECT 1;\n"))


def test_the_cli_uses_the_bootstrap_comment_of_a_translated_job_and_exits_1_on_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("KPLEX_BOOTSTRAP", raising=False)
    made: list[tuple] = []

    def session(bootstrap: str, master: str | None, conf: dict[str, str], log_level: str) -> FakeSpark:
        made.append((bootstrap, master, conf, log_level))
        return FakeSpark(fail_on="pageviews_by_user\nSELECT")

    monkeypatch.setattr("kplex.sqltools.run._make_session", session)
    job = write(tmp_path, translate_file(JOBS / "repartition_pageviews.json"))

    assert main(["sql", "run", str(job), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]) == 1
    assert made == [("localhost:9092", "local[2]", {"spark.ui.enabled": "false"}, "FATAL")]
    err = capsys.readouterr().err
    assert re.search(r":\d+: statement 3 failed \(INSERT INTO kplex.pageviews_by_user\)", err), err


def test_dry_run_prints_the_spark_sql_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = write(tmp_path, "SELECT CAST(json_extract_scalar(x, '$.a') AS BIGINT) FROM kplex.t;\n")
    assert main(["sql", "run", str(job), "--dialect", "trino", "--dry-run"]) == 0
    assert capsys.readouterr().out == "SELECT CAST(get_json_object(x, '$.a') AS BIGINT) FROM kplex.t;\n"


def test_the_summary_lists_each_write_with_its_rows_per_virtual_partition() -> None:
    summary = RunSummary("job.sql", [
        StatementOutcome(1, 1, "SET a = 1", 0.1),
        StatementOutcome(2, 3, "INSERT INTO kplex.t", 2.0, "t", 10, {v: 1 for v in range(10)}),
        StatementOutcome(3, 5, "INSERT INTO kplex.t", 1.0, "t", 0, {}, already_written=10),
    ], 3.25)
    assert summary.format() == (
        "summary: 3 statement(s) of job.sql in 3.2 s\n"
        "  kplex.t: 10 rows (statement 2, line 3)\n"
        "    vp 0: 1  vp 1: 1  vp 2: 1  vp 3: 1  vp 4: 1  vp 5: 1  vp 6: 1  vp 7: 1\n"
        "    vp 8: 1  vp 9: 1\n"
        "  kplex.t: 0 rows, 10 already written (statement 3, line 5)")


# --- against the real broker and Spark ----------------------------------------


def renamed(sql: str, names: dict[str, str]) -> str:
    """``sql`` with each ``kplex.<old>`` table replaced by ``kplex.<new>``."""
    for old, new in names.items():
        sql = re.sub(rf"\bkplex\.{re.escape(old)}\b", f"kplex.{new}", sql)
    return sql


def run_text(spark: Any, tmp_path: Path, sql: str, name: str) -> tuple[RunSummary, str]:
    """Run SQL text through ``kplex sql run`` in the shared session; restore
    the shuffle setting a translated job may SET."""
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    out = io.StringIO()
    try:
        summary = run_file(write(tmp_path, sql, name), session=spark, out=out, progress=io.StringIO())
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    return summary, out.getvalue()


def derived(bootstrap: str, topic: str) -> tuple[list, dict]:
    """Every record as (partition, vp, order, key, value), sorted, and each
    virtual partition's values in order: offsets left out, since transaction
    markers may sit elsewhere when the same rows are written by other tasks."""
    from kplex.testing.verify import read_topic, virtual_partition_sequences

    records = read_topic(bootstrap, topic)
    rows = sorted((r.partition, r.headers.get("kplex.vp"), r.headers.get("kplex.order"), r.key, r.value)
                  for r in records)
    return rows, virtual_partition_sequences(records)


@pytest.mark.parametrize("job", ["repartition_pageviews.json", "repartition_pageviews.toml"])
def test_a_seed_job_translated_gives_the_same_topic_as_the_hand_written_sql(
        spark, bootstrap: str, fresh_name, tmp_path: Path, job: str) -> None:
    from kplex.testing import datagen

    source, hand, translated = fresh_name("pageviews"), fresh_name("by_user_hand"), fresh_name("by_user_job")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=20, seed=5, out_of_order_ms=2_000)

    hand_sql = renamed((ROOT / "sql" / "pageviews_by_user.sql").read_text(),
                       {"pageviews_by_user": hand, "pageviews": source})
    job_sql = renamed(translate_file(JOBS / job),
                      {"pageviews_by_user": translated, "pageviews": source, "pageviews_by_page": source})
    hand_run, _ = run_text(spark, tmp_path, hand_sql, "hand.sql")
    job_run, _ = run_text(spark, tmp_path, job_sql, "job.sql")

    hand_rows, hand_vps = derived(bootstrap, hand)
    job_rows, job_vps = derived(bootstrap, translated)
    assert len(hand_rows) == 2_000
    assert job_rows == hand_rows
    assert job_vps == hand_vps
    assert job_run.outcomes[-1].rows_per_vp == hand_run.outcomes[-1].rows_per_vp


def test_the_clickstream_job_translated_prints_the_same_timeline_as_the_hand_written_sql(
        spark, bootstrap: str, fresh_name, tmp_path: Path) -> None:
    from confluent_kafka import Producer

    from kplex.testing.datagen import ensure_topic

    source = fresh_name("clickstream")
    ensure_topic(bootstrap, source, 6)
    producer = Producer({"bootstrap.servers": bootstrap})
    clicks = [{"_time": 1565780158477 + 37 * i - 900 * (i % 5), "userid": i % 11, "ip": f"10.0.0.{i % 250}",
               "status": "200", "request": f"GET /site/{i}.html HTTP/1.1"} for i in range(600)]
    for click in clicks:
        producer.produce(source, key=str(click["userid"]).encode(), value=json.dumps(click).encode())
    assert producer.flush(60) == 0
    hand_sql = renamed((ROOT / "sql" / "clickstream_timeline.sql").read_text(),
                       {"clickstream_timeline": fresh_name("timeline_hand"), "clickstream": source})
    job_sql = renamed(translate_file(JOBS / "consistent_read.toml"),
                      {"clickstream_timeline": fresh_name("timeline_job"), "clickstream": source})

    _, hand_out = run_text(spark, tmp_path, hand_sql, "hand.sql")
    _, job_out = run_text(spark, tmp_path, job_sql, "job.sql")

    times = [json.loads(line)["_time"] for line in job_out.splitlines()]
    assert times == sorted(c["_time"] for c in clicks)
    assert job_out == hand_out


def test_a_failing_third_statement_leaves_the_first_two_statements_effects_on_the_broker(
        spark, bootstrap: str, fresh_name, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    from kplex.sqltools.definitions import read_table_definitions
    from kplex.testing import datagen
    from kplex.testing.verify import read_topic

    source, kept, never = fresh_name("pageviews"), fresh_name("kept"), fresh_name("never")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, seed=3)
    sql = f"""\
CREATE TABLE kplex.{kept} TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3');
INSERT INTO kplex.{kept}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')), kplex_order(offset), value FROM kplex.{source};
INSERT INTO kplex.{kept}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.no_such_field')), kplex_order(offset), value
FROM kplex.{source};
CREATE TABLE kplex.{never} TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3');
"""
    with pytest.raises(StatementFailed) as failure:
        run_text(spark, tmp_path, sql, "failing.sql")

    assert (failure.value.number, failure.value.line) == (3, 4)
    assert len(read_topic(bootstrap, kept)) == 300, "statement 2's rows, and none of statement 3's"
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    assert never not in topics
    stored = read_table_definitions(bootstrap, timeout=10)
    assert kept in stored and never not in stored
    assert (stored[kept].virtual_partitions, stored[kept].physical_partitions) == (3, 3)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("args, environ, said", [
    (["--remote", "http://127.0.0.1:15002"], {},
     "http://127.0.0.1:15002 is not a Spark Connect address: give sc://HOST:PORT"),
    (["--remote", "sc://127.0.0.1:15002", "--master", "local[2]"], {},
     "--master local[2] and a Spark Connect server (sc://127.0.0.1:15002, from --remote) are both given"),
    (["--master", "local[2]"], {"SPARK_REMOTE": "sc://127.0.0.1:15002"},
     "--master local[2] and a Spark Connect server (sc://127.0.0.1:15002, from $SPARK_REMOTE) are both given"),
    (["--remote", "sc://127.0.0.1:{closed}"], {},
     "cannot reach the Spark Connect server at sc://127.0.0.1:{closed} ("),
])
def test_a_remote_run_that_cannot_start_names_the_culprit_and_starts_no_spark(
        args: list[str], environ: dict[str, str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``kplex sql run --remote`` (or ``$SPARK_REMOTE``): a wrong address, one beside --master, or a server
    not listening is exit 2 with the option and the address named, before any Spark session is made."""
    closed = _closed_port()
    for name, value in environ.items():
        monkeypatch.setenv(name, value)

    def no_session(*_: Any) -> None:
        raise AssertionError("a Spark session was made")

    monkeypatch.setattr("kplex.sqltools.run._make_session", no_session)
    job = write(tmp_path, "-- kplex.bootstrap = 127.0.0.1:9092\nSELECT 1;\n")
    assert main(["sql", "run", str(job), *(a.format(closed=closed) for a in args)]) == 2
    assert capsys.readouterr().err.startswith("error: " + said.format(closed=closed))


def test_a_spark_that_cannot_start_is_exit_2_with_what_to_check_not_a_traceback(tmp_path: Path) -> None:
    """The real launcher, given a JAVA_HOME with no Java in it."""
    job = write(tmp_path, "SELECT 1;\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_SUBMIT_ARGS")}
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    done = subprocess.run([sys.executable, "-m", "kplex", "sql", "run", str(job), "--bootstrap", "127.0.0.1:9092"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"error: cannot start Spark with kplex: Spark's JVM exited as it started (its own words are above):" \
           f" JAVA_HOME={tmp_path / 'no-java'} must hold a Java" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("level, made", [("warn", "WARN"), ("ERROR", "ERROR"), (None, "FATAL")])
def test_spark_log_level_is_any_of_sparks_in_any_case(level: str | None, made: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    levels: list[str] = []

    def session(bootstrap: str, master: str | None, conf: dict[str, str], log_level: str) -> FakeSpark:
        levels.append(log_level)
        return FakeSpark()

    monkeypatch.setattr("kplex.sqltools.run._make_session", session)
    job = write(tmp_path, "SELECT 1;\n")
    assert main(["sql", "run", str(job), "--bootstrap", "broker:9092",
                 *(["--spark-log-level", level] if level else [])]) == 0
    assert levels == [made]


def test_an_unknown_spark_log_level_is_exit_2_naming_the_flag_before_spark_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_session(*_: Any) -> None:
        raise AssertionError("a Spark session was made")

    monkeypatch.setattr("kplex.sqltools.run._make_session", no_session)
    job = write(tmp_path, "SELECT 1;\n")
    with pytest.raises(SystemExit) as stopped:
        main(["sql", "run", str(job), "--bootstrap", "broker:9092", "--spark-log-level", "verbose"])
    assert stopped.value.code == 2
    assert ("argument --spark-log-level: 'verbose' is not one of Spark's log levels: ALL, DEBUG, ERROR, FATAL, INFO,"
            " OFF, TRACE, WARN") in capsys.readouterr().err


def test_spark_log_level_on_a_remote_server_is_said_to_be_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The server's log is the server's: a Connect client cannot set it."""
    monkeypatch.setattr("kplex.sqltools.remote.remote_session", lambda *_: FakeSpark())
    monkeypatch.setattr("kplex.sqltools.remote.end_session", lambda *_: None)
    job = write(tmp_path, "SELECT 1;\n")
    assert main(["sql", "run", str(job), "--remote", "sc://127.0.0.1:15002", "--spark-log-level", "INFO"]) == 0
    assert capsys.readouterr().err.startswith(
        "kplex sql run: --spark-log-level is ignored on a Spark Connect server (sc://127.0.0.1:15002): its log is"
        " the server's\n")
