package io.kplex.spark.stream;

import org.apache.spark.SparkContext;

/**
 * The streaming query and micro-batch the calling code runs for, as Spark's stream execution
 * sets them (thread-local properties, inherited by the threads it starts) before it plans a
 * micro-batch and writes it: the source's planning and the sink's driver side both see them.
 */
public record StreamingBatch(String queryId, long batchId) {
  /** Set by Spark's stream execution: the query's id (its {@code StreamingQuery.id}). */
  public static final String QUERY_ID = "sql.streaming.queryId";
  /** Set by Spark's micro-batch execution for each batch it runs. */
  public static final String BATCH_ID = "streaming.sql.batchId";

  /** The streaming query this thread runs for (its id), or null: not a stream's thread, or no Spark session. */
  public static String queryIdOfThread() {
    SparkContext sc = sparkContext();
    return sc == null ? null : sc.getLocalProperty(QUERY_ID);
  }

  /** The Spark context of this thread's session (null: no Spark session in this JVM). */
  private static SparkContext sparkContext() {
    scala.Option<org.apache.spark.sql.SparkSession> session = org.apache.spark.sql.SparkSession.getActiveSession();
    if (session.isEmpty()) session = org.apache.spark.sql.SparkSession.getDefaultSession();
    return session.isEmpty() ? null : session.get().sparkContext();
  }

  /**
   * The query and batch of this thread, or null outside a micro-batch of a streaming query
   * (and in a JVM with no Spark session, as a JUnit test's: none is started for the asking).
   */
  public static StreamingBatch current() {
    SparkContext sc = sparkContext();
    if (sc == null) return null;
    String query = sc.getLocalProperty(QUERY_ID);
    String batch = sc.getLocalProperty(BATCH_ID);
    if (query == null || batch == null) return null;
    try {
      return new StreamingBatch(query, Long.parseLong(batch));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
