-- case: dialect=trino
CREATE TABLE IF NOT EXISTS kplex.by_user
WITH ("kplex.virtual_partitions" = '9', "kplex.physical_partitions" = '3');
INSERT INTO kplex.by_user
SELECT kplex_key(json_extract_scalar(from_utf8(value), '$.userid')),
       kplex_order(CAST(json_extract_scalar(from_utf8(value), '$.viewtime') AS BIGINT)),
       value
FROM kplex.pageviews;
INSERT INTO kplex.by_user
SELECT kplex_key(json_extract_scalar(from_utf8(value), '$.userid')),
       kplex_ordr(CAST(json_extract_scalar(from_utf8(value), '$.viewtime') AS BIGINT)),
       value
FROM kplex.pageviews;
