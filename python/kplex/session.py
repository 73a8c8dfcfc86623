"""Wiring kplex into a SparkSession: jars, SQL extension, catalog and functions.

Example:
    >>> from pyspark.sql import SparkSession
    >>> from kplex import configure_spark_with_kplex
    >>> builder = SparkSession.builder.master("local[2]")
    >>> spark = configure_spark_with_kplex(builder, bootstrap="127.0.0.1:9092").getOrCreate()  # doctest: +SKIP
    >>> spark.sql("SHOW TABLES IN kplex").show()  # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from kplex import class_archive
from kplex.errors import kplex_error

#: Spark's default ``spark.redaction.regex`` plus the Kafka client settings that carry
#: credentials without saying "password" in their names (the JAAS line of SASL/SCRAM and
#: OAuth, PEM keys): settings whose key matches are hidden from the UI, the event log and
#: Spark's own logs.
REDACTION_REGEX = "(?i)secret|password|token|access[.]?key|jaas|ssl[.]keystore[.](key|certificate)"
_REDACTED = re.compile(REDACTION_REGEX)

CATALOG_CLASS = "io.kplex.spark.KplexCatalog"
EXTENSIONS_CLASS = "io.kplex.spark.KplexExtensions"
#: The driver plugin that makes kplex's first contact with the catalog's brokers while Spark
#: builds its context and session (``io.kplex.spark.KplexPlugin``): the first statement then
#: finds Kafka's classes loaded, the Admin client connected and the table definitions read.
PLUGIN_CLASS = "io.kplex.spark.KplexPlugin"
JARS_DIR = Path(__file__).resolve().parent / "jars"
#: Where kafka-clients' classes are inside kplex's jar (relocated by build.gradle, so that they
#: never clash with the kafka-clients of Spark's Kafka connector or of a user's job): e.g.
#: ``spark._jvm.io.kplex.shaded.org.apache.kafka.clients.admin.Admin`` from py4j. kplex
#: rewrites ``org.apache.kafka.`` to this in the class names of ``kafka.*`` settings.
SHADED_KAFKA = "io.kplex.shaded.org.apache.kafka"

#: The Spark setting of the class that writes a streaming query's checkpoint files.
CHECKPOINT_MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"
#: Spark's own checkpoint manager on Hadoop's FileSystem API, by the packages it has lived in
#: (Spark 4.1 moved it to ``checkpointing``).
_FILE_SYSTEM_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)
#: kplex's checkpoint manager for a local master (``jvm/src/spark-*/java/.../compat``).
LOCAL_CHECKPOINT_MANAGER = "io.kplex.spark.compat.LocalCheckpointFiles"


def _local(master: str | None) -> bool:
    """Whether ``master`` runs Spark in this machine's one JVM (``local``, ``local[N]``)."""
    return bool(master) and (master == "local" or master.startswith("local["))


def local_checkpoint_manager(master: str | None) -> str | None:
    """The checkpoint manager kplex picks for a session on ``master``, or None (Spark's default).

    On a local master (``local``, ``local[N]``: one JVM, checkpoints on its disk) it is kplex's
    :data:`LOCAL_CHECKPOINT_MANAGER`, Spark's own FileSystem-based manager writing through a
    local file system that sets permissions without forking ``chmod`` (Spark 4.0: Spark's
    manager itself, found in the running Spark's jars). Spark's default there renames each
    checkpoint file through Hadoop's FileContext, which forks a ``readlink`` process for each
    of the four files of a rename, and Hadoop's local file system forks a ``chmod`` for each
    file it creates (no native Hadoop library in a pip-installed Spark): 20 processes a
    micro-batch for its offsets and commit entries, about 100 ms of a live micro-batch measured
    on 2 cores (docs/performance.md). On a local disk a plain rename is as atomic. A cluster's
    checkpoints live on shared storage, where Spark's default stays.

    >>> local_checkpoint_manager("yarn") is None
    True
    """
    if not _local(master):
        return None
    import zipfile

    from pyspark.find_spark_home import _find_spark_home

    for jar in sorted((Path(_find_spark_home()) / "jars").glob("spark-sql_*.jar")):
        with zipfile.ZipFile(jar) as classes:
            names = set(classes.namelist())
        for manager in _FILE_SYSTEM_MANAGERS:
            if manager.replace(".", "/") + ".class" in names:
                # kplex's extends Spark's as the line its jar is built for has it: 4.1's package
                # (kplex-spark.jar) or 3.5's (kplex-spark-3.5.jar); 4.0 has 3.5's package.
                ours = manager == _FILE_SYSTEM_MANAGERS[0] or _spark_line(None) == (3, 5)
                return LOCAL_CHECKPOINT_MANAGER if ours else manager
    return None


