-- The kplex table the pipeline writes: a pipeline may not run CREATE TABLE itself, so
-- `kplex pipeline run` runs this file first, on the same server.
CREATE TABLE IF NOT EXISTS kplex.pageviews_by_user_pipeline
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3',
               'kplex.key' = 'userid', 'kplex.order' = 'viewtime',
               'kplex.max_delay_ms' = '5000', 'kplex.late_policy' = 'drop');
