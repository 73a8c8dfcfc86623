-- kplex_key / kplex_order must be whole select items, where the writer sees them.
INSERT INTO kplex.t
SELECT upper(kplex_key(get_json_object(CAST(value AS STRING), '$.userid'))),
       kplex_order(timestamp) + 1,
       value
FROM kplex.s;

INSERT INTO kplex.t
SELECT kplex_key(key), kplex_order(timestamp), value
FROM kplex.s
WHERE kplex_key(key) IS NOT NULL
ORDER BY kplex_order(timestamp);

INSERT INTO kplex.t
SELECT kplex_key(kplex_order(timestamp)), kplex_order(timestamp), value FROM kplex.s;

-- Fine: top-level items of a CTE, selected by the names the writer knows.
INSERT INTO kplex.t
WITH rekeyed AS (
  SELECT kplex_key(key) AS key, kplex_order(timestamp) AS order_value, value FROM kplex.s
)
SELECT key, order_value, value FROM rekeyed;

-- Fine: kplex functions in statements that write no kplex table.
SELECT upper(kplex_key(key)), kplex_vpartition(key, 9) FROM kplex.s WHERE kplex_order(timestamp) > 0;