#: The collector kplex picks for the JVM of a session on a local master (:func:`local_java_options`).
LOCAL_COLLECTOR = "-XX:+UseParallelGC"
#: The JIT compiler's inlining limit kplex picks for that JVM (:func:`local_java_options`).
LOCAL_INLINING = "-XX:FreqInlineSize=120"
#: The JIT compiler's thresholds for C2 that kplex picks for that JVM: ten times the JDK's
#: (:func:`local_java_options`).
LOCAL_TIERS = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000"
               " -XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")
#: The heap on the kernel's transparent huge pages, which kplex picks for that JVM where the
#: kernel offers them to a process that asks (:func:`local_java_options`).
LOCAL_PAGES = "-XX:+UseTransparentHugePages"
#: Where Linux says whether it gives a process transparent huge pages: "always [madvise] never",
#: the mode in use in brackets.
TRANSPARENT_HUGE_PAGES = Path("/sys/kernel/mm/transparent_hugepage/enabled")
#: The driver's Java options that Spark puts before ``spark.driver.extraJavaOptions``.
DEFAULT_JAVA_OPTIONS_KEY = "spark.driver.defaultJavaOptions"
#: Where else a JVM started by pyspark takes options from, so where its options may be chosen.
_JAVA_OPTION_SOURCES = class_archive.JAVA_OPTION_SOURCES
#: Each option kplex adds on a local master, and what says it is chosen already.
_LOCAL_OPTIONS = ((LOCAL_COLLECTOR, re.compile(r"-XX:[+-]Use\w*GC\b")),
                  (LOCAL_INLINING, re.compile(r"-XX:FreqInlineSize=")),
                  (LOCAL_TIERS, re.compile(r"-XX:Tier4\w*Threshold=")),
                  (LOCAL_PAGES, re.compile(r"-XX:[+-]Use(Transparent|Large)\w*Pages\b")))


def local_java_options(master: str | None, options: Mapping[str, str]) -> str | None:
    """The driver's default Java options kplex sets for a session on ``master`` whose
    builder has ``options``, or None (leave them as they are).

    On a local master (one JVM, driver and executor, started by pyspark for this session)
    kplex adds up to four options to ``spark.driver.defaultJavaOptions``, each unless it is chosen
    already, in the builder's Java options, ``PYSPARK_SUBMIT_ARGS``, ``SPARK_SUBMIT_OPTS``,
    the JVM's own environment variables or ``spark-defaults.conf`` (for the collector, any
    collector: two stop the JVM from starting). On a cluster the executors' JVMs are the
    cluster's, so nothing is set. Each was measured on a 3M-record exactly-once INSERT,
    alternating runs (docs/performance.md):

    - :data:`LOCAL_COLLECTOR`, the parallel collector. Spark's sort keeps its memory pages
      on the heap, and in a 1 GiB heap each page is a humongous object for G1, the JVM's
      default: they keep G1 starting concurrent cycles (12 in one 9-second INSERT), whose
      marking and barriers cost a CPU that 2 cores do not have to spare: 7.6 s against
      8.8 s with G1.
    - :data:`LOCAL_INLINING`: the JIT compiler's C2 inlines methods of up to 120 bytecodes
      at hot call sites instead of 325. In a fresh JVM the compiler took a third of the
      CPU during an INSERT, most of it C2 compiling large inlined trees (Kafka's network
      selector and record accumulator, Java deserialization, Spark's generated code), while
      the task threads waited for the cores: 6.3 s against 7.1 s; a session's second INSERT,
      on compiled code, 4.4-5.3 s against 5.1-6.1 s, and a 10M-record INSERT 15.1 s against
      15.9 s.
    - :data:`LOCAL_TIERS`: C2 compiles a method once it ran ten times as often as the JDK's
      defaults ask (C1's code serves until then). Spark plans every statement and micro-batch
      through thousands of methods that each run a few times a second; a minute into a
      stream the compiler still took a third of the JVM's CPU compiling them, for code that
      hardly mattered, while the per-record loops pass any of these thresholds in a fraction
      of a second. The INSERT used 29-32 CPU s against 33-37 and ran 193,136-220,158
      records/s against 174,475-199,358.
    - :data:`LOCAL_PAGES`, where the kernel gives transparent huge pages to a process that
      asks (:func:`huge_pages_offered`): the heap in 2 MiB pages instead of 4 KiB ones. A
      fresh JVM touches its heap for the first time during its first INSERT (the collector
      copying survivors, the tasks' first allocations), and each first touch of a page
      faults, into a kernel that zeroes the page; a CPU profile showed 8% of the JVM's CPU
      there, most in the collector's threads. In 2 MiB pages that is 512 times fewer
      faults: the INSERT 7.49 s against 8.16,
      the process from launch to exit 11.14 s against 12.05 (medians of 4).

    >>> local_java_options("yarn", {}) is None
    True
    """
    if not _local(master):
        return None
    defaults = options.get(DEFAULT_JAVA_OPTIONS_KEY, "")
    chosen = _chosen_java_options(options)
    added = [option for option, flag in _LOCAL_OPTIONS if not any(flag.search(text) for text in chosen)
             and (option != LOCAL_PAGES or huge_pages_offered())]
    if not added:
        return None
    return " ".join(o for o in [defaults, *added] if o)


