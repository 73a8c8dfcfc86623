package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;

/** {@code kplex.null_key}: what a row whose key is NULL meets. */
public enum NullKeyPolicy implements Choice {
  /** The write or read fails, naming the row. */
  FAIL,
  /** The row is left out. */
  DROP;

  @Override
  public String toString() {
    return wire();
  }

  /** {@code value}'s policy (any case), or {@code KPLEX_BAD_OPTION} naming the option and its choices. */
  public static NullKeyPolicy parse(String value) {
    return ConfParser.parseEnum(KplexOptions.NULL_KEY, NullKeyPolicy.class, value);
  }
}
