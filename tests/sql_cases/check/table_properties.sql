CREATE TABLE kplex.bad
TBLPROPERTIES (
  'kplex.virtual_partition' = '9',
  'kplex.physical_partitions' = 'three',
  'kplex.delivery' = 'exactly-once',
  'kplex.null_order' = 'last',
  'kplex.replication_factor' = '0',
  'kplex.colour' = 'blue',
  'physical_partitions' = '3',
  'owner' = 'me'
);
CREATE TABLE kplex.missing TBLPROPERTIES ('kplex.virtual_partitions' = '9');
CREATE TABLE kplex.with_columns (k STRING, v BINARY)
TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3');
-- Warnings: P not dividing V, P above V.
CREATE TABLE kplex.uneven TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '4');
CREATE TABLE kplex.wide TBLPROPERTIES ('kplex.virtual_partitions' = '2', 'kplex.physical_partitions' = '4');
-- Fine: every property, case-insensitive names and choices.
CREATE TABLE IF NOT EXISTS kplex.full
TBLPROPERTIES (
  'KPLEX.Virtual_Partitions' = ' 12 ',
  'kplex.physical_partitions' = '4',
  'kplex.replication_factor' = '-1',
  'kplex.delivery' = 'AT_LEAST_ONCE',
  'kplex.key' = 'user id',
  'kplex.order' = 'view time',
  'kplex.null_key' = 'drop',
  'kplex.null_order' = 'first',
  'kplex.topic' = 'full-topic'
);
-- Fine: a read-time table needs no partition counts here.
CREATE TABLE kplex.virtual
TBLPROPERTIES ('kplex.source' = 'pageviews', 'kplex.max_delay_ms' = '30000', 'kplex.late_policy' = 'side_topic',
               'kplex.late_topic' = 'pageviews_late', 'kplex.virtual_partitions' = '9');
CREATE TABLE kplex.virtual_bad TBLPROPERTIES ('kplex.source' = 'pageviews', 'kplex.max_delay_ms' = '-1');
ALTER TABLE kplex.full SET TBLPROPERTIES ('kplex.delivery' = 'twice', 'kplex.null_kye' = 'drop');
-- Tables of other catalogs are not kplex's business.
CREATE TABLE spark_catalog.default.other (a INT) TBLPROPERTIES ('whatever' = 'x');
-- Topic names: Kafka's rule, for the table's topic (its name, or kplex.topic) and the late topic.
CREATE TABLE kplex.`page views` TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3');
CREATE TABLE kplex.`page views` TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3',
                                               'kplex.topic' = 'page_views');
CREATE TABLE kplex.ok TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3',
                                     'kplex.topic' = 'page views', 'kplex.late_topic' = '..');
CREATE TABLE kplex.`by user!` TBLPROPERTIES ('kplex.source' = 'pageviews', 'kplex.virtual_partitions' = '9');
-- Spark's grammar: unquoted dotted keys; the same key twice in two spellings is an error.
CREATE TABLE kplex.dotted TBLPROPERTIES (kplex.virtual_partitions = 9, kplex.physical_partitions = 3);
CREATE TABLE kplex.twice TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'KPLEX.Virtual_Partitions' = '12',
                                        'kplex.physical_partitions' = '3');
