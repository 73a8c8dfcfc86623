-- The broker already has both tables: IF NOT EXISTS keeps the stored one,
-- a plain CREATE will fail.
CREATE TABLE IF NOT EXISTS kplex.by_user
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3');
CREATE TABLE kplex.by_page
TBLPROPERTIES ('kplex.virtual_partitions' = '8', 'kplex.physical_partitions' = '8');
INSERT INTO kplex.by_user SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.pageviews;
