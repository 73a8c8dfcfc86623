"""``kplex read``: stream a table's virtual partitions, in order, without Spark.

    $ kplex read pageviews_by_user --vp 3                  # one virtual partition to stdout
    $ kplex read pageviews_by_user --out-dir out/          # out/pageviews_by_user.<vp>, then "<vp> <path>" lines
    $ kplex read pageviews_by_user --out-dir /tmp/vps --fifo | xargs -P9 -n2 ./consumer   # -P = V
    $ kplex read clickstream --order /_time --max-delay-ms 1000 > timeline   # one global order
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from kplex.definitions import TABLES_TOPIC
from kplex.kafka import config as kafka_config


def _options(args: argparse.Namespace) -> dict[str, Any]:
    options = {"metadata_topic": args.metadata_topic, "start_timestamp": args.start_timestamp,
               "end_timestamp": args.end_timestamp}
    for name in ("key", "order", "virtual_partitions", "max_delay_ms", "late_policy", "late_topic"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options


def _announce(vp: int, path: Path) -> None:
    sys.stdout.write(f"{vp} {path}\n")
    sys.stdout.flush()


def _read(args: argparse.Namespace) -> int:
    from kplex.reader import TableReader
    from kplex.reader.fanout import QUEUE_RECORDS, serve_fifos, write_partition_files, write_records

    bootstrap, settings = kafka_config.from_args(args)
    options = _options(args)
    if settings:
        options["config"] = kafka_config.librdkafka(settings, kafka_config.settings_file(args.kafka_config))
    vps = args.vp or None
    try:
        if args.out_dir is None:
            if args.fifo:
                raise SystemExit("kplex read: --fifo needs --out-dir")
            reader = TableReader(bootstrap, args.table, vps=vps, **options)
            write_records(reader, sys.stdout.buffer, args.format)
            stats = reader.stats
        elif args.fifo:
            stats = serve_fifos(bootstrap, args.table, args.out_dir, vps=vps, fmt=args.format,
                                announce=_announce, queue_records=args.fifo_queue or QUEUE_RECORDS,
                                **options)
        else:
            paths, stats = write_partition_files(bootstrap, args.table, args.out_dir, vps=vps,
                                                 fmt=args.format, **options)
            for vp, path in paths.items():
                _announce(vp, path)
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError) as error:  # --out-dir cannot take them
        print(f"kplex read: {error}", file=sys.stderr)
        return 2
    if args.stats:
        print(f"kplex read {args.table}: {stats.summary()}", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add ``read`` to the ``kplex`` command's sub-commands."""
    read = subparsers.add_parser(
        "read", help="stream a table's virtual partitions in order (no Spark)",
        description="Read a kplex table, a read-time table or a plain topic, each virtual"
                    " partition in its order, to stdout, files or FIFOs (one per virtual partition).")
    read.add_argument("table", help="table or topic name")
    kafka_config.add_arguments(read)
    read.add_argument("--vp", type=int, action="append",
                      help="a virtual partition to read (repeatable; default all)")
    read.add_argument("--out-dir", type=Path,
                      help="write <out-dir>/<table>.<vp> per virtual partition and print '<vp> <path>' lines")
    read.add_argument("--fifo", action="store_true",
                      help="with --out-dir: named pipes, announced first, fed from one read of the table"
                           " through a bounded queue each. The slowest consumer sets the pace of all, and"
                           " a pipe nobody opens stalls the others once its queue is full: run one consumer"
                           " per pipe at the same time (xargs -P V, V = the number of virtual partitions)."
                           " A consumer that stops early (head) ends only its own pipe.")
    read.add_argument("--fifo-queue", type=int, metavar="RECORDS",  # tests: a small bound
                      help=argparse.SUPPRESS)  # records per pipe's queue (default fanout.QUEUE_RECORDS)
    read.add_argument("--format", choices=("value", "json"), default="value",
                      help="value: the record value per line (default); json: one object per record")
    read.add_argument("--stats", action="store_true", help="print counts (late records...) to stderr")
    read.add_argument("--start-timestamp", type=int, metavar="MS",
                      help="start at the first record at or after this Kafka timestamp")
    read.add_argument("--end-timestamp", type=int, metavar="MS",
                      help="stop before the first record at or after this Kafka timestamp")
    adhoc = read.add_argument_group("read-time view of a plain topic / overrides of a read-time table")
    adhoc.add_argument("--order", help="order: Spark SQL over the record, or a JSON pointer like /viewtime")
    adhoc.add_argument("--key", help="key: Spark SQL over the record, or a JSON pointer like /userid")
    adhoc.add_argument("--virtual-partitions", type=int, metavar="V", help="V (default 1: one global order)")
    adhoc.add_argument("--max-delay-ms", type=int, help="bound on lateness across partitions")
    adhoc.add_argument("--late-policy", choices=("fail", "drop", "side_topic"))
    adhoc.add_argument("--late-topic")
    read.add_argument("--metadata-topic", default=TABLES_TOPIC, help=argparse.SUPPRESS)
    read.set_defaults(handler=_read)
