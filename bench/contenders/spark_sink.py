"""Contender: Spark's built-in Kafka source and sink (spark-sql-kafka-0-10), written
to give the same output as kplex: the same key, partition (``kplex_vpartition(key, V)
% P``), ``kplex.vp``/``kplex.order`` headers, and each virtual partition sorted by
order value. What it cannot give is exactly once: the sink is at least once.

    python bench/contenders/spark_sink.py --bootstrap B --source pageviews \\
        --target by_user --records 1000000 --v 9 --p 3 --extra-jars JARS \\
        [--producer-conf '{"linger.ms": "10"}']
"""
from __future__ import annotations

import json

from common import Timer, arguments, emit, spark_conf, spark_metrics

from kplex.session import kplex_session

# The same expressions as kplex's INSERT (the same JSON extraction, so that the two
# differ only in how they write), plus the sort kplex asks Spark for inside each task
# (order value, key bytes, value: a total order, which is every virtual partition's
# order too).
PROJECT = """
SELECT CAST(userid AS BINARY) AS key,
       value,
       vp,
       viewtime,
       CAST(vp % {p} AS INT) AS partition,
       array(named_struct('key', 'kplex.vp', 'value', CAST(CAST(vp AS STRING) AS BINARY)),
             named_struct('key', 'kplex.order', 'value', CAST(CAST(viewtime AS STRING) AS BINARY)))
         AS headers
FROM (SELECT value, userid, kplex_vpartition(userid, {v}) AS vp, viewtime
      FROM (SELECT value, {userid} AS userid, CAST({viewtime} AS BIGINT) AS viewtime FROM source))
"""
EXTRACT = {
    "kplex_json": ("kplex_json(value, '/userid')", "kplex_json(value, '/viewtime')"),
    "get_json_object": ("get_json_object(CAST(value AS STRING), '$.userid')",
                        "get_json_object(CAST(value AS STRING), '$.viewtime')"),
}


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--producer-conf", default="{}",
                        help="JSON of Kafka producer settings (without the kafka. prefix)")
    parser.add_argument("--parse", choices=sorted(EXTRACT), default="kplex_json",
                        help="how userid and viewtime are read out of the JSON value")
    args = parser.parse_args()
    name = f"spark-sink-{args.target}"
    conf = spark_conf(args, name)
    spark = kplex_session(args.bootstrap, master=args.master, conf=conf, app_name=name)
    spark.sparkContext.setLogLevel("WARN")
    (spark.read.format("kafka")
     .option("kafka.bootstrap.servers", args.bootstrap)
     .option("subscribe", args.source)
     .option("startingOffsets", "earliest")
     .option("endingOffsets", "latest")
     .load()
     .createOrReplaceTempView("source"))
    userid, viewtime = EXTRACT[args.parse]
    out = (spark.sql(PROJECT.format(p=args.p, v=args.v, userid=userid, viewtime=viewtime))
           .repartition("vp")
           .sortWithinPartitions("viewtime", "key", "value")
           .select("key", "value", "partition", "headers"))
    writer = (out.write.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("topic", args.target))
    for key, value in json.loads(args.producer_conf).items():
        writer = writer.option(f"kafka.{key}", str(value))
    with Timer() as job:
        writer.save()
    eventlog = conf["spark.eventLog.dir"]
    spark.stop()
    emit({"job_s": job.seconds, "records": args.records, **spark_metrics(eventlog)})


if __name__ == "__main__":
    main()
