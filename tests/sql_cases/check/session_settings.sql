-- SET of a kplex session setting the plugin would refuse at the next write or stream.
SET spark.kplex.nul_key = drop;
SET spark.kplex.null_key = 'drop';
SET spark.kplex.colour = blue;
SET kplex.stream.releaseatend = true;
SET kplex.stream.startingOffset = earliest;
SET kplex.stream.idleTimeoutMs = -5;
-- Fine: known names (spark.kplex.* in any case), a test hook, other settings, a SET that only shows.
SET spark.kplex.delivery = exactly_once;
SET spark.KPLEX.Null_Key = drop;
SET spark.kplex.testing.sleep_ms = 5;
SET `kplex.stream.releaseAtEnd` = true;
SET kplex.stream.startingOffsets = {"pageviews":{"0":5}};
SET spark.sql.shuffle.partitions = 4;
SET kplex.stream.x;
