package io.kplex.spark.write;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import io.kplex.spark.functions.KplexFunctions;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.junit.Test;

/**
 * What a kplex write asks of Spark ({@link WriteRequirements#of}), compared as Spark's own
 * {@code Distribution} and {@code SortOrder} objects.
 *
 * <pre>
 * key column      | V    | null_key | null_order || distribution                                   | ordering
 * ----------------+------+----------+------------++------------------------------------------------+--------------------------------------------
 * BINARY (bytes)  | 9    | fail     | fail       || clustered(kplex_write_vpartition(key, 9, ...)) | order, key, value (asc, nulls first)
 * BINARY (bytes)  | 1000 | drop     | first      || clustered(kplex_write_vpartition(key, 1000..)) | order, key, value
 * STRING          | 9    | fail     | drop       || clustered(kplex_write_vpartition(key, 9, ...)) | order, kplex_key(key), value
 * BIGINT          | 1    | drop     | fail       || clustered(kplex_write_vpartition(key, 1, ...)) | order, kplex_key(key), value
 * STRING, TIMESTAMP order | 9 | fail | fail      || clustered(kplex_write_vpartition(key, 9, ...)) | kplex_write_order(order), kplex_key(key), value
 * </pre>
 * The distribution function carries V, the order column, both NULL policies and the
 * column names (for its errors); the tie-break sorts the key column itself only when it
 * already holds canonical key bytes.
 */
public class WriteRequirementsTest {
  private static Expression col(String name) {
    return WriteRequirements.column(name);
  }

  private static SortOrder asc(Expression e) {
    return Expressions.sort(e, SortDirection.ASCENDING, NullOrdering.NULLS_FIRST);
  }

  private static Distribution clustered(String key, int v, String order, String nullKey, String nullOrder) {
    return Distributions.clustered(new Expression[] {Expressions.apply(KplexFunctions.WRITE_VPARTITION,
        col(key), Expressions.literal(v), col(order), Expressions.literal(nullKey), Expressions.literal(nullOrder),
        Expressions.literal(key), Expressions.literal(order))});
  }

  private static void row(String key, boolean keyIsBytes, int v, String nullKey, String nullOrder) {
    row(key, keyIsBytes, false, v, nullKey, nullOrder, false);
  }

  /** {@code sortedByOrderValue}: the rows are expected sorted by kplex_write_order(order), not the column. */
  private static void row(String key, boolean keyIsBytes, boolean orderInMicros, int v, String nullKey,
      String nullOrder, boolean sortedByOrderValue) {
    String order = "kplex_order(viewtime)";
    WriteRequirements r = WriteRequirements.of(key, keyIsBytes, order, orderInMicros, "value", v, nullKey, nullOrder);
    assertEquals(clustered(key, v, order, nullKey, nullOrder), r.distribution);
    Expression tieBreak = keyIsBytes ? col(key) : Expressions.apply(KplexFunctions.KEY, col(key));
    Expression sortedOrder = sortedByOrderValue ? Expressions.apply(KplexFunctions.WRITE_ORDER, col(order)) : col(order);
    assertArrayEquals(new SortOrder[] {asc(sortedOrder), asc(tieBreak), asc(col("value"))}, r.ordering);
  }

  @Test
  public void aBinaryKeyIsClusteredByItsVirtualPartitionAndSortedByItself() {
    row("kplex_key(userid)", true, 9, "fail", "fail");
  }

  @Test
  public void policiesAndVTravelInTheDistributionFunction() {
    row("kplex_key(userid)", true, false, 1000, "drop", "first", true);
  }

  @Test
  public void anIntegralOrderUnderNullOrderFirstIsSortedByItsOrderValueSoThatANullTiesWithTheSmallest() {
    row("key", false, false, 9, "fail", "first", true);
    row("key", false, true, 9, "fail", "first", true);
  }

  @Test
  public void aStringKeyIsSortedByItsKeyBytes() {
    row("key", false, 9, "fail", "drop");
  }

  @Test
  public void aTimestampOrderIsSortedByItsMillisecondsSoThatTiesGoByKeyThenValue() {
    row("key", false, true, 9, "fail", "fail", true);
  }

  @Test
  public void aSingleVirtualPartitionStillClustersAndSorts() {
    row("id", false, 1, "drop", "fail");
  }

  @Test
  public void aDifferentVIsADifferentDistribution() {
    WriteRequirements nine = WriteRequirements.of("k", true, "o", false, "value", 9, "fail", "fail");
    WriteRequirements ten = WriteRequirements.of("k", true, "o", false, "value", 10, "fail", "fail");
    org.junit.Assert.assertNotEquals(nine.distribution, ten.distribution);
  }
}
