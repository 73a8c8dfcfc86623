-- A statement that does not parse is named, the others explained.
SET spark.sql.shuffle.partitions = 3;
SELECT (value FROM kplex.pageviews;
