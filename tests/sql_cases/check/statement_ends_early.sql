SELECT value FROM kplex.pageviews;
SELECT value FROM
;
