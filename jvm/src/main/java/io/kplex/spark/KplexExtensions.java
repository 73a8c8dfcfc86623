package io.kplex.spark;

import io.kplex.spark.functions.KplexFunctions;
import io.kplex.spark.describe.DescribeKplexTable;
import io.kplex.spark.read.ReadTimePlan;
import io.kplex.spark.plan.SourcePositions;
import io.kplex.spark.plan.StreamingSinkCatalog;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import scala.Tuple3;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.kplex.spark.KplexExtensions}: makes kplex_key,
 * kplex_order and kplex_vpartition available in every session, plain spark-sql included,
 * gives format-named streaming sinks their catalog ({@link StreamingSinkCatalog}) and the
 * source positions of their rows ({@link SourcePositions}), and
 * plans reads of read-time tables to read their source once ({@link ReadTimePlan}), and
 * adds a kplex table's state to {@code DESCRIBE TABLE EXTENDED} ({@link DescribeKplexTable}).
 */
public final class KplexExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    for (UnboundFunction f : KplexFunctions.ALL.values()) {
      extensions.injectFunction(new Tuple3<>(new FunctionIdentifier(f.name()), KplexFunctions.info(f),
          new KplexFunctions.Builder(f)));
    }
    extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new StreamingSinkCatalog();
      }
    });
    extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new ReadTimePlan();
      }
    });
    extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new SourcePositions();
      }
    });
    extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
      @Override
      public SparkStrategy apply(SparkSession session) {
        return new DescribeKplexTable(session, t -> KplexAdmin.status(t.catalogOptions(), t.name()));
      }
    });
    return BoxedUnit.UNIT;
  }
}
