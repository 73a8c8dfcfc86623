-- The seed article's job as the original kplex ran it: re-keyed while reading, no topic
-- written. `pageviews` (3 partitions keyed by pageid) read as 9 virtual partitions keyed
-- by userid, each in viewtime order: the source partitions are merged in event time,
-- waiting at most 30 s for stragglers; a record later than that is dropped and counted.
--
--   kplex datagen --topic pageviews --records 10000 --partitions 3
--   kplex sql run sql/pageviews_by_user_live.sql
--   kplex read pageviews_by_user_live --out-dir /tmp/vps --fifo | xargs -P9 -n2 <consumer>
CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user_live
TBLPROPERTIES ('kplex.source' = 'pageviews', 'kplex.virtual_partitions' = '9',
               'kplex.key' = 'get_json_object(CAST(value AS STRING), "$.userid")',
               'kplex.order' = 'CAST(get_json_object(CAST(value AS STRING), "$.viewtime") AS BIGINT)',
               'kplex.max_delay_ms' = '30000', 'kplex.late_policy' = 'drop');

-- Each virtual partition is one Spark task reading its records in order.
SELECT vpartition, count(*) AS pageviews, min(order_value) AS first_viewtime,
       max(order_value) AS last_viewtime
FROM kplex.pageviews_by_user_live
GROUP BY vpartition
ORDER BY vpartition;
