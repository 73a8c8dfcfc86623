package io.kplex.spark.write;

import io.kplex.spark.functions.KplexFunctions;
import java.util.Arrays;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import io.kplex.spark.compat.Scala;

/**
 * What a kplex write asks of Spark, decided by one pure function ({@link #of}) into a
 * small immutable value that {@link KplexWrite} just returns.
 *
 * <ul>
 *   <li>Distribution: clustered by {@code kplex_write_vpartition(key, V, order, ...)}, which is
 *       {@code kplex_vpartition(key, V)} plus the NULL checks of the write's policies,
 *       strictly (AQE may coalesce tasks but never split a virtual partition over two
 *       tasks: two writers of one virtual partition would interleave and break its order,
 *       G2). Spark evaluates it in the shuffle before the writers start, so a refused NULL
 *       fails the write before anything is sent.</li>
 *   <li>Ordering inside a task: order value, then canonical key bytes, then value. A task
 *       holds whole virtual partitions, and each one's records, a subsequence of the
 *       task's, come out in this order: a total order over distinct records, so the same
 *       input gives the same sequence (G2's deterministic tie-break). The order value
 *       goes first because Spark's sorter compares a prefix of the first key (here the
 *       64-bit order value itself) before it reads the rows; NULL orders sort first.</li>
 * </ul>
 */
final class WriteRequirements {
  final Distribution distribution;
  final SortOrder[] ordering;

  private WriteRequirements(Distribution distribution, SortOrder[] ordering) {
    this.distribution = distribution;
    this.ordering = ordering;
  }

  /**
   * {@code keyIsBytes}: the key column already holds canonical bytes (BINARY, e.g. the
   * output of kplex_key), so the tie-break sorts the column itself rather than calling
   * kplex_key on both rows of every comparison. {@code orderInMicros}: the order column is a
   * TIMESTAMP (microseconds), sorted by its order value in milliseconds ({@code
   * kplex_write_order}), so that records of one millisecond go by key, then value. Under
   * {@code null_order = first} an integral order is sorted by {@code kplex_write_order} too,
   * which gives a NULL the order value it is written with, {@link Long#MIN_VALUE}: a NULL and
   * a BIGINT order of exactly that value are a tie, broken by key, then value, as a stream's
   * held records and the contract break it (sorted NULLS FIRST, the NULL would go first
   * whatever its key). A TIMESTAMP's milliseconds never reach that value.
   */
  static WriteRequirements of(String keyColumn, boolean keyIsBytes, String orderColumn, boolean orderInMicros,
      String valueColumn, int virtualPartitions, String nullKey, String nullOrder) {
    Expression key = column(keyColumn);
    Expression order = column(orderColumn);
    Expression vp = Expressions.apply(KplexFunctions.WRITE_VPARTITION, key,
        Expressions.literal(virtualPartitions), order, Expressions.literal(nullKey),
        Expressions.literal(nullOrder), Expressions.literal(keyColumn), Expressions.literal(orderColumn));
    Expression keyBytes = keyIsBytes ? key : Expressions.apply(KplexFunctions.KEY, key);
    boolean orderValued = orderInMicros || nullOrder.equals("first");
    Expression orderValue = orderValued ? Expressions.apply(KplexFunctions.WRITE_ORDER, order) : order;
    return new WriteRequirements(
        Distributions.clustered(new Expression[] {vp}),
        new SortOrder[] {ascending(orderValue), ascending(keyBytes), ascending(column(valueColumn))});
  }

  private static SortOrder ascending(Expression e) {
    return Expressions.sort(e, SortDirection.ASCENDING, NullOrdering.NULLS_FIRST);
  }

  /** A reference to a column by its exact name (names like "kplex_key(x)" are not parsed). */
  static NamedReference column(String name) {
    return new FieldReference(Scala.list(java.util.List.of(name)));
  }

  @Override
  public String toString() {
    return "distribution " + distribution + ", ordering " + Arrays.toString(ordering);
  }
}
