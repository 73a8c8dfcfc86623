-- Writes into other catalogs, and plain statements, are left alone.
SET spark.sql.shuffle.partitions = 3;
INSERT INTO spark_catalog.default.copy SELECT value FROM kplex.pageviews;
SELECT key, value FROM kplex.pageviews LIMIT 10;
SHOW TABLES IN kplex;
DROP TABLE IF EXISTS kplex.old;
