"""``kplex sql`` and ``kplex translate``: command-line wiring of kplex's SQL tools (:mod:`kplex.sqltools`).

``register(subparsers)`` adds to the ``kplex`` command::

    kplex sql run FILE.sql [--var NAME=VALUE ...] [--dialect D] [--bootstrap HOST:PORT]
                           [--master URL | --remote sc://HOST:PORT] [--conf KEY=VALUE ...]
                           [--spark-log-level LEVEL] [--dry-run]
    kplex sql check FILE.sql [--var NAME=VALUE ...] [--dialect D]
    kplex sql explain FILE.sql [--var NAME=VALUE ...] [--dialect D] [--bootstrap HOST:PORT] [--timeout S]
    kplex translate JOB.toml|JOB.json [--physical-partitions N] [-o OUT.sql]

Each handler is stored as ``handler`` in the parsed namespace and returns the
exit code: 0 done, 1 the SQL (or job) has errors or a statement failed, 2 the
command cannot start (a wrong argument, a file it cannot read, no broker given, no Spark).

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="kplex")
>>> register(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["sql", "check", "job.sql", "--var", "t=pageviews"])
>>> args.handler.__name__, args.var
('check_command', ['t=pageviews'])
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from kplex.kafka import config as kafka_config
from kplex.sqltools import remote
from kplex.sqltools.check import check_file
from kplex.sqltools.diagnostics import has_errors
from kplex.sqltools.errors import (
    CheckFailed,
    NoBootstrap,
    SessionUnavailable,
    StatementFailed,
    UnknownDialect,
    UntranslatableJob,
)
from kplex.sqltools.explain import explain_file
from kplex.sqltools.run import SPARK_LOG_LEVELS, run_file, spark_statements
from kplex.sqltools.script import ScriptEncodingError, read_script
from kplex.sqltools.translate import translate_file

__all__ = ["register", "check_command", "explain_command", "run_command", "translate_command"]


def _pairs(values: Sequence[str] | None, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"{option} expects NAME=VALUE, got {item!r}")
        pairs[name.strip()] = value
    return pairs


def _log_level(text: str) -> str:
    """A ``--spark-log-level`` value, upper-cased, else argparse's usage error (exit 2) naming it.

    >>> _log_level("warn")
    'WARN'
    """
    if text.upper() not in SPARK_LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of Spark's log levels: {', '.join(SPARK_LOG_LEVELS)}")
    return text.upper()


def _seconds(text: str) -> float:
    """A ``--timeout`` value: seconds > 0, else argparse's usage error (exit 2) naming it (librdkafka
    takes a negative timeout for none: an unreachable broker would be waited for forever).

    >>> _seconds("2.5")
    2.5
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return seconds


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the SQL file")
    parser.add_argument("--var", action="append", metavar="NAME=VALUE",
                        help="replace ${NAME} in the file by VALUE (repeatable)")
    parser.add_argument("--dialect", default="spark",
                        help="SQL dialect the file is written in (sqlglot name: spark, trino, postgres, "
                        "databricks, ...); default spark")


def _kafka(parser: argparse.ArgumentParser, bootstrap_help: str) -> None:
    """``--bootstrap`` (falling back as :func:`kplex.sqltools.bootstrap.resolve_bootstrap` does)
    and the Kafka client settings."""
    parser.add_argument("--bootstrap", help=f"{bootstrap_help} (default: $KPLEX_BOOTSTRAP, then the file's"
                        " '-- kplex.bootstrap = ...' comment)")
    kafka_config.add_arguments(parser, bootstrap=False)


