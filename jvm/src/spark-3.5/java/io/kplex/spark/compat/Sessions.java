package io.kplex.spark.compat;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.internal.SessionState;

/** Spark 3.5's session internals: on the API classes themselves (see the Spark 4 copy). */
public final class Sessions {
  private Sessions() {}

  public static SessionState state(SparkSession session) {
    return session.sessionState();
  }

  public static SessionState activeState() {
    return SparkSession.active().sessionState();
  }

  public static QueryExecution queryExecution(Dataset<?> df) {
    return df.queryExecution();
  }

  /** Spark 3.5 has no {@code With} expression, so there is nothing to inline. */
  public static LogicalPlan rewriteWith(LogicalPlan plan) {
    return plan;
  }
}
