-- One virtual partition: a single total order.
CREATE TABLE IF NOT EXISTS kplex.clickstream_timeline
TBLPROPERTIES ('kplex.virtual_partitions' = '1', 'kplex.physical_partitions' = '1');
INSERT INTO kplex.clickstream_timeline
SELECT kplex_key('clickstream'),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$._time') AS BIGINT)),
       value
FROM kplex.clickstream;
SELECT CAST(value AS STRING) AS value FROM kplex.clickstream_timeline ORDER BY `offset`;
