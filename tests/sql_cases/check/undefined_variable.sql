-- case: var.source=pageviews
-- ${source} is given, ${target} is not.
INSERT INTO kplex.${target}
SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.${source};
