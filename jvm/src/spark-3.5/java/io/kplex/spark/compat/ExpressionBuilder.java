package io.kplex.spark.compat;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.collection.Seq;
import scala.runtime.AbstractFunction1;

/** Spark 3.5's form of the function builder (Scala 2.12's {@code scala.collection.Seq}): see the Spark 4 copy. */
public abstract class ExpressionBuilder extends AbstractFunction1<Seq<Expression>, Expression>
    implements java.io.Serializable {
  @Override
  public final Expression apply(Seq<Expression> args) {
    return build(Scala.asJava(args));
  }

  protected abstract Expression build(List<Expression> args);
}
