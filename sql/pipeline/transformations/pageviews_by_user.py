"""The pipeline's kplex sink, and its flow: pageviews re-keyed by userid, each virtual
partition in viewtime order across micro-batches, exactly once per micro-batch."""
from pyspark import pipelines as dp
from pyspark.sql import SparkSession

spark = SparkSession.active()

# The kplex table of tables.sql (a pipeline may not create it itself).
dp.create_sink("pageviews_by_user", format="kplex", options={"table": "pageviews_by_user_pipeline"})


@dp.append_flow(target="pageviews_by_user")
def repartition_pageviews():
    return spark.sql("""
        SELECT kplex_key(kplex_json(value, '/userid')) AS key,
               kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value,
               value
        FROM STREAM(kplex.pageviews)""")
