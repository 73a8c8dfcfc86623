-- Exactly one key, one order and one value column in each SELECT written.
-- 1: no key
INSERT INTO kplex.t SELECT kplex_order(timestamp), value FROM kplex.s;
-- 2: no order
INSERT INTO kplex.t SELECT kplex_key(key), value FROM kplex.s;
-- 3: two keys (the call and a column named key)
INSERT INTO kplex.t SELECT kplex_key(topic), key, kplex_order(timestamp), value FROM kplex.s;
-- 4: two orders
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), offset AS order_value, value FROM kplex.s;
-- 5: no value, and no single column left over to be it
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp) FROM kplex.s;
-- 6: a column no role takes
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), value, partition FROM kplex.s;
-- 7: fine: columns named key and order_value, aliases, headers
INSERT INTO kplex.t SELECT key, order_value, value, headers FROM kplex.derived;
INSERT INTO kplex.t SELECT kplex_key(topic) AS k, kplex_order(offset) AS o, value AS v FROM kplex.s;
-- 8: fine: the one column left over is the value
INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), CAST(value AS STRING) AS payload FROM kplex.s;
-- 9: VALUES has no key, order or value column
INSERT INTO kplex.t VALUES ('k', 1, 'v');
-- 10: * hides the columns: a warning only
INSERT INTO kplex.t SELECT * FROM kplex.derived;