def huge_pages_offered(mode_file: Path = TRANSPARENT_HUGE_PAGES) -> bool:
    """Whether the kernel gives a process transparent huge pages when it asks for them: the
    mode in brackets in ``mode_file`` is ``always`` or ``madvise``. Not where it is ``never``,
    nor where there is no such file (another system, or a Linux built without them): a JVM
    asked for them there warns on every start and runs without.

    >>> huge_pages_offered(Path("/no/such/file"))
    False
    """
    try:
        mode = re.search(r"\[(\w+)\]", mode_file.read_text())
    except OSError:
        return False
    return mode is not None and mode.group(1) in ("always", "madvise")


#: The driver's logging kplex gives a JVM that :func:`kplex_session` starts (:func:`session_log_option`).
SESSION_LOG_CONFIG = Path(__file__).with_name("log4j2-session.properties")
#: What says the driver's logging is chosen already: a log4j option, or a log4j2 file in Spark's conf directory.
_LOG_CHOSEN = re.compile(r"log4j", re.IGNORECASE)


def session_log_option(options: Mapping[str, str]) -> str | None:
    """The Java option that gives the driver's JVM kplex's logging (:data:`SESSION_LOG_CONFIG`:
    Spark's defaults from WARN up, as pyspark sets them, without the two warnings every local
    start prints, a loopback host name and no native Hadoop library), or None where the user
    chose it: a log4j option in the builder's Java options, ``PYSPARK_SUBMIT_ARGS``,
    ``SPARK_SUBMIT_OPTS``, the JVM's environment variables or ``spark-defaults.conf``, or a
    ``log4j2`` file in Spark's conf directory. A command's output is then what it prints
    (``kplex status``, ``kplex sql run``); Spark's errors and warnings still show.

    >>> session_log_option({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=mine.xml"}) is None
    True
    """
    if any(_LOG_CHOSEN.search(text) for text in _chosen_java_options(options)):
        return None
    if any(_spark_conf_dir().glob("log4j2*")):
        return None
    return f"-Dlog4j2.configurationFile={SESSION_LOG_CONFIG.as_uri()}"


def _chosen_java_options(options: Mapping[str, str]) -> list[str]:
    """Every text where the Java options of a JVM pyspark starts for a builder with ``options``
    may be chosen: its driver options, the environment's (:data:`_JAVA_OPTION_SOURCES`) and
    ``spark-defaults.conf``."""
    chosen = [options.get("spark.driver.extraJavaOptions", ""), options.get(DEFAULT_JAVA_OPTIONS_KEY, "")]
    chosen += [os.environ.get(name, "") for name in _JAVA_OPTION_SOURCES]
    return chosen + [_spark_defaults()]


