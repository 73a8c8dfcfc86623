package io.kplex.spark.compat;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * A SQL function's builder as a session's function registry takes it: a Scala function of
 * the argument expressions, whose {@code Seq} is Scala 2.13's immutable one on Spark 4 and
 * 2.12's {@code scala.collection.Seq} on 3.5 ({@code jvm/src/spark-3.5}). Subclasses get
 * the arguments as a Java list.
 */
public abstract class ExpressionBuilder extends AbstractFunction1<Seq<Expression>, Expression>
    implements java.io.Serializable {
  @Override
  public final Expression apply(Seq<Expression> args) {
    return build(Scala.asJava(args));
  }

  protected abstract Expression build(List<Expression> args);
}
