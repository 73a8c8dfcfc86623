"""Contender: kplex, as a user runs it (CREATE TABLE, then INSERT INTO ... SELECT).

    python bench/contenders/kplex_insert.py --bootstrap B --source pageviews \\
        --target by_user --records 1000000 --v 9 --p 3 --delivery at_least_once
"""
from __future__ import annotations

import argparse
import io
import json
import time

from common import Timer, arguments, emit, spark_conf, spark_metrics

from kplex.servers import running_server
from kplex.session import kplex_session, last_write_summary
from kplex.sqltools.run import run_file

# How the query reads userid and viewtime out of the JSON value. kplex_json, the
# way a kplex user writes it (JSON pointers, as in the original kplex's job files),
# reads the bytes in place; the others are Spark's own functions, for comparison:
# get_json_object parses the whole value once per call, json_tuple once per row.
INSERTS = {
    "kplex_json": """
INSERT INTO kplex.{target}
SELECT kplex_key(kplex_json(value, '/userid')),
       kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)),
       value
FROM kplex.{source}
""",
    "get_json_object": """
INSERT INTO kplex.{target}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)),
       value
FROM kplex.{source}
""",
    "json_tuple": """
INSERT INTO kplex.{target}
SELECT kplex_key(j.userid), kplex_order(CAST(j.viewtime AS BIGINT)), value
FROM kplex.{source}
LATERAL VIEW json_tuple(CAST(value AS STRING), 'userid', 'viewtime') j AS userid, viewtime
""",
}


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--delivery", choices=["exactly_once", "at_least_once"], default="exactly_once")
    parser.add_argument("--parse", choices=sorted(INSERTS), default="kplex_json",
                        help="how the query reads userid and viewtime out of the JSON value")
    parser.add_argument("--producer-conf", default="{}",
                        help="JSON of Kafka producer settings over kplex's defaults (without the kafka. prefix)")
    parser.add_argument("--warm", action="store_true",
                        help="first run the same INSERT into another table of the same session, untimed: "
                             "the timed one then runs on a JVM whose code is compiled already, as in a "
                             "long-lived session (spark-sql, a notebook) from its second statement on")
    parser.add_argument("--server", action="store_true",
                        help="run the INSERT as a scheduler would on a running server: start `kplex server "
                             "connect` (a JVM of its own, these Spark settings), run the same INSERT into another "
                             "table through `kplex sql run --remote`, untimed, then time this one through another")
    args = parser.parse_args()
    name = f"kplex-{args.target}"
    conf = spark_conf(args, name)
    for key, value in json.loads(args.producer_conf).items():
        conf[f"spark.sql.catalog.kplex.kafka.{key}"] = str(value)
    if args.server:
        on_server(args, conf)
        return
    spark = kplex_session(args.bootstrap, master=args.master, conf=conf, app_name=name)
    spark.sparkContext.setLogLevel("WARN")
    properties = {
        "kplex.virtual_partitions": str(args.v),
        "kplex.physical_partitions": str(args.p),
        "kplex.delivery": args.delivery,
    }
    props = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    if args.warm:
        spark.sql(f"CREATE TABLE kplex.{args.target}_warmup TBLPROPERTIES ({props})")
        spark.sql(INSERTS[args.parse].format(target=f"{args.target}_warmup", source=args.source))
    spark.sql(f"CREATE TABLE kplex.{args.target} TBLPROPERTIES ({props})")
    job_start = time.time()
    with Timer() as job:
        spark.sql(INSERTS[args.parse].format(target=args.target, source=args.source))
    job_end = time.time()
    summary = last_write_summary(spark) or {}
    eventlog = conf["spark.eventLog.dir"]
    spark.stop()
    emit({"job_s": job.seconds, "records": summary.get("rows", args.records),
          "job_start_epoch": job_start, "job_end_epoch": job_end,
          **spark_metrics(eventlog, since_epoch=job_start)})


def on_server(args: argparse.Namespace, conf: dict[str, str]) -> None:
    """``--server``: each INSERT a SQL file of its own, run by ``kplex sql run --remote`` (the library
    function the command calls, each in a session of its own) on one ``kplex server connect``."""
    properties = {"kplex.virtual_partitions": str(args.v), "kplex.physical_partitions": str(args.p),
                  "kplex.delivery": args.delivery}
    props = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    insert = INSERTS[args.parse]
    files = []
    for target in (f"{args.target}_warmup", args.target):
        path = args.workdir / f"{target}.sql"
        path.write_text(f"CREATE TABLE kplex.{target} TBLPROPERTIES ({props});\n"
                        f"{insert.format(target=target, source=args.source).strip()};\n")
        files.append(path)
    settings = [f"{k}={v}" for k, v in conf.items() if k != "spark.log.level"]
    quiet = io.StringIO()
    with running_server("connect", args.bootstrap, args.workdir, settings, master=args.master) as port:
        url = f"sc://127.0.0.1:{port}"
        run_file(files[0], remote=url, bootstrap=args.bootstrap, out=quiet, progress=quiet)
        job_start = time.time()
        summary = run_file(files[1], remote=url, bootstrap=args.bootstrap, out=quiet, progress=quiet)
        job_end = time.time()
    written = summary.outcomes[1]
    emit({"job_s": written.seconds, "records": written.rows or args.records,
          "job_start_epoch": job_start, "job_end_epoch": job_end,
          **spark_metrics(conf["spark.eventLog.dir"], since_epoch=job_start)})


if __name__ == "__main__":
    main()
