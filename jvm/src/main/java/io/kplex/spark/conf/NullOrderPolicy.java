package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;

/** {@code kplex.null_order}: what a row whose order value is NULL meets. */
public enum NullOrderPolicy implements Choice {
  /** The write or read fails, naming the row's key. */
  FAIL,
  /** The row is left out. */
  DROP,
  /** The row sorts before every other of its key (writes only). */
  FIRST;

  @Override
  public String toString() {
    return wire();
  }

  /** {@code value}'s policy (any case), or {@code KPLEX_BAD_OPTION} naming the option and its choices. */
  public static NullOrderPolicy parse(String value) {
    return ConfParser.parseEnum(KplexOptions.NULL_ORDER, NullOrderPolicy.class, value);
  }
}
