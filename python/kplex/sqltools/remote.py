"""``kplex sql run --remote sc://HOST:PORT``: a SQL file's statements run on a Spark
Connect server (``kplex server connect``) instead of in a Spark this process starts.

The server's JVM stays up between runs, so a scheduler that runs a file every few
minutes pays a JVM's start and its JIT compiler's warm-up once, not in every run; this
process starts no JVM and needs no Java. The catalog settings a session may change go
with the session: ``--bootstrap`` (else ``$KPLEX_BOOTSTRAP``, else the file's
``-- kplex.bootstrap`` comment, else the server's own) and ``--kafka-config``; each
``--conf`` is set in the session, and one the server does not let a session set is
refused by name. Every way this cannot start is a :class:`SessionUnavailable` naming
the culprit (the address, the option), found before any statement runs.

>>> connect_address("sc://spark.example.com:15002/;user_id=etl")
('spark.example.com', 15002)
>>> connect_address("sc://[::1]")
('::1', 15002)
>>> connect_address("http://localhost:15002")
Traceback (most recent call last):
...
kplex.sqltools.errors.SessionUnavailable: http://localhost:15002 is not a Spark Connect address: ...
"""

from __future__ import annotations

import os
import socket
from typing import Any, Mapping
from urllib.parse import urlsplit

from kplex.errors import KplexError, kplex_error

__all__ = ["ENV_VAR", "DEFAULT_PORT", "connect_address", "remote_of", "remote_session"]

#: Where pyspark itself looks for a Spark Connect address; ``--remote`` overrides it.
ENV_VAR = "SPARK_REMOTE"
#: Spark Connect's port when the address names none.
DEFAULT_PORT = 15002
#: How long to wait for the server's port to accept a connection before saying it cannot be reached
#: (the Connect client itself retries for minutes).
CONNECT_TIMEOUT_S = 10.0


def remote_of(option: str | None, master: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The Spark Connect address to run on (``--remote``, else ``$SPARK_REMOTE``), or None
    for a Spark of this process's own; refused beside ``--master``.

    >>> remote_of(None, None, environ={"SPARK_REMOTE": "sc://h:15002"})
    'sc://h:15002'
    >>> remote_of(None, "local[2]", environ={"SPARK_REMOTE": "sc://h:15002"})
    Traceback (most recent call last):
    ...
    kplex.sqltools.errors.SessionUnavailable: --master local[2] and a Spark Connect server (sc://h:15002, from $SPARK_REMOTE) ...
    """
    environ = os.environ if environ is None else environ
    url, source = (option, "--remote") if option else (environ.get(ENV_VAR) or None, f"${ENV_VAR}")
    if url and master:
        raise kplex_error("REMOTE_SESSION.WITH_MASTER", master=master, url=url, url_source=source)
    return url


def connect_address(url: str) -> tuple[str, int]:
    """(host, port) of a Spark Connect address ``sc://HOST[:PORT][/;name=value...]``."""
    parts = urlsplit(url)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        port = None
    if parts.scheme != "sc" or not parts.hostname or port is None:
        raise kplex_error("REMOTE_SESSION.BAD_URL", url=url)
    return parts.hostname, port


def remote_session(url: str, conf: Mapping[str, str], bootstrap: str | None,
                   kafka_settings: Mapping[str, str]) -> Any:
    """A Spark Connect session on ``url`` with kplex's catalog set for it, each of ``conf``
    set in it, and the server's kplex functions checked."""
    host, port = connect_address(url)
    try:
        import grpc  # noqa: F401 - what pyspark's Connect client needs, checked before it is asked for
        from pyspark.sql import SparkSession

        from kplex.session import configure_spark_with_kplex, register_functions
    except ImportError as error:
        raise kplex_error("REMOTE_SESSION.NO_CLIENT", cause=error) from error
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise kplex_error("REMOTE_SESSION.UNREACHABLE", url=url, cause=error) from error
    _check_answers(url)
    builder = configure_spark_with_kplex(SparkSession.builder.remote(url), bootstrap,
                                         kafka_options=dict(kafka_settings))
    spark = builder.getOrCreate()
    for key, value in conf.items():
        try:
            spark.conf.set(key, value)
        except Exception as error:  # noqa: BLE001 - Spark's refusal, whichever class the client gives it
            spark.stop()
            raise kplex_error("REMOTE_SESSION.SERVER_SETTING", key=key, url=url, cause=_first_line(error)) from error
    try:
        register_functions(spark)
    except KplexError as error:
        spark.stop()
        if error.getCondition() != "KPLEX_NO_EXTENSION":
            raise
        from kplex.session import EXTENSIONS_CLASS

        raise kplex_error("REMOTE_SESSION.NO_KPLEX", url=url, extensions_class=EXTENSIONS_CLASS) from error
    return spark


def _check_answers(url: str) -> None:
    """That ``url`` answers as a gRPC server (a Spark Connect server's HTTP/2 handshake) within
    :data:`CONNECT_TIMEOUT_S`: a port that accepts connections but is something else (a Kafka
    broker's, say) would keep the Connect client retrying for minutes, silently."""
    import grpc
    from pyspark.sql.connect import client

    builder = getattr(client, "DefaultChannelBuilder", None) or client.ChannelBuilder  # Spark 4 / 3.5
    channel = builder(url).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=CONNECT_TIMEOUT_S)
    except grpc.FutureTimeoutError as error:
        raise kplex_error("REMOTE_SESSION.NOT_CONNECT", url=url, seconds=f"{CONNECT_TIMEOUT_S:g}") from error
    finally:
        channel.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