def register(subparsers: Any) -> None:
    """Add the ``sql`` (run / check / explain) and ``translate`` commands."""
    sql = subparsers.add_parser("sql", help="run, check or explain a kplex SQL file",
                                description="Run, check or explain a file of kplex SQL statements.")
    commands = sql.add_subparsers(dest="sql_command", metavar="{run,check,explain}", required=True)

    run = commands.add_parser("run", help="run every statement in one Spark session",
                              description="Check the file, then run its statements in order in one Spark "
                              "session with kplex configured. Query rows go to stdout, progress to stderr.")
    _common(run)
    _kafka(run, "Kafka bootstrap servers")
    run.add_argument("--master", help="Spark master URL (default: Spark's own, e.g. local[*])")
    run.add_argument("--remote", metavar="sc://HOST:PORT",
                     help="run the statements on this Spark Connect server (`kplex server connect`), whose JVM "
                     "stays up and warm between runs, instead of in a Spark of this process's own "
                     f"(default ${remote.ENV_VAR}); a bootstrap is then optional: without one, the server's")
    run.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    run.add_argument("--spark-log-level", type=_log_level, metavar="LEVEL",
                     help="Spark's own log from this level up: " + ", ".join(SPARK_LOG_LEVELS) + " (default"
                     " FATAL: failures are reported anyway); with --remote the server's log is the server's")
    run.add_argument("--dry-run", action="store_true", help="check and print the Spark SQL, run nothing")
    run.set_defaults(handler=run_command)

    check = commands.add_parser("check", help="parse and validate without Spark",
                                description="Find syntax errors and kplex mistakes without starting Spark.")
    _common(check)
    check.set_defaults(handler=check_command)

    explain = commands.add_parser("explain", help="what each kplex statement will do, without Spark",
                                  description="Source, key, order, V and P, partition mapping and delivery "
                                  "of each kplex statement.")
    _common(explain)
    _kafka(explain, "read stored table definitions from this Kafka cluster")
    explain.add_argument("--timeout", type=_seconds, default=5.0, help="seconds to wait for the broker (default 5)")
    explain.set_defaults(handler=explain_command)

    translate = subparsers.add_parser("translate", help="turn an original kplex job file into kplex SQL",
                                      description="Print the kplex SQL equivalent of an original kplex job "
                                      "file (TOML or JSON), ready for `kplex sql run`.")
    translate.add_argument("job", help="the job file (.toml or .json)")
    translate.add_argument("--physical-partitions", type=int, metavar="N",
                           help="P of virtual-partition outputs (default: largest divisor of V not above workers)")
    translate.add_argument("-o", "--output", help="write the SQL to this file instead of stdout")
    translate.set_defaults(handler=translate_command)


def _handled(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn the errors every command can meet into a message and exit code 2."""

    @functools.wraps(handler)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (argparse.ArgumentTypeError, OSError, NoBootstrap, SessionUnavailable, UnknownDialect,
                ScriptEncodingError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2

    return wrapper


@_handled
def check_command(args: argparse.Namespace) -> int:
    result = check_file(args.file, _pairs(args.var, "--var"), args.dialect)
    if result.diagnostics:
        print(result.format())
    errors = sum(1 for d in result.diagnostics if d.severity == "error")
    if errors:
        print(f"{args.file}: {errors} error(s)")
        return 1
    print(f"{args.file}: ok, {len(result.script.statements)} statement(s)")
    return 0


@_handled
def explain_command(args: argparse.Namespace) -> int:
    settings = kafka_config.load(args.kafka_config)
    bootstrap = args.bootstrap or kafka_config.bootstrap_of(settings)
    settings.pop("bootstrap.servers", None)
    variables = _pairs(args.var, "--var")
    print(explain_file(args.file, variables, args.dialect, bootstrap, args.timeout, settings,
                       kafka_config.settings_file(args.kafka_config)))
    # The file's own errors (syntax, undefined variables) are in the text; `kplex sql check` has the rest.
    return 1 if has_errors(read_script(args.file, variables, args.dialect).diagnostics) else 0


@_handled
def run_command(args: argparse.Namespace) -> int:
    variables = _pairs(args.var, "--var")
    try:
        if args.dry_run:
            from kplex.sqltools.check import check_script, require_clean

            script = require_clean(check_script(read_script(args.file, variables, args.dialect))).script
            print(";\n\n".join(spark_statements(script)) + ";")
            return 0
        on = remote.remote_of(args.remote, args.master)
        if on and args.spark_log_level:
            print(f"kplex sql run: --spark-log-level is ignored on a Spark Connect server ({on}): its log is"
                  " the server's", file=sys.stderr)
        settings = kafka_config.load(args.kafka_config)
        bootstrap = args.bootstrap or kafka_config.bootstrap_of(settings)
        settings.pop("bootstrap.servers", None)
        run_file(args.file, variables=variables, dialect=args.dialect, bootstrap=bootstrap,
                 master=args.master, conf=_pairs(args.conf, "--conf"), spark_log_level=args.spark_log_level or "FATAL",
                 kafka_settings=settings, remote=on)
    except (CheckFailed, StatementFailed) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


@_handled
def translate_command(args: argparse.Namespace) -> int:
    try:
        sql = translate_file(args.job, args.physical_partitions)
    except UntranslatableJob as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(sql, encoding="utf-8")
    else:
        sys.stdout.write(sql)
    return 0

