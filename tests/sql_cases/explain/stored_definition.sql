-- No CREATE here: V and P come from the definition stored on the broker.
INSERT INTO kplex.pageviews_by_user
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')) AS key,
       timestamp AS order_value,
       value,
       headers
FROM kplex.pageviews
WHERE partition = 0;
