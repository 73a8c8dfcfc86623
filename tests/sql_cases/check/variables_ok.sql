-- case: var.source=pageviews var.target=pageviews_by_user var.V=9
CREATE TABLE IF NOT EXISTS kplex.${target}
TBLPROPERTIES ('kplex.virtual_partitions' = '${V}', 'kplex.physical_partitions' = '3');
INSERT INTO kplex.${target}
SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.${source};
