"""Contender: kplex, as a user runs it (CREATE TABLE, then INSERT INTO ... SELECT).

    python bench/contenders/kplex_insert.py --bootstrap B --source pageviews \\
        --target by_user --records 1000000 --v 9 --p 3 --delivery at_least_once
"""
from __future__ import annotations

import json
import time

from common import Timer, arguments, emit, spark_conf, spark_metrics

from kplex.session import kplex_session, last_write_summary

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
    args = parser.parse_args()
    name = f"kplex-{args.target}"
    conf = spark_conf(args, name)
    for key, value in json.loads(args.producer_conf).items():
        conf[f"spark.sql.catalog.kplex.kafka.{key}"] = str(value)
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


if __name__ == "__main__":
    main()
