-- Every branch of a UNION is written: each needs its key and order.
INSERT INTO kplex.t
SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.a
UNION ALL
SELECT kplex_key(key), timestamp, value FROM kplex.b;
