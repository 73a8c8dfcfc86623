package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;

/** {@code kplex.late_policy}: what a record later than {@code kplex.max_delay_ms} meets. */
public enum LatePolicy implements Choice {
  /** The query fails, naming the record. */
  FAIL,
  /** The record is left out, and counted. */
  DROP,
  /** The record goes to {@code kplex.late_topic}, and is counted. */
  SIDE_TOPIC;

  @Override
  public String toString() {
    return wire();
  }

  /** {@code value}'s policy (any case), or {@code KPLEX_BAD_OPTION} naming the option and its choices. */
  public static LatePolicy parse(String value) {
    return ConfParser.parseEnum(KplexOptions.LATE_POLICY, LatePolicy.class, value);
  }
}
