package io.kplex.spark.compat;

import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.IndexedSeq;
import scala.collection.Seq;

/** A physical plan node without children, for Spark 3.5 (Scala 2.12; see the Spark 4 copy). */
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
