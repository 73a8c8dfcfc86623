INSERT INTO kplex.t
SELECT kplex_key(key),
       kplex_ordr(timestamp),
       value
FROM kplex.s;
SELECT kplx_key(key), kplex_vpartiton(key, 9), kplex_hash(key), kpelx_order(offset) FROM kplex.s;
