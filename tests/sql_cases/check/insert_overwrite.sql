INSERT OVERWRITE kplex.t SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.s;