def _spark_conf_dir() -> Path:
    """The directory spark-submit reads its configuration files from."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        return Path(conf_dir)
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "conf"


def _spark_defaults() -> str:
    """The text of the ``spark-defaults.conf`` spark-submit reads ("" if none)."""
    try:
        return (_spark_conf_dir() / "spark-defaults.conf").read_text(errors="replace")
    except OSError:
        return ""


#: The Spark (major, minor) versions kplex is tested on (scripts/test.sh), and the plugin jar
#: of each: one jar (Scala 2.13) serves Spark 4.0 to 4.3, another (Scala 2.12) Spark 3.5.
SPARK_JARS = {
    (3, 5): "kplex-spark-3.5.jar",
    (4, 0): "kplex-spark.jar",
    (4, 1): "kplex-spark.jar",
    (4, 2): "kplex-spark.jar",
    (4, 3): "kplex-spark.jar",
}
SUPPORTED_SPARK = tuple(SPARK_JARS)


def _spark_line(version: str | None) -> tuple[int, ...]:
    if version is None:
        import pyspark

        version = pyspark.__version__
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


def check_spark_version(version: str | None = None) -> None:
    """Raises a clear error unless ``version`` (default: the installed pyspark's) is supported.

    >>> check_spark_version("4.1.1")
    """
    if version is None:
        import pyspark

        version = pyspark.__version__
    if _spark_line(version) not in SUPPORTED_SPARK:
        names = [f"{a}.{b}" for a, b in SUPPORTED_SPARK]
        supported = ", ".join(names[:-1]) + " and " + names[-1]
        newest = SUPPORTED_SPARK[-1]
        raise kplex_error("SPARK_VERSION.UNSUPPORTED", version=version, supported=supported,
                          next_minor=f"{newest[0]}.{newest[1] + 1}")


def require_spark(feature: str, since: tuple[int, int], version: str | None = None) -> None:
    """Raises a clear error when ``feature`` needs a newer Spark than ``version`` (default: the
    installed pyspark's).

    >>> require_spark("STREAM(...) in SQL", (4, 1), "3.5.7")
    Traceback (most recent call last):
    kplex.errors.UnsupportedError: [KPLEX_SPARK_VERSION] STREAM(...) in SQL needs Spark 4.1 or later; this is Spark 3.5.7 ...
    """
    if version is None:
        import pyspark

        version = pyspark.__version__
    if _spark_line(version) < since:
        raise kplex_error("SPARK_VERSION.FEATURE", feature=feature, since=f"{since[0]}.{since[1]}", version=version)


def jars(spark_version: str | None = None) -> list[str]:
    """The jars to put on Spark's classpath, shipped inside this package: the plugin jar of
    ``spark_version``'s line (default: the installed pyspark's; :data:`SPARK_JARS`), with
    kafka-clients relocated inside it (:data:`SHADED_KAFKA`).

    >>> [Path(j).name for j in jars("4.1.1")], [Path(j).name for j in jars("3.5.7")]  # doctest: +SKIP
    (['kplex-spark.jar'], ['kplex-spark-3.5.jar'])
    """
    check_spark_version(spark_version)
    jar = JARS_DIR / SPARK_JARS[_spark_line(spark_version)]
    if not jar.is_file():
        raise FileNotFoundError(
            f"{jar.name} is missing from {JARS_DIR}: this is a source checkout without a"
            " build. Run `gradle bundleJars` (scripts/setup.sh does it) and reinstall.")
    return [str(jar)]


def is_remote(spark_or_builder: Any) -> bool:
    """Whether a session (or a builder) is Spark Connect's: a client of a server JVM
    that this process cannot reach through py4j, and whose static settings (``spark.jars``,
    ``spark.sql.extensions``) are the server's to set.
    """
    if isinstance(spark_or_builder, SparkSession.Builder):
        options = spark_or_builder._options  # noqa: SLF001 - Builder has no getter
        return bool(options.get("spark.remote") or os.environ.get("SPARK_REMOTE")
                    or os.environ.get("SPARK_CONNECT_MODE_ENABLED") == "1")
    return type(spark_or_builder).__module__.startswith("pyspark.sql.connect")


def configure_spark_with_kplex(
    builder: SparkSession.Builder,
    bootstrap: str | None = None,
    catalog: str = "kplex",
    kafka_options: dict[str, str] | None = None,
) -> SparkSession.Builder:
    """Set the configuration that kplex needs on a session builder, and return it.

    Adds the bundled jars to ``spark.jars``, the SQL extension that registers
    ``kplex_key``, ``kplex_order``, ``kplex_vpartition`` and ``kplex_json``, the driver
    plugin that connects to the catalog's brokers while Spark starts (:data:`PLUGIN_CLASS`), the ``kplex``
    catalog pointing at ``bootstrap`` (default: ``$KPLEX_BOOTSTRAP``), and a
    ``spark.redaction.regex`` that also hides Kafka credentials (:data:`REDACTION_REGEX`),
    and, on a local master, Spark's FileSystem-based checkpoint manager
    (:func:`local_checkpoint_manager`; a value the builder already has stays), and the
    parallel garbage collector and a smaller JIT inlining limit for the JVM it starts
    (:func:`local_java_options`; each unless chosen already) and the class archive that a
    ``kplex_session`` with the same JVM settings wrote, if there is one (:mod:`kplex.class_archive`).

    On a Spark Connect builder (``SparkSession.builder.remote("sc://...")``) the jars and
    the extension are the server's (``kplex server connect`` starts one with them), so
    only the catalog's settings are set, and of them only those given here (not
    ``$KPLEX_BOOTSTRAP``, which names this machine's broker): a session of an unrestricted
    server may change them, a restricted (shared) server refuses a change
    (``spark.kplex.server.restricted``), so give none for one.

    A builder's ``getOrCreate()`` that starts the JVM puts every setting on ``spark-submit``'s
    command line (pyspark's way), ``kafka_options`` too: :func:`kplex_session` keeps those that
    carry credentials off it.

    >>> builder = configure_spark_with_kplex(SparkSession.builder, "127.0.0.1:9092")
    """
    remote = is_remote(builder)
    bootstrap = bootstrap or (None if remote else os.environ.get("KPLEX_BOOTSTRAP"))
    if not remote:
        check_spark_version()
        existing = builder._options.get("spark.jars", "")  # noqa: SLF001 - Builder has no getter
        jar_list = ",".join(j for j in [existing, *jars()] if j)
        extensions = builder._options.get("spark.sql.extensions", "")  # noqa: SLF001
        ext_list = ",".join(e for e in [extensions, EXTENSIONS_CLASS] if e and EXTENSIONS_CLASS not in extensions)
        builder = (builder.config("spark.jars", jar_list)
                   .config("spark.sql.extensions", ext_list or EXTENSIONS_CLASS)
                   .config("spark.plugins", with_plugin(builder._options.get("spark.plugins"))))  # noqa: SLF001
        redaction = builder._options.get("spark.redaction.regex")  # noqa: SLF001
        builder = builder.config("spark.redaction.regex",
                                 REDACTION_REGEX if not redaction else f"{redaction}|{REDACTION_REGEX}")
        manager = local_checkpoint_manager(builder._options.get("spark.master"))  # noqa: SLF001
        if manager and CHECKPOINT_MANAGER_KEY not in builder._options:  # noqa: SLF001 - a user's choice stays
            builder = builder.config(CHECKPOINT_MANAGER_KEY, manager)
        java_options = local_java_options(builder._options.get("spark.master"), builder._options)  # noqa: SLF001
        if java_options:
            builder = builder.config(DEFAULT_JAVA_OPTIONS_KEY, java_options)
        mapped = class_archive.plan(builder._options.get("spark.master"), builder._options, write=False)  # noqa: SLF001
        if mapped is not None:
            builder = builder.config(DEFAULT_JAVA_OPTIONS_KEY, class_archive.with_plan(builder._options, mapped))  # noqa: SLF001
    builder = builder.config(f"spark.sql.catalog.{catalog}", CATALOG_CLASS)
    if bootstrap:
        builder = builder.config(f"spark.sql.catalog.{catalog}.kafka.bootstrap.servers", bootstrap)
    for key, value in (kafka_options or {}).items():
        builder = builder.config(f"spark.sql.catalog.{catalog}.kafka.{key}", value)
    return builder


def with_plugin(plugins: str | None) -> str:
    """``spark.plugins`` with kplex's driver plugin added to what it lists already.

    >>> with_plugin("com.example.Metrics")
    'com.example.Metrics,io.kplex.spark.KplexPlugin'
    """
    listed = [p.strip() for p in (plugins or "").split(",") if p.strip()]
    return ",".join(listed if PLUGIN_CLASS in listed else [*listed, PLUGIN_CLASS])


def kplex_session(
    bootstrap: str | None = None,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    app_name: str = "kplex",
    kafka_options: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession with kplex configured (the one the CLI uses).

    On a local master whose JVM this call starts, the JVM also maps (or, the first time,
    writes) an archive of the classes it loads: :mod:`kplex.class_archive`. A JVM this call
    starts gets the catalog's credentials (``kafka_options``, or ``conf``'s
    ``spark.sql.catalog.*`` settings Spark would redact) after it started, never on its
    command line (:func:`on_command_line`).

    >>> spark = kplex_session("127.0.0.1:9092", master="local[2]")  # doctest: +SKIP
    """
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.ui.enabled", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    builder = configure_spark_with_kplex(builder, bootstrap, kafka_options=dict(kafka_options or {}))
    archive = None
    if SparkContext._gateway is None:  # noqa: SLF001 - this session starts the JVM: its options count
        log_option = session_log_option(builder._options)  # noqa: SLF001
        if log_option:
            given = builder._options.get(DEFAULT_JAVA_OPTIONS_KEY)  # noqa: SLF001
            builder = builder.config(DEFAULT_JAVA_OPTIONS_KEY, f"{given} {log_option}" if given else log_option)
        archive = class_archive.plan(builder._options.get("spark.master"), builder._options)  # noqa: SLF001
    defaults = builder._options.get(DEFAULT_JAVA_OPTIONS_KEY)  # noqa: SLF001
    if archive is not None:
        builder = builder.config(DEFAULT_JAVA_OPTIONS_KEY, class_archive.with_plan(builder._options, archive))  # noqa: SLF001
    try:
        spark = _get_or_create(builder)
    except Exception:
        if archive is None or not archive.writes:
            raise
        class_archive.finish(archive, None)
        if SparkContext._gateway is not None:  # noqa: SLF001 - the JVM started: the archive is not why
            raise
        # The JVM did not start while it was to write an archive: an option the JDK does not
        # archive with, which kplex did not know. Start it without, and do not try again.
        _set_option(builder, DEFAULT_JAVA_OPTIONS_KEY, defaults)
        spark = _get_or_create(builder)
        class_archive.refused(archive)
        archive = None
    except BaseException:
        if archive is not None and archive.writes:
            class_archive.finish(archive, None)
        raise
    if archive is not None:
        gateway = SparkContext._gateway  # noqa: SLF001
        class_archive.started(archive, getattr(gateway, "proc", None))
    register_functions(spark)
    return spark


def _get_or_create(builder: SparkSession.Builder) -> SparkSession:
    """``builder.getOrCreate()``, keeping credentials off the command line of a JVM it starts.

    pyspark starts a session's JVM with ``spark-submit --conf KEY=VALUE`` for each of the
    builder's settings, where ``ps`` shows them for the JVM's life. Where this process starts
    the JVM, it is started here first, with every setting but the catalogs' that carry
    credentials (:func:`on_command_line`); ``getOrCreate`` then hands the whole set to the
    new context through py4j, so the catalog and the driver plugin read them as before.
    """
    if SparkContext._gateway is None and not is_remote(builder):  # noqa: SLF001 - this call starts the JVM
        launch = SparkConf()
        for key, value in builder._options.items():  # noqa: SLF001 - Builder has no getter
            if on_command_line(key, value):
                launch.set(key, value)
        SparkContext._ensure_initialized(conf=launch)  # noqa: SLF001 - pyspark's own start of the JVM
    return builder.getOrCreate()


def on_command_line(key: str, value: str) -> bool:
    """Whether a setting may go on the ``spark-submit`` command line of a JVM that
    :func:`kplex_session` starts: any but a catalog's (``spark.sql.catalog.*``, which only
    the catalog reads) whose key or value Spark would redact (:data:`REDACTION_REGEX`: a
    JAAS line, a password, a token).

    >>> on_command_line("spark.sql.catalog.kplex.kafka.sasl.jaas.config", "... password='s';")
    False
    >>> on_command_line("spark.sql.catalog.kplex.kafka.bootstrap.servers", "broker:9093")
    True
    """
    return not (key.startswith("spark.sql.catalog.") and (_REDACTED.search(key) or _REDACTED.search(value)))


def _set_option(builder: SparkSession.Builder, key: str, value: str | None) -> None:
    """Set ``key`` in ``builder`` back to ``value``, or remove it where ``value`` is None."""
    if value is None:
        builder._options.pop(key, None)  # noqa: SLF001
    else:
        builder.config(key, value)


def register_functions(spark: SparkSession) -> None:
    """Register kplex's SQL functions in a running session.

    Needed only where ``spark.sql.extensions`` could not be set before the session
    started (a shared Databricks cluster, say); the jars must be on its classpath. A
    Spark Connect server must have the extension itself: this checks that it does.

    >>> register_functions(spark)  # doctest: +SKIP
    """
    if is_remote(spark):
        found = {row[0] for row in spark.sql("SHOW FUNCTIONS LIKE 'kplex_*'").collect()}
        if "kplex_key" not in found:
            raise kplex_error("NO_EXTENSION", extensions_class=EXTENSIONS_CLASS)
        return
    spark._jvm.io.kplex.spark.KplexAdmin.registerFunctions(spark._jsparkSession)  # noqa: SLF001


#: The session setting in which the JVM keeps the session's last committed kplex write.
LAST_WRITE_KEY = "kplex.last_write"


def last_write_summary(spark: SparkSession) -> dict[str, Any] | None:
    """What the last committed kplex write of this session wrote (rows per virtual
    partition, rows dropped, records late (below what their virtual partition held: dropped
    or sent to the side topic by the table's ``late_policy``; one dropped counts in both),
    rows already written by another writer of the table), or None. Works on Spark Connect too: the JVM keeps it in
    the session setting ``kplex.last_write`` (``SET kplex.last_write`` over JDBC).

    >>> last_write_summary(spark)  # doctest: +SKIP
    {'table': 'pageviews_by_user', 'rows': 1000, 'rows_per_vp': {'0': 117, ...}, ...}
    """
    raw = spark.conf.get(LAST_WRITE_KEY, None)
    if raw is None and not is_remote(spark):
        raw = spark._jvm.io.kplex.spark.KplexAdmin.lastWriteJson()  # noqa: SLF001 - this driver's last
    return json.loads(raw) if raw else None


READ_METRICS = ("kplexLateDropped", "kplexLateToSideTopic", "kplexRecordsRead")


def read_metrics(df: Any) -> dict[str, int]:
    """The counters of the kplex scans of a DataFrame that has run (an action was called).

    >>> df = spark.table("kplex.pageviews_by_user_live"); rows = df.collect()  # doctest: +SKIP
    >>> read_metrics(df)  # doctest: +SKIP
    {'kplexLateDropped': 3, 'kplexLateToSideTopic': 0, 'kplexRecordsRead': 27000}
    """
    if is_remote(df.sparkSession):
        if not hasattr(df, "executionInfo"):
            raise kplex_error("SPARK_VERSION.CONNECT_METRICS")
        info = df.executionInfo
        if info is None or info.metrics is None:
            raise kplex_error("NOT_EXECUTED")
        totals = dict.fromkeys(READ_METRICS, 0)
        _, nodes = info.metrics.extract_graph()  # the plan nodes the server reported
        for node in nodes.values():
            for metric in node.metrics:
                if metric.name in totals:
                    totals[metric.name] += int(metric.value)
        return totals
    jvm = df.sparkSession._jvm  # noqa: SLF001 - py4j gateway
    return json.loads(jvm.io.kplex.spark.KplexAdmin.readMetricsJson(df._jdf))  # noqa: SLF001
