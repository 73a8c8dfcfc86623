"""``kplex stream``, ``kplex pipeline run`` and ``kplex server``: running Spark with kplex.

A usage error is exit 2, named, before anything starts (as argparse's own): a ``--conf``
without ``=``, ``stream --release-at-end`` without ``--available-now``, or ``pipeline run
--remote`` with ``--bootstrap`` or ``--kafka-config``. A server that cannot start (its port
taken, its JVM exiting) is exit 1, with its reason.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kplex import settings as options
from kplex.kafka import config as kafka_config


def own_spark(command: str) -> None:
    """``command`` runs in a Spark of its own (a stream's graceful stop needs its driver): an
    exported ``$SPARK_REMOTE`` (which ``kplex sql run`` follows) would make pyspark refuse the
    local master, so it is set aside for this process, saying so."""
    import os

    remote = os.environ.pop("SPARK_REMOTE", None)
    if remote:
        print(f"{command}: runs in a Spark of its own; $SPARK_REMOTE ({remote}) is not used", file=sys.stderr)


def _stream(args: argparse.Namespace) -> int:
    if args.file != "stop" and args.release_at_end and not args.available_now:
        args.usage_error("--release-at-end needs --available-now: only a run that reads what the source holds"
                         " and stops has an end of input to release every held record at")

    from kplex.session import kplex_session
    from kplex.streaming import request_stop, run_stream_file

    if args.file == "stop":
        # `kplex stream stop --checkpoint DIR`: the `kplex stream` running there releases what
        # it holds at its next micro-batch, then stops (kplex.streaming.stop_gracefully).
        try:
            path = request_stop(args.checkpoint)
        except FileNotFoundError as error:
            print(f"kplex stream stop: {error}", file=sys.stderr)
            return 2
        print(f"kplex: asked the stream on checkpoint {args.checkpoint} to stop gracefully ({path})")
        return 0

    from kplex.sqltools.errors import CheckFailed, StatementFailed

    if not Path(args.file).is_file():
        print(f"kplex stream: no SQL file at {args.file}", file=sys.stderr)
        return 2
    own_spark("kplex stream")
    bootstrap, settings = kafka_config.from_args(args)
    conf = dict(c.split("=", 1) for c in args.conf)  # each KEY=VALUE (_setting)
    # A session that runs only this query: adaptive execution would plan each micro-batch
    # again after each stage (about 100 ms a batch, bench/streaming) for nothing.
    spark = kplex_session(bootstrap, master=args.master, conf={"spark.ui.showConsoleProgress": "false",
                                                              "spark.sql.adaptive.enabled": "false", **conf},
                          kafka_options=settings)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        run_stream_file(args.file, spark, args.checkpoint, trigger=args.trigger, available_now=args.available_now,
                        release_at_end=args.release_at_end, resume=args.resume, out=sys.stdout,
                        timeout=args.timeout)
    except (CheckFailed, StatementFailed) as error:  # as `kplex sql run`
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _pipeline(args: argparse.Namespace) -> int:
    import tempfile

    from kplex.pipelines import run_pipeline
    from kplex.servers import ServerDidNotStart, running_server
    from kplex.session import require_spark

    spec = Path(args.spec)
    if spec.is_dir():
        spec = spec / "spark-pipeline.yml"
    if not spec.exists():
        raise SystemExit(f"kplex pipeline: no pipeline spec at {spec}")
    configuration = {}
    if args.resume:
        configuration[options.session_key(options.STARTING_OFFSETS)] = options.RESUME_FROM_TABLE
    if args.release_at_end:
        configuration[options.session_key(options.RELEASE_AT_END)] = "true"
    if args.remote:
        # The catalog (its brokers and credentials) is the server's: given to the pipeline's
        # settings, credentials would go into the spec's copy on disk and the server's graph.
        given = [flag for flag, value in (("--bootstrap", args.bootstrap), ("--kafka-config", args.kafka_config))
                 if value]
        if given:
            print(f"kplex pipeline run: {' and '.join(given)} set the catalog of the server started for the run;"
                  f" the catalog of a --remote server ({args.remote}) is the server's own: give"
                  f" {' and '.join(given)} to its `kplex server connect`", file=sys.stderr)
            return 2
        return run_pipeline(spec, args.remote, configuration)
    require_spark("Declarative Pipelines (spark-pipelines)", (4, 1))  # before a server starts for it
    bootstrap, settings = kafka_config.from_args(args)
    try:
        with tempfile.TemporaryDirectory(prefix="kplex-pipeline-") as workdir, \
                running_server("connect", bootstrap, Path(workdir), args.conf, master=args.master,
                               kafka_options=settings, restricted=False) as port:  # this run's own
            return run_pipeline(spec, f"sc://127.0.0.1:{port}", configuration)
    except ServerDidNotStart as error:
        print(f"kplex pipeline run: {error}", file=sys.stderr)
        return 1


def _server(args: argparse.Namespace) -> int:
    from kplex.servers import exec_server

    bootstrap, settings = kafka_config.from_args(args)
    exec_server(args.kind, bootstrap, args.port, args.host, args.master, args.conf, kafka_options=settings,
                restricted=not args.unrestricted)
    return 0  # not reached: the server replaced this process


def _setting(text: str) -> str:
    """A ``--conf`` value: ``KEY=VALUE``, else argparse's usage error (exit 2) naming it.

    >>> _setting("spark.sql.shuffle.partitions=4")
    'spark.sql.shuffle.partitions=4'
    """
    key, sep, _ = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return text


def register(sub: Any) -> None:
    """Add ``stream``, ``pipeline`` and ``server`` to the ``kplex`` command's sub-commands."""
    stream = sub.add_parser("stream", help="run a streaming SQL job into a kplex table",
                            description="Run the statements of a SQL file; its INSERT INTO kplex.<table>"
                                        " SELECT ... FROM STREAM(<source>) runs as a Structured Streaming"
                                        " query (exactly once per micro-batch, order kept across them),"
                                        " printing each micro-batch's figures, until it stops.")
    stream.add_argument("file", help="the SQL file, e.g. sql/pageviews_by_user_stream.sql; or `stop`: ask the"
                                     " `kplex stream` running on --checkpoint to write what it holds and stop")
    kafka_config.add_arguments(stream)
    stream.add_argument("--checkpoint", required=True, help="the query's checkpoint directory (restart from it)")
    stream.add_argument("--trigger", default="1 second", help="micro-batch interval (default '1 second')")
    stream.add_argument("--available-now", action="store_true",
                        help="read what the source holds now and stop; records within kplex.max_delay_ms of"
                             " the slowest partition stay held for the next run, so N runs write what one would")
    stream.add_argument("--release-at-end", action="store_true",
                        help="with --available-now: the input has ended, release every held record (a later"
                             " record below what this wrote is late)")
    stream.add_argument("--resume", action="store_true",
                        help="a new checkpoint starts where the table's last stream from the same source stopped"
                             " and writes what that stream held back (startingOffsets = 'table'): change a query"
                             " without losing or repeating records")
    stream.add_argument("--timeout", type=float, help="stop the query after this many seconds")
    stream.add_argument("--master", default="local[*]")
    stream.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                        help="another Spark setting")
    stream.set_defaults(handler=_stream, usage_error=stream.error)

    pipeline = sub.add_parser("pipeline", help="run a Spark Declarative Pipeline whose sinks are kplex tables")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True)
    run_pipeline = pipeline_commands.add_parser(
        "run", help="create its tables (tables.sql), then run it on a Spark Connect server with kplex",
        description="Run spark-pipelines on a Spark Connect server with kplex: one started for the run"
                    " (on --bootstrap), or --remote sc://HOST:PORT (kplex server connect).")
    run_pipeline.add_argument("spec", help="the spark-pipeline.yml, or its folder (e.g. sql/pipeline)")
    kafka_config.add_arguments(run_pipeline)
    run_pipeline.add_argument("--remote", help="an existing kplex Spark Connect server, sc://HOST:PORT, whose"
                                               " catalog is its own (no --bootstrap, --kafka-config)")
    run_pipeline.add_argument("--master", default="local[*]", help="of the server started for the run")
    run_pipeline.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                              help="another Spark setting of the server started for the run")
    run_pipeline.add_argument("--resume", action="store_true",
                              help="flows on a new storage (checkpoints) start where their table's last stream from"
                                   " the same source stopped and write what it held back (startingOffsets = 'table')")
    run_pipeline.add_argument("--release-at-end", action="store_true",
                              help="this update is the last: release every held record at the end of the input")
    run_pipeline.set_defaults(handler=_pipeline)

    server = sub.add_parser("server", help="run a Spark Connect or Thrift (JDBC) server with kplex on it",
                            description="Start a Spark Connect server (sc://HOST:PORT) or Spark's Thrift"
                                        " JDBC/ODBC server (jdbc:hive2://HOST:PORT) with kplex's jars,"
                                        " SQL functions and catalog. Runs in the foreground until stopped.")
    server.add_argument("kind", choices=("connect", "thrift"))
    kafka_config.add_arguments(server)
    server.add_argument("--port", type=int, help="default 15002 (connect) or 10000 (thrift)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--master", default="local[*]")
    server.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                        help="another Spark setting, e.g. spark.sql.catalog.kplex.kafka.security.protocol=SASL_SSL")
    server.add_argument("--unrestricted", action="store_true",
                        help="a server for one user: let a statement set any kafka.* option and register kplex"
                             " catalogs (a shared server refuses both, so that its Kafka credentials, addresses"
                             " and files stay its own; spark.kplex.server.restricted)")
    server.set_defaults(handler=_server)
