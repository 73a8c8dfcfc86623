"""A Spark job over Confluent-framed Avro and Protobuf sources, run by tests/test_confluent_sources.py
in a Spark of its own (it needs spark-avro on the classpath from the start).

    python tests/confluent_job.py SETTINGS_JSON

SETTINGS_JSON names the bootstrap, the source topics, the tables to create, the Avro schema,
the checkpoint and the spark-avro jar. It runs, as a user would:
1. INSERT INTO kplex.<avro_table> keyed by userid and ordered by viewtime, both decoded by
   Spark's from_avro from kplex_confluent_payload(value) (in SQL; on Spark 3.5, whose SQL lacks
   from_avro, from a temporary view the DataFrame function decoded);
2. the same as a streaming query (Trigger.AvailableNow, releaseAtEnd) into kplex.<stream_table>;
3. INSERT INTO kplex.<protobuf_table> keyed by the Protobuf payload bytes;
and prints one JSON line: the schema ids Spark read per source.
"""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.functions import expr

from kplex import configure_spark_with_kplex


def main(settings: dict) -> None:
    builder = (SparkSession.builder.master("local[2]").appName("kplex-confluent-job")
               .config("spark.jars", settings["avro_jar"]).config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    spark = configure_spark_with_kplex(builder, settings["bootstrap"]).getOrCreate()
    schema, v = settings["avro_schema"], settings["virtual_partitions"]
    for table in (settings["avro_table"], settings["stream_table"], settings["protobuf_table"]):
        spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{v}',"
                  " 'kplex.physical_partitions' = '3')")
    if spark.version.startswith("3.5."):
        # Spark 3.5's from_avro is a DataFrame function only (SQL has it from 4.0): the README's
        # recipe for 3.5 decodes in a temporary view and INSERTs from it.
        (spark.table(f"kplex.{settings['avro_source']}")
         .select(from_avro(expr("kplex_confluent_payload(value)"), schema).alias("pv"), "value")
         .createOrReplaceTempView("pageviews_decoded"))
        spark.sql(f"""INSERT INTO kplex.{settings['avro_table']}
            SELECT kplex_key(pv.userid), kplex_order(pv.viewtime), value FROM pageviews_decoded""")
    else:
        spark.sql(f"""INSERT INTO kplex.{settings['avro_table']}
            SELECT kplex_key(pv.userid), kplex_order(pv.viewtime), value
            FROM (SELECT from_avro(kplex_confluent_payload(value), '{schema}') AS pv, value
                  FROM kplex.{settings['avro_source']})""")
    query = (spark.readStream.format("kplex").option("table", settings["avro_source"])
             .option("releaseAtEnd", "true").load()
             .select(from_avro(expr("kplex_confluent_payload(value)"), schema).alias("pv"), "value")
             .selectExpr("kplex_key(pv.userid) AS key", "kplex_order(pv.viewtime) AS order_value", "value")
             .writeStream.format("kplex").option("table", settings["stream_table"])
             .option("checkpointLocation", settings["checkpoint"]).trigger(availableNow=True).start())
    query.awaitTermination()
    spark.sql(f"""INSERT INTO kplex.{settings['protobuf_table']}
        SELECT kplex_key(kplex_confluent_payload(value, 'protobuf')), kplex_order(offset), value
        FROM kplex.{settings['protobuf_source']}""")
    ids = {}
    for source in (settings["avro_source"], settings["protobuf_source"]):
        rows = spark.sql(f"SELECT DISTINCT kplex_confluent_schema_id(value) AS id FROM kplex.{source}").collect()
        ids[source] = sorted(r.id for r in rows)
    print(json.dumps({"schema_ids": ids}))
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
