package io.kplex.spark.compat;

import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * A physical plan node without children, for Spark 4 (Scala 2.13), whose tree methods take
 * {@code scala.collection.immutable} sequences; the Spark 3.5 copy ({@code jvm/src/spark-3.5})
 * takes {@code scala.collection} ones. Subclasses give the output, the rows and the
 * {@code Product} fields.
 */
public abstract class LeafExec extends SparkPlan {
  @Override
  public final Seq<SparkPlan> children() {
    return Scala.list(java.util.List.of());
  }

  @Override
  public final SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return this;
  }
}
