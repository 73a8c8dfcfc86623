-- At-least-once delivery, null policies and described key and order.
CREATE TABLE kplex.lenient
TBLPROPERTIES ('kplex.virtual_partitions' = '4', 'kplex.physical_partitions' = '2',
               'kplex.delivery' = 'at_least_once', 'kplex.null_key' = 'drop', 'kplex.null_order' = 'first',
               'kplex.key' = 'user id', 'kplex.order' = 'view time', 'kplex.topic' = 'lenient_v1');
USE kplex;
WITH parsed AS (SELECT get_json_object(CAST(value AS STRING), '$.userid') AS user, timestamp, value FROM pageviews)
INSERT INTO lenient
SELECT kplex_key(user), kplex_order(timestamp), value FROM parsed
UNION ALL
SELECT kplex_key(user), kplex_order(timestamp), value FROM parsed;
