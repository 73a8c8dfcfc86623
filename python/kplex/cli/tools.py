"""``kplex demo`` and ``kplex datagen``: the seed article's example, and generated pageviews.

Their tools (:mod:`kplex.testing`) are loaded when they run.
"""
from __future__ import annotations

import argparse
from typing import Any

from kplex.kafka import config as kafka_config


def _bootstrap(args: argparse.Namespace) -> str:
    return kafka_config.from_args(args)[0]


def _demo(args: argparse.Namespace) -> int:
    from kplex.testing.demo import run_demo

    return 0 if run_demo(_bootstrap(args), records=args.records, master=args.master) else 1


def _datagen(args: argparse.Namespace) -> int:
    from kplex.testing.datagen import generate_pageviews

    summary = generate_pageviews(_bootstrap(args), args.topic, args.records, partitions=args.partitions,
                                 users=args.users, out_of_order_ms=args.out_of_order_ms,
                                 skew=args.skew, non_ascii=args.non_ascii, seed=args.seed)
    print(summary.table())
    return 0


def register(sub: Any) -> None:
    """Add ``demo`` and ``datagen`` to the ``kplex`` command's sub-commands."""
    demo = sub.add_parser("demo", help="run the seed article's example and check it")
    demo.add_argument("--bootstrap", help="Kafka address (default $KPLEX_BOOTSTRAP)")
    demo.add_argument("--records", type=int, default=10_000)
    demo.add_argument("--master", default="local[2]")
    demo.set_defaults(handler=_demo)

    gen = sub.add_parser("datagen", help="generate a pageviews topic keyed by page")
    gen.add_argument("--bootstrap")
    gen.add_argument("--topic", default="pageviews")
    gen.add_argument("--records", type=int, default=10_000)
    gen.add_argument("--partitions", type=int, default=3)
    gen.add_argument("--users", type=int, default=9)
    gen.add_argument("--out-of-order-ms", type=int, default=0)
    gen.add_argument("--skew", type=float, default=0.0, help="share of records from one hot user")
    gen.add_argument("--non-ascii", action="store_true", help="user ids with non-ASCII characters")
    gen.add_argument("--seed", type=int, default=42)
    gen.set_defaults(handler=_datagen)
