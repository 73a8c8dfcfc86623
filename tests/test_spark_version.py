"""Which Spark runs the tests, and that kplex refuses a Spark it does not support with an
error that says which ones it does."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from kplex import session
from kplex.errors import KplexError
from kplex.streaming import start_stream, streaming_insert


def test_the_tests_run_on_the_spark_they_were_asked_to(spark):
    """scripts/test_spark_version.sh names the Spark its run asks for (KPLEX_EXPECT_SPARK); any
    other run asks for the installed pyspark's, not a Spark that a SPARK_HOME set elsewhere would
    bring."""
    assert spark.version == os.environ.get("KPLEX_EXPECT_SPARK", pyspark.__version__)


@pytest.mark.parametrize("version", ["3.4.4", "4.4.0", "5.0.0"])
def test_an_unsupported_spark_is_refused_naming_the_supported_ones(version):
    with pytest.raises(KplexError, match=r"Spark 3\.5, 4\.0, 4\.1, 4\.2 and 4\.3; this is Spark .*pyspark>=3\.5,<4\.4"):
        session.check_spark_version(version)
    with pytest.raises(KplexError, match=version):
        session.jars(version)


@pytest.mark.parametrize(("version", "jar"), [("3.5.0", "kplex-spark-3.5.jar"), ("3.5.7", "kplex-spark-3.5.jar"),
                                              ("4.0.1", "kplex-spark.jar"), ("4.1.1", "kplex-spark.jar"),
                                              ("4.2.1", "kplex-spark.jar"), ("4.3.0", "kplex-spark.jar")])
def test_a_supported_spark_passes_and_gets_the_jar_of_its_line(version, jar):
    session.check_spark_version(version)
    assert [Path(j).name for j in session.jars(version)] == [jar]


def test_each_jar_is_compiled_for_its_scala():
    """The 3.5 jar calls Scala 2.12's converters, the 4.x jar 2.13's: read from the class
    files themselves (javap would do the same), not from the build script."""
    for version, converters in (("3.5.7", b"scala/collection/JavaConverters"), ("4.1.1", b"scala/jdk/javaapi/CollectionConverters")):
        with zipfile.ZipFile(session.jars(version)[0]) as jar:
            scala = jar.read("io/kplex/spark/compat/Scala.class")
        assert converters in scala, version


def test_a_feature_of_a_newer_spark_is_refused_naming_the_line_it_needs():
    with pytest.raises(KplexError, match=r"STREAM\(\.\.\.\) in SQL needs Spark 4\.1 or later; this is Spark 3\.5\.7"):
        session.require_spark("STREAM(...) in SQL", (4, 1), "3.5.7")
    session.require_spark("STREAM(...) in SQL", (4, 1), "4.1.1")


def test_a_streaming_insert_in_sql_before_spark_4_1_gets_that_error_not_a_parse_error(spark, tmp_path):
    if tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 1):
        pytest.skip("STREAM(...) in SQL runs on this Spark (test_streaming)")
    insert = streaming_insert("INSERT INTO kplex.t SELECT key, order_value, value FROM STREAM(kplex.s)")
    with pytest.raises(KplexError, match=rf"needs Spark 4\.1 or later; this is Spark {spark.version}"):
        start_stream(spark, insert, str(tmp_path / "checkpoint"))


def test_a_local_session_writes_its_checkpoints_through_sparks_file_system_manager(spark):
    """On a local master kplex picks Spark's FileSystem-based checkpoint manager (no readlink
    process per checkpoint file), kplex's subclass of it where this line's jar has one (no
    chmod process either); the parent is the running Spark's own class, so every stream test
    of this line runs its checkpoints through it."""
    expected = session.local_checkpoint_manager(spark.sparkContext.master)
    if expected is None:  # a cluster's master (KPLEX_TEST_MASTER): Spark's default manager stays
        assert spark.conf.get(session.CHECKPOINT_MANAGER_KEY, None) is None
        return
    assert spark.conf.get(session.CHECKPOINT_MANAGER_KEY) == expected
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    manager = spark._jvm.java.lang.Class.forName(expected, False, loader)
    if spark.version.startswith("4.0."):
        assert manager.getSimpleName() == "FileSystemBasedCheckpointFileManager"
    else:
        assert expected == session.LOCAL_CHECKPOINT_MANAGER
        assert manager.getSuperclass().getSimpleName() == "FileSystemBasedCheckpointFileManager"


def test_a_cluster_and_a_users_own_checkpoint_manager_keep_their_choice():
    from pyspark.sql import SparkSession

    for master in ("spark://host:7077", "local-cluster[2,1,1024]", "yarn", None):
        assert session.local_checkpoint_manager(master) is None
    builder = SparkSession.builder.master("local[2]").config(session.CHECKPOINT_MANAGER_KEY, "my.Manager")
    session.configure_spark_with_kplex(builder, "127.0.0.1:9092")
    assert builder._options[session.CHECKPOINT_MANAGER_KEY] == "my.Manager"
    plain = session.configure_spark_with_kplex(SparkSession.builder.master("local[3]"), "127.0.0.1:9092")
    assert plain._options[session.CHECKPOINT_MANAGER_KEY] == session.local_checkpoint_manager("local[2]")


def test_a_local_sessions_jvm_runs_the_parallel_collector_and_kplexs_inlining_limit(spark):
    """On a local master kplex's session starts its JVM with the parallel collector, C2's
    smaller inlining limit and its higher thresholds (``session.local_java_options``); the JVM
    itself names the collectors it runs and the values of its flags."""
    if not session._local(spark.sparkContext.master):
        pytest.skip(f"{spark.sparkContext.master}: the executors' JVMs are the cluster's")
    management = spark._jvm.java.lang.management.ManagementFactory
    collectors = {b.getName() for b in management.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}
    hotspot = management.getPlatformMXBean(spark._jvm.java.lang.Class.forName(
        "com.sun.management.HotSpotDiagnosticMXBean"))
    assert hotspot.getVMOption("FreqInlineSize").getValue() == "120"
    assert hotspot.getVMOption("Tier4InvocationThreshold").getValue() == "50000"
    assert hotspot.getVMOption("Tier4BackEdgeThreshold").getValue() == "400000"
    offered = session.huge_pages_offered()
    assert hotspot.getVMOption("UseTransparentHugePages").getValue() == str(offered).lower()
    if offered:
        # The kernel's own count of the JVM's memory in huge pages: the heap asked for them.
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        huge_kib = int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("AnonHugePages:")))
        assert huge_kib >= 2048, rollup


def test_a_collector_or_inlining_limit_chosen_anywhere_keeps_its_place(monkeypatch, tmp_path):
    """Two collectors stop a JVM from starting: kplex adds its own only when none is chosen
    in the builder's Java options, the environment pyspark and the JVM read, or
    spark-defaults.conf, and its inlining limit only when no other is; an admin's default
    Java options are kept in front of them."""
    from pyspark.sql import SparkSession

    monkeypatch.setattr(session, "huge_pages_offered", lambda: True)
    both = f"{session.LOCAL_COLLECTOR} {session.LOCAL_INLINING} {session.LOCAL_TIERS} {session.LOCAL_PAGES}"
    assert both == ("-XX:+UseParallelGC -XX:FreqInlineSize=120 -XX:Tier4InvocationThreshold=50000"
                    " -XX:Tier4MinInvocationThreshold=6000 -XX:Tier4CompileThreshold=150000"
                    " -XX:Tier4BackEdgeThreshold=400000 -XX:+UseTransparentHugePages")
    jit = f"{session.LOCAL_INLINING} {session.LOCAL_TIERS} {session.LOCAL_PAGES}"
    for name in session._JAVA_OPTION_SOURCES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    for master in ("spark://host:7077", "local-cluster[2,1,1024]", "yarn", None):
        assert session.local_java_options(master, {}) is None
    assert session.local_java_options("local[2]", {}) == both
    assert session.local_java_options("local", {session.DEFAULT_JAVA_OPTIONS_KEY: "-Dadmin=1"}) == \
        f"-Dadmin=1 {both}"
    assert session.local_java_options("local[2]", {"spark.driver.extraJavaOptions": "-Xss4m -XX:+UseZGC"}) == jit
    assert session.local_java_options("local[2]", {session.DEFAULT_JAVA_OPTIONS_KEY: "-XX:-UseG1GC"}) == \
        f"-XX:-UseG1GC {jit}"
    assert session.local_java_options("local[2]", {"spark.driver.extraJavaOptions": "-XX:FreqInlineSize=325"}) == \
        f"{session.LOCAL_COLLECTOR} {session.LOCAL_TIERS} {session.LOCAL_PAGES}"
    assert session.local_java_options("local[2]", {"spark.driver.extraJavaOptions": "-XX:Tier4CompileThreshold=9"}) == \
        f"{session.LOCAL_COLLECTOR} {session.LOCAL_INLINING} {session.LOCAL_PAGES}"
    no_pages = f"{session.LOCAL_COLLECTOR} {session.LOCAL_INLINING} {session.LOCAL_TIERS}"
    for pages in ("-XX:-UseTransparentHugePages", "-XX:+UseLargePages", "-XX:-UseLargePages"):
        assert session.local_java_options("local[2]", {"spark.driver.extraJavaOptions": pages}) == no_pages, pages
    mine = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC -XX:FreqInlineSize=200 -XX:Tier4InvocationThreshold=7"
                                             " -XX:-UseTransparentHugePages"}
    assert session.local_java_options("local[2]", mine) is None
    for name in ("PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):
        monkeypatch.setenv(name, "--driver-java-options -XX:+UseSerialGC pyspark-shell")
        assert session.local_java_options("local[2]", {}) == jit, name
        monkeypatch.delenv(name)
    (tmp_path / "spark-defaults.conf").write_text(
        "spark.driver.extraJavaOptions -XX:+UseShenandoahGC -XX:FreqInlineSize=325 -XX:Tier4BackEdgeThreshold=1\n")
    assert session.local_java_options("local[2]", {}) == session.LOCAL_PAGES
    monkeypatch.setattr(session, "huge_pages_offered", lambda: False)
    assert session.local_java_options("local[2]", {}) is None
    monkeypatch.setattr(session, "huge_pages_offered", lambda: True)
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.memory 2g\n")
    builder = session.configure_spark_with_kplex(SparkSession.builder.master("local[3]"), "127.0.0.1:9092")
    assert builder._options[session.DEFAULT_JAVA_OPTIONS_KEY] == both
    mine = SparkSession.builder.master("local[3]").config("spark.driver.extraJavaOptions", "-XX:+UseG1GC")
    assert session.configure_spark_with_kplex(mine, "127.0.0.1:9092")._options[
        session.DEFAULT_JAVA_OPTIONS_KEY] == jit


@pytest.mark.parametrize(("text", "offered"), [
    ("always [madvise] never\n", True),
    ("[always] madvise never\n", True),
    ("always madvise [never]\n", False),
    ("always defer defer+madvise [madvise] never\n", True),  # the defrag file's form: a mode in brackets
    ("", False),
])
def test_huge_pages_are_asked_for_only_where_the_kernel_gives_them(tmp_path, text, offered):
    """The JVM's transparent huge pages only where the kernel's mode (the word in brackets)
    gives them to a process that asks; where it says never, or there is no such file, a JVM
    asked for them warns and runs without."""
    mode = tmp_path / "enabled"
    mode.write_text(text)
    assert session.huge_pages_offered(mode) is offered
    assert session.huge_pages_offered(tmp_path / "absent") is False


def test_a_users_own_collector_starts_a_local_session_that_runs_it(bootstrap, tmp_path):
    """A JVM given two collectors does not start; a user's G1 through the builder starts
    kplex's local session, and that JVM runs G1 (not both, not kplex's), with kplex's
    inlining limit, which the user did not choose."""
    script = tmp_path / "g1.py"
    script.write_text(f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[1]", conf={{"spark.driver.extraJavaOptions": "-XX:+UseG1GC"}})
beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
print("COLLECTORS", sorted(b.getName() for b in beans))
hotspot = spark._jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
    spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
print("INLINING", hotspot.getVMOption("FreqInlineSize").getValue())
spark.stop()
""")
    env = {k: v for k, v in os.environ.items() if k not in session._JAVA_OPTION_SOURCES}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "COLLECTORS ['G1 Old Generation', 'G1 Young Generation']" in run.stdout, run.stdout[-2000:]
    assert "INLINING 120" in run.stdout, run.stdout[-2000:]


