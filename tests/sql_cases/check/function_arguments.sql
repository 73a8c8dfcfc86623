SELECT kplex_vpartition(key), kplex_vpartition(key, 9), kplex_key(), kplex_order(timestamp, offset) FROM kplex.s;
