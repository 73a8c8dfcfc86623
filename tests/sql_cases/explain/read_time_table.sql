-- A read-time table: nothing is written.
CREATE TABLE kplex.pageviews_by_user_view
TBLPROPERTIES ('kplex.source' = 'pageviews', 'kplex.virtual_partitions' = '9', 'kplex.max_delay_ms' = '30000');
