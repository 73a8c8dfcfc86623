"""Spark servers with kplex on them: a Spark Connect server (the thin clients of Spark 4,
Databricks' serverless and shared clusters) and the Thrift JDBC/ODBC server (BI tools,
beeline). Each is a real Spark driver JVM started with pyspark's own ``spark-submit``,
kplex's jars, its SQL extension and its catalog.

    $ kplex server connect --bootstrap broker:9092 --port 15002     # sc://localhost:15002
    $ kplex server thrift --bootstrap broker:9092 --port 10000      # jdbc:hive2://localhost:10000

>>> command("connect", "broker:9092", port=15002)[1:3]     # doctest: +SKIP
['--class', 'org.apache.spark.sql.connect.service.SparkConnectServer']
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from kplex.class_archive import process_alive
from kplex.session import (
    CATALOG_CLASS,
    DEFAULT_JAVA_OPTIONS_KEY,
    EXTENSIONS_CLASS,
    REDACTION_REGEX,
    jars,
    local_java_options,
    with_plugin,
)

__all__ = ["KINDS", "ServerDidNotStart", "command", "free_port", "running_server", "spark_home"]

#: The switch of a shared server's limits on what a statement sets (conf/ServerPolicy in the plugin).
RESTRICTED_KEY = "spark.kplex.server.restricted"

#: Server kind -> (main class, default port).
KINDS: dict[str, tuple[str, int]] = {
    "connect": ("org.apache.spark.sql.connect.service.SparkConnectServer", 15002),
    "thrift": ("org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", 10000),
}


class ServerDidNotStart(RuntimeError):
    """A server :func:`running_server` started exited, or did not listen in time; the text
    says which, with the end of its log."""


def spark_home() -> Path:
    """``$SPARK_HOME``, else the installed pyspark (whose ``bin/`` has ``spark-submit``)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def command(kind: str, bootstrap: str, port: int | None = None, host: str = "127.0.0.1",
            master: str = "local[*]", conf: Mapping[str, str] | None = None,
            catalog: str = "kplex", kafka_options: Mapping[str, str] | None = None,
            restricted: bool = True) -> list[str]:
    """The ``spark-submit`` command line of a ``kind`` server ("connect" or "thrift")
    listening on ``host:port``, with kplex's jars, extension and catalog (on ``bootstrap``),
    and ``conf`` (more ``--conf`` settings); on a local master, the parallel collector and
    C2's smaller inlining limit, each unless ``conf`` or the environment chooses one
    (:func:`kplex.session.local_java_options`).
    ``kafka_options`` (the catalog's Kafka client
    settings, credentials among them) go into a properties file only this user can read,
    never onto the command line, where ``ps`` would show them; spark-submit reads it as it
    starts, and whoever starts the server removes it (:func:`_private_dir`) once the server
    listens. A server is ``restricted`` (``spark.kplex.server.restricted``, unless ``conf``
    says otherwise): it is shared, so a statement may set only the Kafka client settings that
    reach no further than itself, and no kplex catalog of its own (docs/secured-kafka.md)."""
    main_class, default_port = KINDS[kind]
    port = port or default_port
    settings = {
        "spark.sql.extensions": EXTENSIONS_CLASS,
        f"spark.sql.catalog.{catalog}": CATALOG_CLASS,
        f"spark.sql.catalog.{catalog}.kafka.bootstrap.servers": bootstrap,
        "spark.ui.enabled": "false",
        "spark.redaction.regex": REDACTION_REGEX,
    }
    if restricted:
        settings[RESTRICTED_KEY] = "true"
    if kind == "connect":
        settings["spark.connect.grpc.binding.port"] = str(port)
        settings["spark.connect.grpc.binding.address"] = host
    settings.update(conf or {})
    settings["spark.plugins"] = with_plugin(settings.get("spark.plugins"))
    java_options = local_java_options(master, settings)  # the JVM's options, as kplex_session picks them
    if java_options:
        settings[DEFAULT_JAVA_OPTIONS_KEY] = java_options
    argv = [str(spark_home() / "bin" / "spark-submit"), "--class", main_class,
            "--name", f"kplex {kind} server", "--master", master, "--jars", ",".join(jars())]
    argv += _connect_packages(kind)
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    if kafka_options:
        argv += ["--properties-file", str(_private_properties(
            {f"spark.sql.catalog.{catalog}.kafka.{k}": v for k, v in kafka_options.items()}))]
    if kind == "thrift":
        argv += ["--hiveconf", f"hive.server2.thrift.port={port}",
                 "--hiveconf", f"hive.server2.thrift.bind.host={host}"]
    return argv


def _connect_packages(kind: str) -> list[str]:
    """Spark 3.5's pyspark does not carry the Connect server (Spark 4's does): as Spark 3.5's
    own ``start-connect-server.sh`` is told to, it comes from Maven Central with ``--packages``
    (resolved once into Spark's ivy cache, ``spark.jars.ivy``)."""
    import pyspark

    if kind != "connect" or not pyspark.__version__.startswith("3.5."):
        return []
    return ["--packages", f"org.apache.spark:spark-connect_2.12:{pyspark.__version__}"]


