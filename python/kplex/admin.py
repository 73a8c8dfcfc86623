"""Operator commands that run in a JVM but need no Spark job: ``kplex recover``, ``kplex
control-plane spread`` and, through :mod:`kplex.status`, ``kplex status``. Each runs the JVM
plugin's ``KplexAdmin`` in a plain JVM of its own (:func:`run_admin`), with no Spark session:
a second or two where a session took several; or, called where a kplex session's JVM runs in the
process already (a notebook), in that JVM.

    >>> from kplex.admin import recover
    >>> print(recover("127.0.0.1:9092", "pageviews_by_user"))  # doctest: +SKIP
    fenced 2 open transactions
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from kplex.definitions import TABLES_TOPIC
from kplex.errors import kplex_error_from_jvm
from kplex.session import SESSION_LOG_CONFIG, jars
from kplex.settings import METADATA_TOPIC

#: The JVM plugin's entry point for the commands (``KplexAdmin.main``).
ADMIN_MAIN = "io.kplex.spark.KplexAdmin"
#: The JVM's options: C1 only (a run of a second or two never repays C2's compiling), and the
#: logging of kplex's sessions from ERROR up (a command reports what failed itself; the Kafka
#: client's warnings, a connection refused each second, say, would bury it). No collector: one
#: in the user's JAVA_TOOL_OPTIONS beside another would stop the JVM from starting.
ADMIN_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={SESSION_LOG_CONFIG.as_uri()}",
                      "-Dkplex.log.level=error")


def catalog_options(bootstrap: str | None, metadata_topic: str = TABLES_TOPIC,
                    kafka_options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The catalog options a kplex session would have (``spark.sql.catalog.kplex.*``, without
    the prefix): the bootstrap servers (default ``$KPLEX_BOOTSTRAP``), the metadata topic and
    the Java client settings ``kafka_options``.

    >>> catalog_options("b:9092", kafka_options={"security.protocol": "SSL"})["kafka.security.protocol"]
    'SSL'
    """
    options = {METADATA_TOPIC: metadata_topic}
    address = bootstrap or os.environ.get("KPLEX_BOOTSTRAP")
    if address:
        options["kafka.bootstrap.servers"] = address
    options.update({f"kafka.{k}": str(v) for k, v in (kafka_options or {}).items()})
    return options


def run_admin(args: Sequence[str], options: Mapping[str, str]) -> str:
    """What ``KplexAdmin``'s command ``args`` returns for the catalog ``options``. Where a JVM
    with kplex's classes runs in this process (a classic kplex session's), in that JVM, through
    py4j (``KplexAdmin.run``); else in a JVM of its own with the jar of the installed pyspark's
    line and that pyspark's jars (Jackson, logging, Spark's classes the plugin names), the
    ``options`` on its standard input (so credentials are on no command line). The answer is
    the same either way: a kplex error in the JVM is raised as the package's own (its condition
    and culprits kept). What a JVM of its own logs (errors) goes to standard error."""
    context = _kplex_context()
    out = _run_in(context, args, options) if context is not None else _run_in_own_jvm(args, options)
    if "error" in out:
        error = out["error"]
        raise kplex_error_from_jvm(error.get("condition"), error["message"], error.get("parameters", {}))
    return out["result"]


def _kplex_context():  # noqa: ANN202 (pyspark's SparkContext, imported only when in use)
    """This process's running SparkContext when its JVM has kplex's classes (a session with
    kplex's jar); None otherwise (no session, Spark Connect, a session without kplex)."""
    import sys

    if "pyspark" not in sys.modules:  # no session runs in a process that never imported it
        return None
    from py4j.java_gateway import JavaClass
    from pyspark import SparkContext

    context = SparkContext._active_spark_context  # noqa: SLF001
    if context is None:
        return None
    try:
        admin = context._jvm.io.kplex.spark.KplexAdmin  # noqa: SLF001
        return context if isinstance(admin, JavaClass) else None
    except Exception:  # noqa: BLE001 (its JVM gone: the command starts one of its own)
        return None


