-- One global event-time timeline of the 6-partition `clickstream` topic: the
-- original kplex's consistent_read job, by hand. Its records look like
--   {"_time":1565780158477,"userid":7,"ip":"222.245.174.248","status":"405",...}
--
-- A kplex table with a single virtual partition on a single physical one holds
-- every record in one order: by _time, the event time in epoch milliseconds.
-- kplex_key still needs a non-null key; with V = 1 every key lands in virtual
-- partition 0, so a constant does.
--
--   kplex sql run sql/clickstream_timeline.sql > timeline.jsonl
CREATE TABLE IF NOT EXISTS kplex.clickstream_timeline
TBLPROPERTIES ('kplex.virtual_partitions' = '1', 'kplex.physical_partitions' = '1',
               'kplex.key' = 'constant: one global timeline', 'kplex.order' = '_time');

INSERT INTO kplex.clickstream_timeline
SELECT kplex_key('clickstream'),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$._time') AS BIGINT)),
       value
FROM kplex.clickstream;

-- The timeline, oldest first: `kplex sql run` prints query rows on standard output.
SELECT CAST(value AS STRING) AS value
FROM kplex.clickstream_timeline
ORDER BY `offset`;