def _private_properties(settings: Mapping[str, str]) -> Path:
    """A properties file readable by this user only, in a private temporary directory: UTF-8,
    as spark-submit reads it, each key and value escaped as ``java.util.Properties`` reads them.
    """
    path = Path(tempfile.mkdtemp(prefix="kplex-server-")) / "kafka.properties"
    lines = (f"{_escaped(k, key=True)}={_escaped(v)}" for k, v in settings.items())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return path


def _escaped(text: str, key: bool = False) -> str:
    r"""``text`` as a properties file holds it: backslashes and line ends escaped, and in a key
    what would end it (``=``, ``:``, a blank), in a value a leading blank (Java drops it).

    >>> print(_escaped("a=b c", key=True), _escaped(" pass\\word"))
    a\=b\ c \ pass\\word
    """
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\f", "\\f")
    if key:
        return re.sub(r"([=:\s#!])", r"\\\1", text)
    return "\\" + text if text[:1] in (" ", "\t") else text


def _private_dir(argv: Sequence[str]) -> Path | None:
    """The private directory of the properties file of :func:`command`'s ``argv``, if it has one.

    spark-submit reads the file as it starts (its launcher for the driver's options, then
    ``SparkSubmit`` for the settings), before the server's main class runs, so the file may go
    once the server listens; it goes at the latest when the server stops."""
    if "--properties-file" not in argv:
        return None
    return Path(argv[list(argv).index("--properties-file") + 1]).parent


def _remove(directory: Path | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _settings(conf: Sequence[str]) -> dict[str, str]:
    settings = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"kplex server: --conf takes KEY=VALUE, got {item!r}")
        settings[key] = value
    return settings


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server listens on ``host:port`` (an address of every interface: on this machine's)."""
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def running_server(kind: str, bootstrap: str, workdir: Path, conf: Sequence[str] = (), master: str = "local[2]",
                   kafka_options: Mapping[str, str] | None = None,
                   start_timeout: float = 180.0, restricted: bool = True) -> Iterator[int]:
    """Runs ``kplex server <kind>`` on a free port of 127.0.0.1 (its log in ``workdir``),
    yields the port once it listens, and stops it (SIGTERM) afterwards.

    >>> with running_server("connect", "127.0.0.1:9092", Path("/tmp")) as port:  # doctest: +SKIP
    ...     spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    """
    port = free_port()
    log = workdir / f"{kind}-server.log"
    argv = command(kind, bootstrap, port=port, master=master, conf=_settings(conf), kafka_options=kafka_options,
                   restricted=restricted)
    private = _private_dir(argv)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=str(spark_home()))
    server = None
    try:
        with open(log, "wb") as out:
            server = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True, env=env)
        deadline = time.monotonic() + start_timeout
        while not _listening(port):
            if server.poll() is not None:
                raise ServerDidNotStart(f"the {kind} server exited with {server.returncode}:\n{log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise ServerDidNotStart(f"the {kind} server did not listen on {port} in {start_timeout} s:\n"
                                        f"{log.read_text()[-4000:]}")
            time.sleep(1)
        _remove(private)  # read by spark-submit before the server listened
        yield port
    finally:
        _remove(private)
        if server is not None:
            _stop(server)


def _stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, then SIGKILL if it has not stopped within 60 s.
    A group that is gone (the server exited, and was reaped, by itself) is stopped already."""
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, None)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            pass
        try:
            server.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def exec_server(kind: str, bootstrap: str, port: int | None, host: str, master: str,
                conf: Sequence[str], kafka_options: Mapping[str, str] | None = None,
                restricted: bool = True) -> None:
    """Replaces this process with the server (it runs until stopped, e.g. by SIGTERM)."""
    argv = command(kind, bootstrap, port=port, host=host, master=master, conf=_settings(conf),
                   kafka_options=kafka_options, restricted=restricted)
    os.environ.setdefault("SPARK_HOME", str(spark_home()))
    private = _private_dir(argv)
    port = port or KINDS[kind][1]
    if _listening(port, host):  # the server could not listen, and the file would go before it is read
        _remove(private)
        raise SystemExit(f"kplex server: something listens on {host}:{port} already: stop it, or give another --port")
    if private is not None:
        _remove_when_listening(private, host, port)
    os.execv(argv[0], argv)


#: How long the process that removes a server's properties file waits for the server to listen
#: (spark-submit reads the file in the first seconds; a server starts within a few minutes).
REMOVE_WITHIN_S = 600.0


def _remove_when_listening(directory: Path, host: str, port: int) -> None:
    """Leaves a process behind that removes ``directory`` once the server that this process is
    about to become listens on ``host:port``, or exits, or :data:`REMOVE_WITHIN_S` passed: this
    process cannot, once it is the server. The process is this one's grandchild, in a session of
    its own (a Ctrl-C stops the server, not it), and its parent is reaped here (no zombie stays)."""
    server = os.getpid()
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            deadline = time.monotonic() + REMOVE_WITHIN_S
            while process_alive(server) and not _listening(port, host) and time.monotonic() < deadline:
                time.sleep(0.5)
            _remove(directory)
    finally:
        os._exit(0)