def _run_in(context, args: Sequence[str], options: Mapping[str, str]) -> dict:  # noqa: ANN001
    """KplexAdmin's answer to ``args`` from the JVM of the running ``context``
    (``KplexAdmin.run``, what its ``main`` prints)."""
    from py4j.java_collections import MapConverter

    gateway, jvm = context._gateway, context._jvm  # noqa: SLF001
    java_args = gateway.new_array(jvm.java.lang.String, len(args))
    for i, arg in enumerate(args):
        java_args[i] = arg
    java_options = MapConverter().convert(dict(options), gateway._gateway_client)  # noqa: SLF001
    return json.loads(jvm.io.kplex.spark.KplexAdmin.run(java_args, java_options))


def _run_in_own_jvm(args: Sequence[str], options: Mapping[str, str]) -> dict:
    """KplexAdmin's answer to ``args`` from a JVM started for it (its main, ``options`` as JSON
    on its standard input)."""
    from pyspark.find_spark_home import _find_spark_home

    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else "java"
    classpath = os.pathsep.join([*jars(), str(Path(_find_spark_home()) / "jars" / "*")])
    from kplex.errors import kplex_error

    try:
        done = subprocess.run([java, *ADMIN_JAVA_OPTIONS, "-cp", classpath, ADMIN_MAIN, *args],
                              input=json.dumps(dict(options)), stdout=subprocess.PIPE, text=True)
    except OSError as error:  # no java there
        where = f"JAVA_HOME={home}" if home else "the java on PATH (JAVA_HOME is unset)"
        raise kplex_error("SESSION_UNAVAILABLE", cause=f"`{' '.join(args)}` runs in a JVM of its own, and {where}"
                          f" could not be started: {error}") from error
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):  # what it logged went to standard error, as it came
        raise kplex_error("SESSION_UNAVAILABLE", cause=f"the JVM of `{' '.join(args)}` ended with exit code"
                          f" {done.returncode} (its own words are above){':' if done.stdout else ''}"
                          f"\n{done.stdout[-3000:]}") from None


def recover(bootstrap: str | None, table: str, metadata_topic: str = TABLES_TOPIC,
            kafka_options: Mapping[str, str] | None = None, claim_timeout_ms: int | None = None) -> str:
    """Finish a commit that a dead driver left half done, and fence (Kafka aborts) every
    open transaction of ``table``, so read_committed consumers are not held back. Returns
    what it found and did: a commit Kafka cut short names the virtual partitions it lost
    and how they get written (an INSERT's is reported once). ``kafka_options`` are Java
    client settings (credentials: ``security.protocol``, ``sasl.jaas.config``, ...), as the
    catalog's ``kafka.*`` settings; ``claim_timeout_ms``: a writer's claim unrenewed for this
    long is taken over (``kplex.writer_claim_timeout_ms``, default 6000)."""
    timeout = -1 if claim_timeout_ms is None else claim_timeout_ms
    return run_admin(["recover", table, str(timeout)], catalog_options(bootstrap, metadata_topic, kafka_options))


def spread_control_plane(bootstrap: str | None, kafka_options: Mapping[str, str] | None = None,
                         claim_timeout_ms: int | None = None) -> str:
    """Spread a commit log written by a kplex before its control plane was scoped by table (every table's
    records in partition 0 of ``_kplex_commits``) over its partitions by table, so that a
    commit reads its own table's records only, however many tables and how much history the
    log holds. Run it with no kplex writer at work: a live writer's claim, or a commit left
    pending (``kplex recover`` finishes it), is refused with ``[KPLEX_CONTROL_PLANE_BUSY]``
    naming the table, and nothing changes. A log kplex created is spread already.

    >>> print(spread_control_plane("127.0.0.1:9092"))  # doctest: +SKIP
    spread _kplex_commits over 16 partitions by table (1204 records moved out of partition 0)
    """
    timeout = -1 if claim_timeout_ms is None else claim_timeout_ms
    return run_admin(["spread", str(timeout)], catalog_options(bootstrap, kafka_options=kafka_options))
