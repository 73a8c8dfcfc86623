"""The class archive of a local session's JVM (kplex.class_archive).

The rules (what a plan does) are checked without Spark. The end to end test starts real
sessions in processes of their own, writes to the real broker through each, reads the
records back with a plain consumer, and asks the operating system, not kplex, whether
the JVM mapped the archive (/proc/<pid>/maps).
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kplex import class_archive
from kplex.testing import verify

LOCAL = "local[1]"
@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "archives"
    monkeypatch.setenv(class_archive.ENV, str(directory))
    for name in ("PYSPARK_GATEWAY_PORT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    return directory


@pytest.fixture
def spark_home(tmp_path: Path) -> Path:
    """A stand-in Spark installation: only its jars' names, sizes and times count."""
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"core")
    return home


def a_plan(spark_home: Path, options: dict[str, str] | None = None, **environment: str):
    return class_archive.plan(LOCAL, options or {}, spark_home=spark_home, environment=environment)


def plan_with(spark_home: Path, where: str, text: str):
    """The plan with ``text`` in the builder's setting or the environment variable ``where``."""
    return a_plan(spark_home, {where: text}) if where.startswith("spark.") else a_plan(spark_home, **{where: text})


# What a plan is, by case (W: write the archive, M: map it, -: nothing):
#   cluster master                                         -
#   KPLEX_CLASS_ARCHIVE=off                                -
#   the user chose -Xshare / SharedArchiveFile / ...       -
#   an agent (-javaagent, -agentlib, ...) or a recording   -
#   spark-submit started this process (gateway port set)   -
#   a JDK older than 13                                    -
#   a non-empty conf directory on the class path           -
#   no archive, no lock                                    W, and the lock is taken
#   no archive, a live process holds the lock              -
#   no archive, the lock's process is gone                 W
#   three sessions started writing one, none finished      -  (and .failed)
#   the archive exists                                     M
#   the JDK could not write one before (.failed)           -
#   configure_spark_with_kplex: the archive exists         M, else -  (never W)

def test_a_cluster_master_or_archives_turned_off_get_no_plan(archives, spark_home, monkeypatch):
    assert class_archive.plan("spark://host:7077", {}, spark_home=spark_home, environment={}) is None
    assert class_archive.plan("local-cluster[2,1,1024]", {}, spark_home=spark_home, environment={}) is None
    monkeypatch.setenv(class_archive.ENV, "off")
    assert a_plan(spark_home) is None


@pytest.mark.parametrize("where, text", [
    ("spark.driver.extraJavaOptions", "-Xshare:off"),
    ("spark.driver.defaultJavaOptions", "-XX:SharedArchiveFile=/opt/app.jsa"),
    ("PYSPARK_SUBMIT_ARGS", "--driver-java-options '-XX:ArchiveClassesAtExit=/tmp/x.jsa' pyspark-shell"),
    ("JAVA_TOOL_OPTIONS", "-XX:+AutoCreateSharedArchive"),
    # JDK 25's AOT cache: with kplex's archive beside it, the JVM would not start.
    ("spark.driver.extraJavaOptions", "-XX:AOTCache=/opt/app.aot"),
    ("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:AOTCacheOutput=/tmp/app.aot pyspark-shell"),
    ("JDK_JAVA_OPTIONS", "-XX:AOTMode=record -XX:AOTConfiguration=/tmp/app.aotconf"),
])
def test_a_class_sharing_option_the_user_chose_is_left_alone(archives, spark_home, where, text):
    assert plan_with(spark_home, where, text) is None


@pytest.mark.parametrize("where, text", [
    ("spark.driver.extraJavaOptions", "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=5005"),
    ("spark.driver.defaultJavaOptions", "-Xmx1g -javaagent:/opt/dd-java-agent.jar"),
    ("PYSPARK_SUBMIT_ARGS", "--driver-java-options '-agentpath:/opt/libasyncProfiler.so=start' pyspark-shell"),
    ("JAVA_TOOL_OPTIONS", "-javaagent:/opt/otel.jar"),
    ("spark.driver.extraJavaOptions", "-XX:StartFlightRecording=filename=/tmp/driver.jfr,dumponexit=true"),
    ("spark.driver.extraJavaOptions", "-XX:+FlightRecorder"),
])
def test_a_jvm_with_an_agent_or_a_flight_recording_gets_no_plan(archives, spark_home, where, text):
    assert plan_with(spark_home, where, text) is None
    assert a_plan(spark_home, {"spark.driver.extraJavaOptions": "-Dname=-javaagent"}) is not None


