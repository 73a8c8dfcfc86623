package io.kplex.spark.read;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.compat.Scala;
import io.kplex.spark.compat.Sessions;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.OrderValues;
import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Unevaluable;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import scala.collection.immutable.Seq;

/**
 * The key and order of a read-time table: Spark SQL expressions over the source topic's
 * columns ({@link KplexTable#TOPIC_SCHEMA}), so they mean exactly what they mean in the
 * {@code INSERT ... SELECT kplex_key(...), kplex_order(...)} that would materialize the
 * same table. Spark's analyzer resolves them on the driver when the read is planned (an
 * error names the property); the resolved, serializable expressions travel to the
 * readers, which evaluate them on every source record (generated code, or Spark's
 * interpreter as a fallback). The key becomes canonical key bytes as {@code kplex_key}
 * makes them, the order an order value as {@code kplex_order} does. Expressions Spark
 * cannot evaluate outside a query plan (aggregates, subqueries, Python UDFs) and
 * non-deterministic ones are refused.
 */
public final class ReadExpressions implements Serializable {
  final String keyText;
  final String orderText;
  private final Compiled key;
  private final Compiled order;

  private ReadExpressions(String keyText, String orderText, Compiled key, Compiled order) {
    this.keyText = keyText;
    this.orderText = orderText;
    this.key = key;
    this.order = order;
  }

  private static final class Compiled implements Serializable {
    final Expression expression;
    final Seq<Attribute> input;
    final DataType type;

    Compiled(Expression expression, Seq<Attribute> input) {
      this.expression = expression;
      this.input = input;
      this.type = expression.dataType();
    }

    UnsafeProjection projection() {
      Seq<Expression> exprs = Scala.list(List.of(expression));
      return UnsafeProjection$.MODULE$.create(exprs, input);
    }
  }

  public static boolean sessionAvailable() {
    return org.apache.spark.sql.SparkSession.getActiveSession().isDefined();
  }

  /** Resolves both expressions with the active session; throws naming the bad property. */
  public static ReadExpressions compile(String table, String keyText, String orderText) {
    Compiled key = compileOne(table, KplexOptions.KEY, keyText);
    Compiled order = compileOne(table, KplexOptions.ORDER, orderText);
    if (!OrderValues.isSupported(order.type)) {
      throw Errors.readTimeOrderType(KplexOptions.ORDER, orderText, table, order.type.sql());
    }
    return new ReadExpressions(keyText, orderText, key, order);
  }

  private static Compiled compileOne(String table, String property, String text) {
    if (text == null || text.isBlank()) {
      throw Errors.emptyExpression(property, String.valueOf(text), table);
    }
    LogicalPlan plan;
    try {
      SparkSession spark = SparkSession.active();
      plan = Sessions.queryExecution(spark.createDataFrame(List.<Row>of(), KplexTable.TOPIC_SCHEMA)
          .selectExpr(text)).analyzed();
    } catch (KplexException e) {
      throw e;
    } catch (Exception e) {
      String message = e.getMessage() == null ? e.toString() : e.getMessage().split("\n")[0];
      throw Errors.badExpression(property, text, table, message);
    }
    // What the optimizer would do before evaluating: replace runtime-replaceable functions.
    plan = Sessions.rewriteWith(ReplaceExpressions$.MODULE$.apply(plan));
    if (!(plan instanceof Project) || ((Project) plan).projectList().size() != 1) {
      throw Errors.notOneScalarExpression(property, text, table);
    }
    Project project = (Project) plan;
    NamedExpression named = project.projectList().head();
    Expression expression = named instanceof Alias ? ((Alias) named).child() : (Expression) named;
    String refused = refused(expression);
    if (refused != null) {
      throw Errors.badExpression(property, text, table, refused);
    }
    return new Compiled(expression, Scala.list(Scala.asJava(project.child().output())));
  }

  /** Why an expression cannot be evaluated record by record, or null. */
  private static String refused(Expression root) {
    if (!root.deterministic()) {
      return "it is not deterministic, so two reads would disagree.";
    }
    Deque<Expression> todo = new ArrayDeque<>(List.of(root));
    while (!todo.isEmpty()) {
      Expression e = todo.pop();
      if (e instanceof Unevaluable && !(e instanceof Attribute)) {
        return "`" + e.prettyName() + "` can only run inside a Spark query plan (aggregates,"
            + " subqueries, Python UDFs); materialize the table with INSERT instead.";
      }
      todo.addAll(Scala.asJava(e.children()));
    }
    return null;
  }

  Evaluator evaluator() {
    return new Evaluator();
  }

  /** Evaluates key and order on source rows; one per reader (not thread-safe). */
  final class Evaluator {
    private final UnsafeProjection keyProjection = key.projection();
    private final UnsafeProjection orderProjection = order.projection();
    private final KeyBytes.Encoder keyBytes = KeyBytes.encoderFor(key.type);
    private final OrderValues.Reader orderValue = OrderValues.readerFor(order.type);

    /** Canonical key bytes, or null for a NULL key. */
    byte[] key(InternalRow source) {
      InternalRow r = keyProjection.apply(source);
      return r.isNullAt(0) ? null : keyBytes.encode(r, 0);
    }

    /** The order value, or null for a NULL order. */
    Long order(InternalRow source) {
      InternalRow r = orderProjection.apply(source);
      return r.isNullAt(0) ? null : orderValue.read(r, 0);
    }
  }

  @Override
  public String toString() {
    return "key " + keyText + ", order " + orderText;
  }
}
