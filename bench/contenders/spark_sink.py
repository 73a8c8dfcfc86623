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

# The same expressions as kplex's INSERT, plus the sort kplex asks Spark for
# (virtual partition, order value, key bytes, value: a total order).
PROJECT = """
SELECT CAST(userid AS BINARY) AS key,
       value,
       vp,
       viewtime,
       CAST(vp % {p} AS INT) AS partition,
       array(named_struct('key', 'kplex.vp', 'value', CAST(CAST(vp AS STRING) AS BINARY)),
             named_struct('key', 'kplex.order', 'value', CAST(CAST(viewtime AS STRING) AS BINARY)))
         AS headers
FROM (SELECT value,
             get_json_object(CAST(value AS STRING), '$.userid') AS userid,
             kplex_vpartition(get_json_object(CAST(value AS STRING), '$.userid'), {v}) AS vp,
             CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT) AS viewtime
      FROM source)
"""


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--producer-conf", default="{}",
                        help="JSON of Kafka producer settings (without the kafka. prefix)")
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
    out = (spark.sql(PROJECT.format(p=args.p, v=args.v))
           .repartition("vp")
           .sortWithinPartitions("vp", "viewtime", "key", "value")
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
