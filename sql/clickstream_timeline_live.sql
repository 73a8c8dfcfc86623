-- The original kplex's consistent_read job: one global event-time timeline of the
-- 6-partition `clickstream` topic, computed while reading (nothing is written). One
-- virtual partition merges every physical one by _time; records may arrive up to a
-- second out of order across partitions (max_delay_ms), later ones fail the read.
--
--   kplex sql run sql/clickstream_timeline_live.sql > timeline.jsonl
--   kplex read clickstream --order /_time --max-delay-ms 1000 > timeline.jsonl   # without Spark
CREATE TABLE IF NOT EXISTS kplex.clickstream_timeline_live
TBLPROPERTIES ('kplex.source' = 'clickstream', 'kplex.virtual_partitions' = '1',
               'kplex.order' = 'CAST(get_json_object(CAST(value AS STRING), "$._time") AS BIGINT)',
               'kplex.max_delay_ms' = '1000');

-- The timeline, oldest first: one virtual partition is one ordered Spark partition.
SELECT CAST(value AS STRING) AS value
FROM kplex.clickstream_timeline_live;