def _forks_so_far() -> int:
    """Processes this machine has started since boot (Linux's /proc/stat)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("processes "):
            return int(line.split()[1])
    raise AssertionError("/proc/stat has no 'processes' line")


def test_a_local_sessions_checkpoint_files_start_no_chmod_process_and_get_hadoops_permissions(spark, tmp_path):
    """kplex's checkpoint manager on a local master writes through a local file system that sets
    permissions without forking ``chmod`` (a pip-installed Spark has no native Hadoop library,
    so Hadoop's own forks one for every file it creates). Writing 20 checkpoint entries through
    it starts (next to) no process, where Spark's own manager, in the same JVM, starts at least
    one per entry; the entries and their folder get the permissions Hadoop gives them, as the
    operating system reports them."""
    expected = session.local_checkpoint_manager(spark.sparkContext.master)
    if expected != session.LOCAL_CHECKPOINT_MANAGER:
        pytest.skip(f"Spark {spark.version} on {spark.sparkContext.master} keeps Spark's checkpoint manager")
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()

    def write(manager_class: str, folder: Path, entries: int) -> int:
        path = jvm.org.apache.hadoop.fs.Path(folder.as_uri())
        manager = jvm.java.lang.Class.forName(manager_class, False, loader).getConstructors()[0]
        args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 2)
        args[0], args[1] = path, conf
        files = manager.newInstance(args)
        before = _forks_so_far()
        files.mkdirs(path)
        for i in range(entries):
            out = files.createAtomic(jvm.org.apache.hadoop.fs.Path((folder / str(i)).as_uri()), False)
            out.write(b"v1")
            out.close()
        return _forks_so_far() - before

    sparks = jvm.java.lang.Class.forName(expected, False, loader).getSuperclass().getName()
    assert write(sparks, tmp_path / "sparks", 20) >= 20
    # The counter is the machine's: whatever else runs adds to it, never takes away, so the
    # fewest of some tries is the manager's own. Beside a busy suite (CI runs two at once) a
    # try saw 5 to 30 other processes start: up to 20 tries, until one sees fewer than 5.
    forked: list[int] = []
    while len(forked) < 20 and (not forked or min(forked) >= 5):
        forked.append(write(expected, tmp_path / ("ours" if not forked else f"again{len(forked)}"), 20))
    assert min(forked) < 5, f"{forked} processes started while kplex's checkpoint manager wrote 20 entries"
    for name in ("sparks", "ours"):
        assert sorted(p.name for p in (tmp_path / name).iterdir() if not p.name.startswith(".")) == \
            sorted(str(i) for i in range(20))
        assert (tmp_path / name / "7").read_bytes() == b"v1"
        assert stat.S_IMODE((tmp_path / name / "7").stat().st_mode) == 0o644  # Hadoop's umask 022
