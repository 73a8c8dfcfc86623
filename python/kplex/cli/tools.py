"""``kplex demo`` and ``kplex datagen``: the seed article's example, and generated pageviews.

Their tools (:mod:`kplex.testing`) are loaded when they run.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kplex.kafka import config as kafka_config


def _demo(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from kplex.cli.run import own_spark
    from kplex.testing.demo import DemoTopicsExist, run_demo

    own_spark("kplex demo")
    bootstrap, settings = kafka_config.from_args(args)
    try:
        ok = run_demo(bootstrap, records=args.records, master=args.master, replace=args.replace,
                      kafka_settings=settings)
    except (DemoTopicsExist, KafkaException) as error:
        print(f"kplex demo: {error}", file=sys.stderr)
        return 2
    return 0 if ok else 1


def _datagen(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from kplex.testing.datagen import generate_pageviews

    bootstrap, settings = kafka_config.from_args(args)
    try:
        summary = generate_pageviews(bootstrap, args.topic, args.records, partitions=args.partitions,
                                     users=args.users, out_of_order_ms=args.out_of_order_ms,
                                     skew=args.skew, non_ascii=args.non_ascii, seed=args.seed,
                                     config=kafka_config.librdkafka(settings) if settings else None)
    except (ValueError, KafkaException) as error:  # a bad count, a topic of another size, no broker
        print(f"kplex datagen: {error}", file=sys.stderr)
        return 2
    print(summary.table())
    return 0


def register(sub: Any) -> None:
    """Add ``demo`` and ``datagen`` to the ``kplex`` command's sub-commands."""
    demo = sub.add_parser("demo", help="run the seed article's example and check it")
    kafka_config.add_arguments(demo)
    demo.add_argument("--records", type=int, default=10_000)
    demo.add_argument("--master", default="local[2]")
    demo.add_argument("--replace", action="store_true",
                      help="delete topics pageviews and pageviews_by_user first if they exist (they may be yours)")
    demo.set_defaults(handler=_demo)

    gen = sub.add_parser("datagen", help="generate a pageviews topic keyed by page")
    kafka_config.add_arguments(gen)
    gen.add_argument("--topic", default="pageviews")
    gen.add_argument("--records", type=int, default=10_000)
    gen.add_argument("--partitions", type=int, default=3)
    gen.add_argument("--users", type=int, default=9)
    gen.add_argument("--out-of-order-ms", type=int, default=0)
    gen.add_argument("--skew", type=float, default=0.0, help="share of records from one hot user")
    gen.add_argument("--non-ascii", action="store_true", help="user ids with non-ASCII characters")
    gen.add_argument("--seed", type=int, default=42)
    gen.set_defaults(handler=_datagen)
