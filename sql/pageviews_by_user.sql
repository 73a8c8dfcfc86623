-- The seed article's job, in kplex SQL: the `pageviews` topic (3 partitions, keyed by
-- pageid) re-keyed by userid onto 9 virtual partitions that live on 3 physical ones,
-- each virtual partition in viewtime order, written exactly once.
--
--   kplex datagen --topic pageviews --records 10000 --partitions 3
--   kplex sql run sql/pageviews_by_user.sql
CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3',
               'kplex.key' = 'userid', 'kplex.order' = 'viewtime');

-- kplex_json reads the article's JSON pointers (/userid, /viewtime) straight from the
-- value's bytes; get_json_object(CAST(value AS STRING), '$.userid') gives the same
-- result at a fraction of the speed (bench/RESULTS.md).
INSERT INTO kplex.pageviews_by_user
SELECT kplex_key(kplex_json(value, '/userid')),
       kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)),
       value
FROM kplex.pageviews;
