"""The ``kplex`` command: argument parsing only; the work is in library functions.

    $ kplex demo --bootstrap 127.0.0.1:9092
    $ kplex datagen --topic pageviews --records 100000 --partitions 3
    $ kplex sql run sql/pageviews_by_user.sql
    $ kplex read pageviews_by_user --vp 3
    $ kplex recover --table pageviews_by_user
    $ kplex server connect --port 15002
    $ kplex stream sql/pageviews_by_user_stream.sql --checkpoint /chk/pageviews_by_user
    $ kplex pipeline run sql/pipeline --bootstrap 127.0.0.1:9092

Every command comes from a module of this package with a ``register(subparsers)``
function that adds its sub-commands, each with its ``handler`` (:data:`COMMAND_MODULES`);
a module that fails to import stops the command with an error naming it, never leaves
its commands out.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import Callable, Sequence

from kplex.errors import BrokerUnreachableError, KplexError

#: Modules that add sub-commands to ``kplex`` with ``register(subparsers)``, in help order.
COMMAND_MODULES = ("kplex.cli.tools", "kplex.cli.sql", "kplex.cli.read", "kplex.cli.advise", "kplex.cli.operate",
                   "kplex.cli.run")


def _command_module(name: str) -> ModuleType:
    """The module ``name`` of some sub-commands; failing to import it is an error, never skipped."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise SystemExit(f"kplex: cannot load the commands of module {name}: "
                         f"{type(error).__name__}: {error}") from error


def at_least(minimum: int, setting: str | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``minimum``, else argparse's usage error (exit 2)
    naming the minimum, and the ``setting`` it is the minimum of.

    >>> at_least(1)("3")
    3
    >>> at_least(2000, "kplex.writer_claim_timeout_ms")("500")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a whole number >= 2000 (kplex.writer_claim_timeout_ms's minimum), got '500'
    """

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            of = f" ({setting}'s minimum)" if setting else ""
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}{of}, got {text!r}")
        return value

    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kplex", description="Repartition Kafka topics onto"
                                     " ordered virtual partitions with Spark SQL.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        _command_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except KplexError as exc:
        print(f"kplex: {exc}", file=sys.stderr)
        source = getattr(args, "bootstrap_source", None)
        if isinstance(exc, BrokerUnreachableError) and source:
            print(f"kplex: that address is {source} (a command takes --bootstrap, else the --kafka-config"
                  " file's bootstrap.servers, else $KPLEX_BOOTSTRAP)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
