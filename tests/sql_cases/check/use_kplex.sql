-- After USE kplex, unqualified names are kplex tables.
INSERT INTO t SELECT kplex_key(key), value FROM s;
USE kplex;
INSERT INTO t SELECT kplex_key(key), value FROM s;
