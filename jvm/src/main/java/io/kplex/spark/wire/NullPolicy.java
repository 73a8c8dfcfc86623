package io.kplex.spark.wire;

import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.util.List;

/**
 * What a kplex write does with a row whose key or order value is NULL, decided once from
 * {@code kplex.null_key} (fail, drop) and {@code kplex.null_order} (fail, drop, first), by
 * their wire names (as {@code conf.NullKeyPolicy} and {@code conf.NullOrderPolicy} spell
 * them, and as they travel in a write's plan), and the two columns' names (which the errors
 * name). The one place this rule lives: the writers ({@code write.RowCodec}) and the
 * write's distribution ({@code kplex_write_vpartition}, which refuses a NULL before any
 * task writes) both ask it; {@code tests/vectors/null_policy.json} pins it, and the Python
 * package's {@code kplex.nulls} with it. Below conf, so it reads the names, not the enums.
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

  private static final List<String> KEY_POLICIES = List.of("fail", "drop");
  private static final List<String> ORDER_POLICIES = List.of("fail", "drop", "first");

  private final boolean dropNullKey;
  /** {@code fail}, {@code drop} or {@code first}. */
  private final String nullOrder;
  private final String keyColumn;
  private final String orderColumn;

  private NullPolicy(String nullKey, String nullOrder, String keyColumn, String orderColumn) {
    this.dropNullKey = nullKey.equals("drop");
    this.nullOrder = nullOrder;
    this.keyColumn = keyColumn;
    this.orderColumn = orderColumn;
  }

  /**
   * The policy of a write, from the wire names of its policies (checked when the write was
   * planned: another name here is a bug); the key and order columns are named in its errors.
   */
  public static NullPolicy of(String nullKey, String nullOrder, String keyColumn, String orderColumn) {
    if (!KEY_POLICIES.contains(nullKey) || !ORDER_POLICIES.contains(nullOrder)) {
      throw new IllegalArgumentException("no such NULL policy: null_key " + nullKey + ", null_order " + nullOrder);
    }
    return new NullPolicy(nullKey, nullOrder, keyColumn, orderColumn);
  }

  /**
   * Whether a row is written (true) or dropped (false); throws the write's error for a NULL
   * the policy refuses. {@code keyBytes}: the row's canonical key bytes, null for a NULL key;
   * {@code orderValue}: its order value ({@link Long#MIN_VALUE} for NULL), named in the
   * NULL key error.
   */
  public boolean admits(byte[] keyBytes, boolean orderIsNull, long orderValue) {
    if (keyBytes == null) {
      if (dropNullKey) return false;
      throw Errors.nullKey(keyColumn, orderValue);
    }
    if (orderIsNull) {
      if (nullOrder.equals("drop")) return false;
      if (nullOrder.equals("fail")) throw Errors.nullOrder(orderColumn, KeyBytes.printable(keyBytes));
    }
    return true;
  }

  /**
   * Whether this policy, rather than the order, decides the fate of a row: a NULL key, or a
   * NULL order that is not simply ordered first.
   */
  public boolean decides(boolean keyIsNull, boolean orderIsNull) {
    return keyIsNull || (orderIsNull && !nullOrder.equals("first"));
  }

  @Override
  public String toString() {
    return "null key: " + (dropNullKey ? "drop" : "fail") + ", null order: " + nullOrder;
  }
}
