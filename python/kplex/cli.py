"""The ``kplex`` command: argument parsing only; the work is in library functions.

    $ kplex demo --bootstrap 127.0.0.1:9092
    $ kplex datagen --topic pageviews --records 100000 --partitions 3
    $ kplex sql run sql/pageviews_by_user.sql
    $ kplex recover --table pageviews_by_user
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from kplex.errors import KplexError


def _bootstrap(args: argparse.Namespace) -> str:
    bootstrap = args.bootstrap or os.environ.get("KPLEX_BOOTSTRAP")
    if not bootstrap:
        raise SystemExit("kplex: no broker: pass --bootstrap HOST:PORT or set KPLEX_BOOTSTRAP")
    return bootstrap


def _demo(args: argparse.Namespace) -> int:
    from kplex.demo import run_demo

    return 0 if run_demo(_bootstrap(args), records=args.records, master=args.master) else 1


def _datagen(args: argparse.Namespace) -> int:
    from kplex.datagen import generate_pageviews

    summary = generate_pageviews(_bootstrap(args), args.topic, args.records, partitions=args.partitions,
                                 users=args.users, out_of_order_ms=args.out_of_order_ms,
                                 skew=args.skew, non_ascii=args.non_ascii, seed=args.seed)
    print(summary.table())
    return 0


def _recover(args: argparse.Namespace) -> int:
    from kplex.admin import recover

    print(recover(_bootstrap(args), args.table))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kplex", description="Repartition Kafka topics onto"
                                     " ordered virtual partitions with Spark SQL.")
    sub = parser.add_subparsers(dest="command", required=True)

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

    rec = sub.add_parser("recover", help="finish or abort what a crashed write left open")
    rec.add_argument("--bootstrap")
    rec.add_argument("--table", required=True)
    rec.set_defaults(handler=_recover)

    for module in ("kplex.sqltools.cli", "kplex.reader_cli"):
        try:
            registrar = __import__(module, fromlist=["register"])
        except ImportError:
            continue
        registrar.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except KplexError as exc:
        print(f"kplex: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
