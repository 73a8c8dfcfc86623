-- The seed article's job, no broker: V and P from the file.
CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3');

INSERT INTO kplex.pageviews_by_user
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)),
       value
FROM kplex.pageviews;
