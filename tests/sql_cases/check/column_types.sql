-- The columns of kplex tables have known types: some mistakes show before Spark.
INSERT INTO kplex.t
SELECT kplex_key(key),
       kplex_order(get_json_object(CAST(value AS STRING), '$.viewtime')),
       value
FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(value), value FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(1.5), value FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), named_struct('a', 1) AS value FROM kplex.s;
-- Fine: TIMESTAMP, DATE, integers, and anything sqlglot cannot type.
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(to_date(timestamp)), value FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(offset * 2), CAST(value AS STRING) AS value FROM kplex.s;
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(some_udf(value)), value FROM kplex.s;
