package io.kplex.spark.read;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.TableDefinition;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.collection.immutable.Seq;
import io.kplex.spark.compat.Scala;
import scala.runtime.AbstractPartialFunction;

/**
 * An analyzer rule (kplex's session extension): a read-time table reads its source once,
 * whatever V. Its relation becomes
 * <pre>
 * Sort [vpartition, order_value, key, value NULLS FIRST, topic, partition, offset], local
 * +- RepartitionByExpression [vpartition]
 *    +- the table's relation, marked {@link #READ_ONCE}: one task per source partition
 * </pre>
 * the plan of the write's clustering and ordering. Each source partition is read by one
 * task ({@link SourcePartitionReader}, which applies the late policy along that
 * partition's sequence); the shuffle puts every virtual partition's rows into one Spark
 * partition and the sort orders them as the event-time merge would release them. The
 * shuffle has {@link #shufflePartitions} partitions, so one may hold several virtual
 * partitions, one after another.
 * {@code WHERE vpartition = n} is pushed below the sort and the shuffle to the scan, which
 * returns only that virtual partition's rows (the source is still read once, whole).
 */
public final class ReadTimePlan extends Rule<LogicalPlan> {
  /** The relation option that marks a read-time table's relation as planned by this rule. */
  public static final String READ_ONCE = "__kplex_read_once";

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.resolveOperatorsUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan p) {
        return isUnplannedReadTimeTable(p);
      }

      @Override
      public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, scala.Function1<A1, B1> fallback) {
        if (!isDefinedAt(p)) return fallback.apply(p);
        @SuppressWarnings("unchecked")
        B1 planned = (B1) readOnce((DataSourceV2Relation) p);
        return planned;
      }
    });
  }

  private static boolean isUnplannedReadTimeTable(LogicalPlan p) {
    if (!(p instanceof DataSourceV2Relation)) return false;
    DataSourceV2Relation r = (DataSourceV2Relation) p;
    return r.table() instanceof KplexTable
        && ((KplexTable) r.table()).definition().map(TableDefinition::isReadTime).orElse(false)
        && !r.options().containsKey(READ_ONCE);
  }

  private static LogicalPlan readOnce(DataSourceV2Relation relation) {
    Map<String, String> options = new HashMap<>(relation.options().asCaseSensitiveMap());
    options.put(READ_ONCE, "true");
    LogicalPlan marked = io.kplex.spark.compat.Copies.with(relation, "options", new CaseInsensitiveStringMap(options));
    Map<String, Attribute> columns = new HashMap<>();
    for (Attribute a : Scala.asJava(relation.output())) columns.put(a.name(), a);
    Seq<Expression> by = seq(List.of(columns.get("vpartition")));
    int v = ((KplexTable) relation.table()).definition().get().virtualPartitions();
    LogicalPlan shuffled = new RepartitionByExpression(by, marked, Option.apply(shufflePartitions(v)), Option.empty());
    List<SortOrder> order = new ArrayList<>();
    for (String c : new String[] {"vpartition", "order_value", "key", "value", "topic", "partition", "offset"}) {
      order.add(new SortOrder(columns.get(c), Ascending$.MODULE$, NullsFirst$.MODULE$, seq(List.of())));
    }
    return localSort(seq(order), shuffled);
  }

  /**
   * min(V, 2 x Spark's default parallelism): more would not run at once, and every one
   * costs a shuffle block per source partition (at 200 partitions, Spark's default, a read
   * at V = 1000 took 1.5x one at V = 9; at 20, 1.1x: bench/readtime).
   */
  static int shufflePartitions(int virtualPartitions) {
    int parallelism = org.apache.spark.SparkContext.getOrCreate().defaultParallelism();
    return Math.max(1, Math.min(virtualPartitions, 2 * parallelism));
  }

  private static <T> Seq<T> seq(List<T> list) {
    return Scala.list(list);
  }

  /** A local (per partition) Sort; Spark 4.1 added a fourth field, an optional hint. */
  private static LogicalPlan localSort(Seq<SortOrder> order, LogicalPlan child) {
    try {
      for (Constructor<?> c : Sort.class.getConstructors()) {
        Object[] args = new Object[c.getParameterCount()];
        if (args.length < 3) continue;
        args[0] = order;
        args[1] = false;
        args[2] = child;
        for (int i = 3; i < args.length; i++) args[i] = Option.empty();
        return (LogicalPlan) c.newInstance(args);
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("kplex bug, or a Spark version kplex does not support (please"
          + " report it): cannot plan a read-time table's read", e);
    }
    throw new IllegalStateException("kplex bug, or a Spark version kplex does not support (please report it):"
        + " no Sort constructor");
  }
}
