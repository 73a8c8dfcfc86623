"""The Spark contenders of bench/streaming/run.py: one Structured Streaming query that
re-keys the pageviews by userid, reading the source with kplex's streaming source and
writing either into a kplex table (exactly once or at least once, each virtual partition
in viewtime order) or with Spark's own Kafka sink (at least once, no order).

    python bench/streaming/spark_query.py --bootstrap B --source SRC --target DST \\
        --sink kplex --delivery exactly_once --checkpoint DIR --progress FILE

It runs until its standard input closes (how the harness stops every contender),
writing each micro-batch's progress (``StreamingQueryProgress.json``) as one line of
``--progress`` and, once the query has started, when each step of its start-up ended (Python's
imports, the Spark session, the source's ``load()``, the kplex table, ``start()``; seconds since
the epoch) as one JSON object in ``--phases``; then it stops the query and exits 0, or 1 if the query failed while
running, 3 if it reported an error only when stopped (a micro-batch interrupted midway).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

# run.py points KPLEX_PYTHON at a snapshot of python/kplex (package and jars) taken when
# the run starts, so a rebuild in the work tree cannot change a run midway.
if os.environ.get("KPLEX_PYTHON"):
    sys.path.insert(0, os.environ["KPLEX_PYTHON"])

from kplex.session import kplex_session  # noqa: E402

#: When each step of the start-up ended (``--phases``): the imports end here.
PHASES = {"imported": time.time()}

#: The projection of the kplex sink: key, order and value, as in sql/pageviews_by_user_stream.sql.
KPLEX_SELECT = ("kplex_key(kplex_json(value, '/userid')) AS key",
                "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value",
                "value")
#: The projection of Spark's Kafka sink: the same key as bytes, the value unchanged.
KAFKA_SELECT = ("CAST(kplex_json(value, '/userid') AS BINARY) AS key", "value")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--source", required=True, help="source topic")
    p.add_argument("--target", required=True, help="kplex table (created here) or topic (already there)")
    p.add_argument("--sink", choices=("kplex", "kafka"), required=True)
    p.add_argument("--delivery", choices=("exactly_once", "at_least_once"), default="exactly_once",
                   help="kplex sink only: the table's kplex.delivery")
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--progress", type=Path, required=True, help="JSON lines, one per micro-batch")
    p.add_argument("--phases", type=Path, help="JSON: when each step of the start-up ended")
    p.add_argument("--v", type=int, default=9, help="kplex.virtual_partitions")
    p.add_argument("--p", type=int, default=3, help="kplex.physical_partitions")
    p.add_argument("--max-delay-ms", type=int, default=1000, help="kplex.max_delay_ms")
    p.add_argument("--idle-release-ms", type=int, default=1000,
                   help="kplex source's idleReleaseMs: an idle input releases what the sink holds back")
    p.add_argument("--trigger", default="0 seconds",
                   help="processing-time trigger interval (0 seconds: each micro-batch right after the last)")
    p.add_argument("--max-offsets-per-trigger", type=int, default=0,
                   help="the source's maxOffsetsPerTrigger (0: none, a micro-batch reads all there is)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--memory", default="1g", help="spark.driver.memory")
    p.add_argument("--extra-jars", default="", help="comma-separated jars for spark.jars (Spark's Kafka sink)")
    return p.parse_args(argv)


def session(args: argparse.Namespace) -> Any:
    # Adaptive execution plans a micro-batch again after each of its stages: about 100 ms
    # more per micro-batch (measured), for nothing in a query whose batches are small and
    # alike (kplex asks for its writer tasks itself: min(V, default parallelism)).
    conf = {"spark.sql.shuffle.partitions": str(args.p), "spark.ui.enabled": "false",
            "spark.driver.memory": args.memory, "spark.ui.showConsoleProgress": "false",
            "spark.sql.adaptive.enabled": "false"}
    if args.extra_jars:
        conf["spark.jars"] = args.extra_jars
    spark = kplex_session(args.bootstrap, master=args.master, conf=conf, app_name=f"bench-stream-{args.target}")
    spark.sparkContext.setLogLevel("WARN")
    return spark


def create_table(spark: Any, args: argparse.Namespace) -> None:
    spark.sql(f"CREATE TABLE kplex.{args.target} TBLPROPERTIES ("
              f"'kplex.virtual_partitions'='{args.v}', 'kplex.physical_partitions'='{args.p}', "
              f"'kplex.max_delay_ms'='{args.max_delay_ms}', 'kplex.delivery'='{args.delivery}')")


def start_query(spark: Any, args: argparse.Namespace) -> Any:
    """The running query: kplex's source, then the chosen sink."""
    reader = (spark.readStream.format("kplex").option("table", args.source)
              .option("startingOffsets", "earliest")
              .option("idleReleaseMs", str(args.idle_release_ms)))
    if args.max_offsets_per_trigger > 0:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    source = reader.load()
    PHASES["source"] = time.time()
    if args.sink == "kplex":
        create_table(spark, args)
        PHASES["table"] = time.time()
        writer = source.selectExpr(*KPLEX_SELECT).writeStream.format("kplex").option("table", args.target)
    else:
        writer = (source.selectExpr(*KAFKA_SELECT).writeStream.format("kafka")
                  .option("kafka.bootstrap.servers", args.bootstrap).option("topic", args.target))
    return (writer.option("checkpointLocation", str(args.checkpoint))
            .trigger(processingTime=args.trigger)
            .queryName(f"bench_{args.sink}_{args.delivery}")
            .start())


def stdin_closed() -> threading.Event:
    """An event set once standard input reaches its end."""
    closed = threading.Event()

    def wait() -> None:
        while sys.stdin.buffer.read(256):
            pass
        closed.set()

    threading.Thread(target=wait, name="stdin-watch", daemon=True).start()
    return closed


def write_new_progress(query: Any, out: TextIO, last_batch: int) -> int:
    """Append every progress not written yet; returns the last batch id written."""
    for progress in query.recentProgress:
        if progress.batchId > last_batch:
            out.write(progress.json.replace("\n", " ") + "\n")
            last_batch = progress.batchId
    out.flush()
    return last_batch


def run(args: argparse.Namespace) -> int:
    spark = session(args)
    PHASES["session"] = time.time()
    query = start_query(spark, args)
    PHASES["started"] = time.time()
    if args.phases:
        args.phases.write_text(json.dumps(PHASES))
    print(f"spark_query: query {query.id} started", file=sys.stderr, flush=True)
    closed = stdin_closed()
    last_batch = -1
    with args.progress.open("w") as out:
        while query.isActive and not closed.wait(0.5):
            last_batch = write_new_progress(query, out, last_batch)
        if query.isActive:
            query.stop()
        write_new_progress(query, out, last_batch)
    failure = query.exception()
    if failure is not None:
        when = "while it was being stopped" if closed.is_set() else "while running"
        print(f"spark_query: the query failed {when}: {failure}", file=sys.stderr, flush=True)
    spark.stop()
    # 3: an error that the stop itself caused (a micro-batch interrupted midway).
    return 0 if failure is None else 3 if closed.is_set() else 1


if __name__ == "__main__":
    sys.exit(run(parse_args()))
