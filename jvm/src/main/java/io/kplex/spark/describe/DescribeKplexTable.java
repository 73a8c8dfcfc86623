package io.kplex.spark.describe;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.compat.Scala;
import io.kplex.spark.compat.Sessions;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.plans.logical.DescribeRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;

/**
 * Plans {@code DESCRIBE TABLE EXTENDED} of a kplex table ({@link DescribeKplexTableExec}):
 * Spark's own rows, then the table's state, the facts {@code kplex status} shows. Spark's
 * rows come from the node Spark's own strategies plan for the same command (whatever its
 * constructor on this Spark line), so they stay exactly Spark's. Loading a table and every
 * other query pay nothing: the broker is asked only when this command runs.
 * Plain {@code DESCRIBE}, plain topics and other catalogs' tables are left to Spark.
 */
public final class DescribeKplexTable extends SparkStrategy {
  private final SparkSession session;
  private final Function<KplexTable, String> state;

  /** {@code state}: a kplex table's state as {@code kplex status}'s JSON. */
  public DescribeKplexTable(SparkSession session, Function<KplexTable, String> state) {
    this.session = session;
    this.state = state;
  }

  @Override
  public scala.collection.immutable.List<SparkPlan> apply(LogicalPlan plan) {
    if (!(plan instanceof DescribeRelation describe) || !describe.isExtended()
        || !(describe.relation() instanceof ResolvedTable resolved)
        || !(resolved.table() instanceof KplexTable table) || table.definition().isEmpty()) {
      return Scala.list(List.of());
    }
    SparkPlan spark = sparksOwn(plan);
    if (spark == null) return Scala.list(List.of());
    scala.collection.Seq<org.apache.spark.sql.catalyst.expressions.Attribute> output = describe.output();
    return Scala.list(List.of(new DescribeKplexTableExec(
        new DescribeKplexTableExec.Described(Scala.asJava(output), spark, table, state))));
  }

  /** What the session's other strategies plan for {@code plan}, if it is a leaf (no PlanLater to fill in). */
  private SparkPlan sparksOwn(LogicalPlan plan) {
    scala.collection.Seq<SparkStrategy> strategies = Sessions.state(session).planner().strategies();
    for (SparkStrategy s : Scala.asJava(strategies)) {
      if (s instanceof DescribeKplexTable) continue;
      scala.collection.Seq<SparkPlan> planned = s.apply(plan);
      if (!planned.isEmpty()) return planned.head().children().isEmpty() ? planned.head() : null;
    }
    return null;
  }
}
