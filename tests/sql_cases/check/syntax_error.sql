-- A parenthesis left open: the error names line and column; the other
-- statements are still checked.
CREATE TABLE IF NOT EXISTS kplex.t
TBLPROPERTIES ('kplex.virtual_partitions' = '4', 'kplex.physical_partitions' = '2');

INSERT INTO kplex.t
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid'),
       kplex_order(timestamp),
       value
FROM kplex.pageviews;

SELECT kplex_ordr(offset) FROM kplex.t;
