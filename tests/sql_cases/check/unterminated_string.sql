SELECT value FROM kplex.pageviews;
SELECT get_json_object(CAST(value AS STRING), '$.userid) FROM kplex.pageviews;
