package io.kplex.spark.wire;

import io.kplex.spark.errors.Errors;
import java.io.Serializable;

/**
 * What a kplex write does with a row whose key or order value is NULL, decided once from
 * {@code kplex.null_key} ({@code fail}, {@code drop}) and {@code kplex.null_order}
 * ({@code fail}, {@code drop}, {@code first}) and the two columns' names (which the errors
 * name). The one place this rule lives: the writers ({@code write.RowCodec}) and the
 * write's distribution ({@code kplex_write_vpartition}, which refuses a NULL before any
 * task writes) both ask it.
 *
 * <pre>
 *   key    order   null_key  null_order   row
 *   NULL   any     fail      any          refused: NULL_KEY
 *   NULL   any     drop      any          dropped
 *   set    NULL    any       fail         refused: NULL_ORDER
 *   set    NULL    any       drop         dropped
 *   set    NULL    any       first        written, ordered first (Long.MIN_VALUE)
 *   set    set     any       any          written
 * </pre>
 */
public final class NullPolicy implements Serializable {
  private static final long serialVersionUID = 1L;

  private final boolean dropNullKey;
  private final boolean dropNullOrder;
  private final boolean failNullOrder;
  private final String keyColumn;
  private final String orderColumn;

  private NullPolicy(boolean dropNullKey, boolean dropNullOrder, boolean failNullOrder, String keyColumn,
      String orderColumn) {
    this.dropNullKey = dropNullKey;
    this.dropNullOrder = dropNullOrder;
    this.failNullOrder = failNullOrder;
    this.keyColumn = keyColumn;
    this.orderColumn = orderColumn;
  }

  /**
   * The policy of a write: {@code nullKey} is {@code drop} or else fails, {@code nullOrder}
   * is {@code drop}, {@code fail} or else {@code first} (the values conf.WriteConf has
   * checked); the columns are named in the errors.
   */
  public static NullPolicy of(String nullKey, String nullOrder, String keyColumn, String orderColumn) {
    return new NullPolicy("drop".equals(nullKey), "drop".equals(nullOrder), "fail".equals(nullOrder), keyColumn,
        orderColumn);
  }

  /**
   * Whether a row is written (true) or dropped (false); throws the write's error for a NULL
   * the policy refuses. {@code keyBytes}: the row's canonical key bytes, null for a NULL key;
   * {@code orderValue}: its order value ({@link Long#MIN_VALUE} for NULL), named in the
   * NULL key error.
   */
  public boolean admits(byte[] keyBytes, boolean nullOrder, long orderValue) {
    if (keyBytes == null) {
      if (dropNullKey) return false;
      throw Errors.nullKey(keyColumn, orderValue);
    }
    if (nullOrder) {
      if (dropNullOrder) return false;
      if (failNullOrder) throw Errors.nullOrder(orderColumn, KeyBytes.printable(keyBytes));
    }
    return true;
  }

  /**
   * Whether this policy, rather than the order, decides the fate of a row: a NULL key, or a
   * NULL order that is not simply ordered first.
   */
  public boolean decides(boolean nullKey, boolean nullOrder) {
    return nullKey || (nullOrder && (dropNullOrder || failNullOrder));
  }

  @Override
  public String toString() {
    return "null key: " + (dropNullKey ? "drop" : "fail") + ", null order: "
        + (dropNullOrder ? "drop" : failNullOrder ? "fail" : "first");
  }
}
