package io.kplex.spark.compat;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.optimizer.RewriteWithExpression$;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.internal.SessionState;

/**
 * What differs between Spark lines in reaching a session's internals. Spark 4 splits the
 * session into an API and a classic (JVM) implementation, whose {@code sessionState} and
 * {@code queryExecution} kplex uses; Spark 3.5 has them on the API classes
 * ({@code jvm/src/spark-3.5}).
 */
public final class Sessions {
  private Sessions() {}

  public static SessionState state(SparkSession session) {
    return ((org.apache.spark.sql.classic.SparkSession) session).sessionState();
  }

  public static SessionState activeState() {
    return org.apache.spark.sql.classic.SparkSession.active().sessionState();
  }

  public static QueryExecution queryExecution(Dataset<?> df) {
    return ((org.apache.spark.sql.classic.Dataset<?>) df).queryExecution();
  }

  /** Spark 4's optimizer rule that inlines {@code With} expressions (3.5 has neither). */
  public static LogicalPlan rewriteWith(LogicalPlan plan) {
    return RewriteWithExpression$.MODULE$.apply(plan);
  }
}
