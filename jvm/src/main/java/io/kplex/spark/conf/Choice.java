package io.kplex.spark.conf;

import java.util.Locale;

/**
 * A setting's value out of a fixed set (a policy enum): its wire name is its constant's
 * name in lower case, as options.json, table properties and EXPLAIN spell it.
 */
public interface Choice {
  String name();

  /** The wire name. */
  default String wire() {
    return name().toLowerCase(Locale.ROOT);
  }
}