def test_a_process_spark_submit_started_gets_no_plan(archives, spark_home):
    assert a_plan(spark_home, PYSPARK_GATEWAY_PORT="41234") is None


def test_a_jdk_older_than_13_gets_no_plan(archives, spark_home, tmp_path, monkeypatch):
    jdk = tmp_path / "jdk11"
    jdk.mkdir()
    (jdk / "release").write_text('JAVA_VERSION="11.0.22"\n')
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    assert class_archive.java_feature(jdk) == 11
    assert a_plan(spark_home) is None
    (jdk / "release").write_text('JAVA_VERSION="1.8.0_402"\n')
    assert class_archive.java_feature(jdk) == 8


def test_a_non_empty_conf_directory_gets_no_plan(archives, spark_home):
    (spark_home / "conf").mkdir()
    (spark_home / "conf" / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    assert a_plan(spark_home) is None


def test_a_directory_that_cannot_be_written_gets_no_plan_and_no_error(spark_home, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(class_archive.ENV, str(blocker / "archives"))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert a_plan(spark_home) is None


def test_the_first_session_writes_under_a_lock_and_a_second_one_waits_its_turn(archives, spark_home):
    first = a_plan(spark_home)
    assert first is not None and first.writes
    assert first.java_options == f"-XX:ArchiveClassesAtExit={first.part} {class_archive.QUIET}"
    assert first.lock.read_text() == str(os.getpid())
    assert a_plan(spark_home) is None  # the lock's process (this one) is alive
    class_archive.finish(first, None)
    assert not first.lock.exists()


def test_a_lock_whose_process_is_gone_is_taken_over(archives, spark_home):
    first = a_plan(spark_home)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    first.lock.write_text(gone.stdout.strip())
    stale_part = first.part.with_name(f"{first.archive.stem}.{gone.stdout.strip()}.part")
    stale_part.write_bytes(b"half an archive")
    second = a_plan(spark_home)
    assert second is not None and second.writes and second.lock.read_text() == str(os.getpid())
    assert not stale_part.exists()  # a part no live process writes is never promoted
    class_archive.finish(second, None)


def test_after_three_sessions_that_never_finished_writing_kplex_stops_trying(archives, spark_home):
    for attempt in range(class_archive.ATTEMPTS):
        written = a_plan(spark_home)
        assert written is not None and written.writes, f"attempt {attempt + 1}"
        class_archive.started(written, object())  # a JVM was started to write it ...
        atexit.unregister(class_archive.finish)  # ... and its process was killed before its exit hook
        written.lock.unlink()
    assert a_plan(spark_home) is None
    assert written.archive.with_suffix(".failed").exists()


def test_configure_spark_with_kplex_maps_an_archive_a_session_wrote_and_never_writes_one(archives):
    from pyspark.sql import SparkSession

    from kplex.session import DEFAULT_JAVA_OPTIONS_KEY, configure_spark_with_kplex

    before = configure_spark_with_kplex(SparkSession.builder.master("local[2]"), "127.0.0.1:9092")._options
    assert "Archive" not in before.get(DEFAULT_JAVA_OPTIONS_KEY, "")
    assert not archives.exists() or not list(archives.iterdir())  # configuring wrote and locked nothing
    written = class_archive.plan("local[2]", before)  # kplex_session's plan, on the same settings
    written.archive.write_bytes(b"archive")
    class_archive.finish(written, None)
    after = configure_spark_with_kplex(SparkSession.builder.master("local[2]"), "127.0.0.1:9092")._options
    assert after[DEFAULT_JAVA_OPTIONS_KEY].endswith(f"-XX:SharedArchiveFile={written.archive} -Xlog:cds*=off")
    assert class_archive.plan("local[2]", after) is None  # kplex_session then adds nothing


def test_an_archive_in_place_is_mapped_quietly(archives, spark_home):
    written = a_plan(spark_home)
    archives.mkdir(exist_ok=True)
    written.archive.write_bytes(b"archive")
    class_archive.finish(written, None)
    mapped = a_plan(spark_home)
    assert mapped is not None and not mapped.writes
    assert mapped.java_options == f"-XX:SharedArchiveFile={written.archive} -Xlog:cds*=off"
    assert class_archive.with_plan({"spark.driver.defaultJavaOptions": "-XX:+UseParallelGC"}, mapped) == \
        f"-XX:+UseParallelGC {mapped.java_options}"


def test_the_archive_name_follows_the_jars_the_memory_and_the_options_but_not_logging(spark_home):
    home = Path("/nonexistent-jdk")
    key = class_archive.archive_key(home, spark_home, {}, {})
    assert key == class_archive.archive_key(home, spark_home, {"spark.app.name": "other"}, {})
    assert key == class_archive.archive_key(home, spark_home, {}, {"JAVA_TOOL_OPTIONS": "-Xlog:gc:file=/tmp/g"})
    assert key != class_archive.archive_key(home, spark_home, {"spark.driver.memory": "4g"}, {})
    assert key != class_archive.archive_key(home, spark_home, {"spark.driver.extraJavaOptions": "-Xss4m"}, {})
    assert key != class_archive.archive_key(home, spark_home, {}, {"SPARK_SUBMIT_OPTS": "-Dx=1"})
    jar = spark_home / "jars" / "spark-core.jar"
    os.utime(jar, (time.time() + 5, time.time() + 5))
    assert key != class_archive.archive_key(home, spark_home, {}, {})


def _stand_in_jvm(part: Path, writes: bool, code: int) -> subprocess.Popen:
    """A process that, like the JVM, ends when its stdin closes (writing ``part`` first)."""
    script = ("import sys, pathlib; sys.stdin.read(); "
              f"{'pathlib.Path(sys.argv[1]).write_bytes(bytes(1000))' if writes else 'pass'}; sys.exit({code})")
    return subprocess.Popen([sys.executable, "-c", script, str(part)], stdin=subprocess.PIPE)


@pytest.mark.parametrize("writes, code, expect", [
    (True, 0, "archive"),   # written and ended cleanly: renamed into place
    (False, 0, "failed"),   # ended cleanly without writing: the JDK cannot archive this; never tried again
    (True, 1, "nothing"),   # crashed or killed while writing: the part is dropped, a later session tries
])
def test_finishing_renames_only_what_a_cleanly_ended_jvm_wrote(archives, spark_home, writes, code, expect):
    written = a_plan(spark_home)
    done = class_archive.finish(written, _stand_in_jvm(written.part, writes, code), timeout_s=30)
    assert done == (expect == "archive")
    assert written.archive.exists() == (expect == "archive")
    assert written.archive.with_suffix(".failed").exists() == (expect == "failed")
    assert not written.part.exists() and not written.lock.exists()
    after = a_plan(spark_home)
    assert {"archive": lambda p: p is not None and not p.writes, "failed": lambda p: p is None,
            "nothing": lambda p: p is not None and p.writes}[expect](after)


def test_only_the_three_most_recently_used_archives_are_kept(tmp_path):
    for i in range(5):
        archive = tmp_path / f"a{i}.jsa"
        archive.write_bytes(b"x")
        os.utime(archive, (1000 + i, 1000 + i))
    deleted = class_archive.prune(tmp_path)
    assert sorted(p.name for p in deleted) == ["a0.jsa", "a1.jsa"]
    assert sorted(p.name for p in tmp_path.glob("*.jsa")) == ["a2.jsa", "a3.jsa", "a4.jsa"]


SESSION = """
import json, sys
from pyspark import SparkContext
from kplex.session import kplex_session
bootstrap, table = sys.argv[1], sys.argv[2]
spark = kplex_session(bootstrap, master="local[1]", conf={"spark.sql.shuffle.partitions": "2"})
spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '4', "
          "'kplex.physical_partitions' = '2', 'kplex.delivery' = 'exactly_once')")
spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(CAST(id % 7 AS STRING)), kplex_order(id), "
          "CAST(CAST(id AS STRING) AS BINARY) AS value FROM range(200)")
with open(f"/proc/{SparkContext._gateway.proc.pid}/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith('.jsa')})
print("MAPPED " + json.dumps(mapped))
"""


def _session(bootstrap: str, table: str, directory: Path, *, before: str = "",
             java_options: str = "") -> tuple[list[str], str]:
    env = {**os.environ, class_archive.ENV: str(directory)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    script = before + (SESSION.replace('"2"}', f'"2", "spark.driver.extraJavaOptions": {java_options!r}}}')
                       if java_options else SESSION)
    done = subprocess.run([sys.executable, "-c", script, bootstrap, table], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("MAPPED "))
    return json.loads(line[len("MAPPED "):]), done.stdout + done.stderr


def test_a_later_session_maps_the_archive_the_first_one_wrote_and_writes_the_same_records(
        bootstrap, fresh_name, tmp_path):
    directory = tmp_path / "archives"
    first, first_output = _session(bootstrap, fresh_name("archive_first"), directory)
    archives = list(directory.glob("*.jsa"))
    assert len(archives) == 1, first_output[-2000:]
    assert str(archives[0]) not in first  # the first JVM wrote it; it mapped only the JDK's own
    assert "writing its class archive" in first_output
    assert not list(directory.glob("*.part")) and not list(directory.glob("*.lock"))

    table = fresh_name("archive_later")
    later, later_output = _session(bootstrap, table, directory)
    assert str(archives[0]) in later, later_output[-2000:]
    assert "[cds" not in later_output and "writing its class archive" not in later_output
    records = verify.read_topic(bootstrap, table)
    assert sorted(int(r.value) for r in records) == list(range(200))


# A debugger's agent: with it, the JDK refuses to start a JVM that would write an archive.
JDWP = "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0"


def test_a_session_whose_jvm_runs_an_agent_starts_and_writes_no_archive(bootstrap, fresh_name, tmp_path):
    directory = tmp_path / "archives"
    table = fresh_name("archive_agent")
    mapped, output = _session(bootstrap, table, directory, java_options=JDWP)
    assert not any(m.startswith(str(directory)) for m in mapped)
    assert not directory.exists() or not list(directory.iterdir()), output[-2000:]
    assert sorted(int(r.value) for r in verify.read_topic(bootstrap, table)) == list(range(200))


def test_a_jvm_that_will_not_start_to_write_an_archive_is_started_without_and_not_asked_again(
        bootstrap, fresh_name, tmp_path):
    # An option kplex does not know to keep the JDK from archiving: here the agent, with
    # kplex's check of agents turned off in the session's process.
    unaware = "import re\nfrom kplex import class_archive\nclass_archive._NO_ARCHIVE_WITH = re.compile('(?!)')\n"
    directory = tmp_path / "archives"
    table = fresh_name("archive_refused")
    mapped, output = _session(bootstrap, table, directory, before=unaware, java_options=JDWP)
    assert sorted(int(r.value) for r in verify.read_topic(bootstrap, table)) == list(range(200))
    failed = list(directory.glob("*.failed"))
    assert len(failed) == 1, output[-2000:]
    assert "did not start" in failed[0].read_text()
    assert not list(directory.glob("*.jsa")) and not list(directory.glob("*.part")) \
        and not list(directory.glob("*.lock")), sorted(p.name for p in directory.iterdir())

    # The next session with the same options does not try again (its JVM would fail to
    # start once more, and the marker be written anew).
    marked = failed[0].stat().st_mtime_ns
    again = fresh_name("archive_refused_again")
    _, output = _session(bootstrap, again, directory, before=unaware, java_options=JDWP)
    assert failed[0].stat().st_mtime_ns == marked, output[-2000:]
    assert not list(directory.glob("*.jsa")) and not list(directory.glob("*.lock"))
    assert len(verify.read_topic(bootstrap, again)) == 200


def test_a_session_that_records_its_jvm_keeps_its_recording(bootstrap, fresh_name, tmp_path):
    directory = tmp_path / "archives"
    recording = tmp_path / "driver.jfr"
    _, output = _session(bootstrap, fresh_name("archive_jfr"), directory,
                         java_options=f"-XX:StartFlightRecording=filename={recording},dumponexit=true")
    assert recording.is_file() and recording.stat().st_size > 0, output[-2000:]
    assert not directory.exists() or not list(directory.iterdir())
