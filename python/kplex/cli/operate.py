"""``kplex recover``, ``kplex control-plane spread`` and ``kplex status``: operating tables."""
from __future__ import annotations

import argparse
import json
from typing import Any

from kplex import settings as options
from kplex.cli import at_least
from kplex.kafka import config as kafka_config

_CLAIM_SETTING = "kplex.writer_claim_timeout_ms"
#: ``--claim-timeout-ms``: milliseconds, no fewer than the setting it stands for takes (options.json).
_CLAIM_TIMEOUT_MS = at_least(options.OPTIONS[_CLAIM_SETTING].minimum, _CLAIM_SETTING)


def _recover(args: argparse.Namespace) -> int:
    from kplex.admin import recover

    bootstrap, settings = kafka_config.from_args(args)
    print(recover(bootstrap, args.table, kafka_options=settings, claim_timeout_ms=args.claim_timeout_ms))
    return 0


def _spread(args: argparse.Namespace) -> int:
    from kplex.admin import spread_control_plane

    bootstrap, settings = kafka_config.from_args(args)
    print(spread_control_plane(bootstrap, kafka_options=settings, claim_timeout_ms=args.claim_timeout_ms))
    return 0


def _status(args: argparse.Namespace) -> int:
    from kplex.status import render, status

    bootstrap, settings = kafka_config.from_args(args)
    # The JVM takes the settings as they are; the Python clients only count (--count).
    state = status(bootstrap, args.table, count=args.count, kafka_options=settings,
                   config=kafka_config.librdkafka(settings, kafka_config.settings_file(args.kafka_config))
                   if settings and args.count else None)
    print(json.dumps(state, indent=2) if args.json else render(state))
    return 0


def register(sub: Any) -> None:
    """Add ``recover``, ``control-plane`` and ``status`` to the ``kplex`` command's sub-commands."""
    rec = sub.add_parser("recover", help="finish or settle what a crashed write left, and say what it found")
    kafka_config.add_arguments(rec)
    rec.add_argument("--table", required=True)
    rec.add_argument("--claim-timeout-ms", type=_CLAIM_TIMEOUT_MS, default=None,
                     help="take over a writer's claim left unrenewed this long (default 6000)")
    rec.set_defaults(handler=_recover)

    plane = sub.add_parser("control-plane", help="the control plane (_kplex_commits)")
    plane_sub = plane.add_subparsers(dest="plane_command", required=True)
    spread = plane_sub.add_parser("spread", help="spread a commit log written before it was scoped by table over"
                                                 " its partitions (with no writer at work)")
    kafka_config.add_arguments(spread)
    spread.add_argument("--claim-timeout-ms", type=_CLAIM_TIMEOUT_MS, default=None,
                        help="a writer's claim unrenewed this long counts as dead (default 6000)")
    spread.set_defaults(handler=_spread)

    stat = sub.add_parser("status", help="a table's state: definition, offsets, high marks, writer claim,"
                                         " pending commit, open transactions, streaming queries and their lag")
    kafka_config.add_arguments(stat)
    stat.add_argument("table")
    stat.add_argument("--count", action="store_true",
                      help="also count the records of each virtual partition (reads the whole topic)")
    stat.add_argument("--json", action="store_true", help="print the state as JSON")
    stat.set_defaults(handler=_status)
