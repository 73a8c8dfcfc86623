-- kplex functions called through the catalog, kplex.kplex_key(...), count the same.
INSERT INTO kplex.t
SELECT kplex.kplex_key(key), kplex.kplex_order(offset), value FROM kplex.s;
INSERT INTO kplex.t
SELECT upper(kplex.kplex_key(key)), kplex.kplex_ordr(offset), value FROM kplex.s;
