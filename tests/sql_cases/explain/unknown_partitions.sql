-- Neither a CREATE in the file nor a broker: V and P are unknown.
INSERT INTO kplex.somewhere
SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.pageviews;
