"""``kplex sql run --remote sc://HOST:PORT``: a SQL file's statements run on a Spark
Connect server (``kplex server connect``) instead of in a Spark this process starts.

The server's JVM stays up between runs, so a scheduler that runs a file every few
minutes pays a JVM's start and its JIT compiler's warm-up once, not in every run; this
process starts no JVM and needs no Java. The catalog settings a session may change go
with the session: ``--bootstrap`` (else ``$KPLEX_BOOTSTRAP``, else the file's
``-- kplex.bootstrap`` comment, else the server's own) and ``--kafka-config``; each
``--conf`` is set in the session, and one the server does not let a session set is
refused by name. Every way this cannot start is a :class:`SessionUnavailable` naming
the culprit (the address, the option), found before any statement runs. A server that
stops answering during the run fails the statement it was running within
:data:`SERVER_GONE_S` (:func:`lost_reason`), where pyspark's client alone would retry for
ten minutes and more, then as long again to release the session.

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
import warnings
from typing import Any, Mapping
from urllib.parse import urlsplit

from kplex.errors import CONDITIONS, KplexError, kplex_error, render_text

__all__ = ["ENV_VAR", "DEFAULT_PORT", "SERVER_GONE_S", "connect_address", "end_session", "lost_reason", "remote_of",
           "remote_session", "retries_within", "server_gone"]

#: Where pyspark itself looks for a Spark Connect address; ``--remote`` overrides it.
ENV_VAR = "SPARK_REMOTE"

#: A shared server's switch (kplex.servers): its catalog is its own.
RESTRICTED_KEY = "spark.kplex.server.restricted"
#: Spark Connect's port when the address names none.
DEFAULT_PORT = 15002
#: How long to wait for the server's port to accept a connection before saying it cannot be reached
#: (the Connect client itself retries for minutes).
CONNECT_TIMEOUT_S = 10.0
#: How long a run waits for a server that stopped answering before the statement it was running
#: fails. pyspark's client retries for ten minutes or more, but a statement is lost with the server
#: that ran it (a restarted server knows neither the session nor the statement), so a longer wait
#: only holds the scheduler that runs the file; this covers a network's brief interruption.
SERVER_GONE_S = 30.0
# Spark Connect's backoff between retries, in ms: the first after 50, each next 4 times longer, at
# most this cap (the client's own is 60 s, which would leave a third of the wait to one sleep).
_BACKOFF = {"initial_backoff": 50, "backoff_multiplier": 4.0, "max_backoff": 5000}


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
    set in it, and the server's kplex functions checked. A restricted server's catalog is its
    own (``spark.kplex.server.restricted``: a session may not change it), so none of the
    catalog's settings is sent to one: neither ``bootstrap`` nor ``kafka_settings``."""
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
    spark = SparkSession.builder.remote(url).getOrCreate()
    _bound_retries(spark)
    if (spark.conf.get(RESTRICTED_KEY, "false") or "").strip().lower() != "true":
        # The catalog's settings, set before any statement reaches the catalog in this session.
        catalog = configure_spark_with_kplex(SparkSession.builder.remote(url),
                                             bootstrap or os.environ.get("KPLEX_BOOTSTRAP"),
                                             kafka_options=dict(kafka_settings))._options  # noqa: SLF001
        for key, value in catalog.items():
            if key.startswith("spark.sql.catalog."):
                spark.conf.set(key, value)
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


def retries_within(seconds: float, initial_backoff: int = _BACKOFF["initial_backoff"],
                   backoff_multiplier: float = _BACKOFF["backoff_multiplier"],
                   max_backoff: int = _BACKOFF["max_backoff"]) -> int:
    """How many retries Spark Connect's backoff (ms: ``initial_backoff``, then each
    ``backoff_multiplier`` times longer, at most ``max_backoff``) fits in ``seconds``.

    >>> retries_within(30.0)   # 0.05 + 0.2 + 0.8 + 3.2 + 5 * 5 = 29.25 s
    9
    >>> retries_within(0.01)
    0
    """
    waited, backoff, retries = 0.0, float(initial_backoff), 0
    while waited + backoff <= seconds * 1000:
        waited, backoff, retries = waited + backoff, min(max_backoff, backoff * backoff_multiplier), retries + 1
    return retries


def _bound_retries(spark: Any) -> None:
    """The session's client gives up on a server that does not answer after about
    :data:`SERVER_GONE_S` (the client adds up to half a second to each wait of 2 s or more)."""
    settings = {**_BACKOFF, "max_retries": retries_within(SERVER_GONE_S)}
    client = spark.client
    if hasattr(client, "set_retry_policies"):  # Spark 4: policy objects
        from pyspark.sql.connect.client.retries import DefaultPolicy

        client.set_retry_policies([DefaultPolicy(**settings, max_server_retry_delay=int(SERVER_GONE_S * 1000))])
    else:  # Spark 3.5: one dict, which each call's retry loop reads
        client._retry_policy.update(settings)
    # The error that ends the statement says it; pyspark's own warnings would say it first, without the server.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    warnings.filterwarnings("ignore", message="ReleaseExecute failed")


def server_gone(error: BaseException | None) -> bool:
    """Whether ``error``, or one it was raised from, is the Connect client giving up on a server
    that stopped answering: retries exceeded (Spark 4), or gRPC's UNAVAILABLE (Spark 3.5's
    client raises that after its last retry, in its own exception's text).

    >>> server_gone(RuntimeError("<_MultiThreadedRendezvous: status = StatusCode.UNAVAILABLE ...>"))
    True
    >>> server_gone(ValueError("[KPLEX_NULL_KEY] ..."))
    False
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if type(error).__name__ == "RetriesExceeded" or "StatusCode.UNAVAILABLE" in str(error):
            return True
        code = getattr(error, "code", None)
        if callable(code) and getattr(code(), "name", None) == "UNAVAILABLE":
            return True
        error = error.__cause__ or error.__context__
    return False


def lost_reason(url: str, error: BaseException) -> str:
    """Why a statement failed whose server stopped answering, in the words of
    ``KPLEX_REMOTE_SESSION.LOST``: the server, how long the run waited, and gRPC's own cause."""
    cause = error
    while cause.__cause__ or cause.__context__:  # the innermost says what the channel met
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    details = getattr(cause, "details", None)
    text = details() if callable(details) else _first_line(cause)
    template = " ".join(CONDITIONS["KPLEX_REMOTE_SESSION"]["subClass"]["LOST"]["message"])
    return render_text(template, {"url": url, "cause": text, "seconds": f"{SERVER_GONE_S:g}"})


def end_session(spark: Any, gone: bool) -> None:
    """Releases the session on the server, which stays up. Where the server is gone, nothing is
    released and nothing more retried: closing the session waits for the client's background
    releases of the statement, which would otherwise retry for :data:`SERVER_GONE_S` once more.
    Spark 4 reads its policies' limits at each retry; 3.5's releases keep the limits they began
    with, so their channel is closed under them: a call on a closed channel is not retried."""
    if gone:
        spark.release_session_on_close = False  # Spark 4 releases on stop(); 3.5 never does
        client = spark.client
        if hasattr(client, "get_retry_policies"):
            for policy in client.get_retry_policies():
                policy.max_retries = 0
        else:
            client._retry_policy["max_retries"] = 0
            client._channel.close()
    spark.stop()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
