package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;

/** {@code kplex.delivery}: how a write reaches Kafka. */
public enum Delivery implements Choice {
  /** One transaction per task, committed by the driver: readers see each row once. */
  EXACTLY_ONCE,
  /** Plain sends: a retried task may write rows twice. */
  AT_LEAST_ONCE;

  @Override
  public String toString() {
    return wire();
  }

  /** {@code value}'s policy (any case), or {@code KPLEX_BAD_OPTION} naming the option and its choices. */
  public static Delivery parse(String value) {
    return ConfParser.parseEnum(KplexOptions.DELIVERY, Delivery.class, value);
  }
}
