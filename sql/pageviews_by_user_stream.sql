-- The seed article's job on the fly, as the original kplex runs it: `pageviews` (3
-- partitions keyed by pageid) re-keyed by userid onto 9 virtual partitions, each in
-- viewtime order across every micro-batch, written exactly once per micro-batch. A record
-- is held back until the largest viewtime seen is 5 s past it (kplex.max_delay_ms); a
-- record later than that is dropped and counted (kplex.late_policy).
--
--   kplex datagen --topic pageviews --records 10000 --partitions 3
--   kplex stream sql/pageviews_by_user_stream.sql --checkpoint /tmp/chk/pageviews_by_user
--   (or --available-now: what is there now, then stop)
CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user_stream
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3',
               'kplex.key' = 'userid', 'kplex.order' = 'viewtime',
               'kplex.max_delay_ms' = '5000', 'kplex.late_policy' = 'drop');

INSERT INTO kplex.pageviews_by_user_stream
SELECT kplex_key(kplex_json(value, '/userid')),
       kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)),
       value
FROM STREAM(kplex.pageviews);
