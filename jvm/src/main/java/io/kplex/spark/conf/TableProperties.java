package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** Validation of kplex.* table properties and write options: names and values. */
public final class TableProperties {
  private TableProperties() {}

  /** Returns the kplex.* entries, checked; throws naming the first wrong one. */
  public static Map<String, String> validate(Map<String, String> given, String table) {
    Map<String, String> props = new TreeMap<>();
    for (Map.Entry<String, String> e : given.entrySet()) {
      String key = e.getKey().toLowerCase(Locale.ROOT);
      if (key.startsWith(KplexOptions.KAFKA_PREFIX)) {
        throw Errors.kafkaTableProperty(e.getKey());
      }
      if (!key.startsWith("kplex.")) {
        continue;
      }
      if (!KplexOptions.TABLE_PROPERTIES.contains(key)) {
        throw Errors.unknownProperty(e.getKey(), closest(key));
      }
      props.put(key, e.getValue().trim());
    }
    requirePositive(props, KplexOptions.VIRTUAL_PARTITIONS, table);
    boolean virtual = props.containsKey(KplexOptions.SOURCE);
    if (!virtual || props.containsKey(KplexOptions.PHYSICAL_PARTITIONS)) {
      requirePositive(props, KplexOptions.PHYSICAL_PARTITIONS, table);
    }
    String rf = props.get(KplexOptions.REPLICATION_FACTOR);
    int replication = rf == null ? -1 : parseInt(rf);
    if (replication != -1 && (replication < 1 || replication > Short.MAX_VALUE)) {
      throw Errors.badOption(KplexOptions.REPLICATION_FACTOR, rf, "an integer >= 1, or -1 for the broker default");
    }
    oneOf(props, KplexOptions.DELIVERY, KplexOptions.DELIVERIES);
    oneOf(props, KplexOptions.NULL_KEY, KplexOptions.NULL_KEY_POLICIES);
    oneOf(props, KplexOptions.NULL_ORDER, KplexOptions.NULL_ORDER_POLICIES);
    oneOf(props, KplexOptions.LATE_POLICY, KplexOptions.LATE_POLICIES);
    String delay = props.get(KplexOptions.MAX_DELAY_MS);
    if (delay != null) {
      maxDelayMs(delay);
    }
    return props;
  }

  public static int requirePositive(Map<String, String> props, String key, String table) {
    String value = props.get(key);
    if (value == null) {
      throw Errors.missingOption(key, table, "an integer >= 1");
    }
    int n = parsePositive(value);
    if (n < 1) {
      throw Errors.badOption(key, value, "an integer >= 1");
    }
    return n;
  }

  public static void oneOf(Map<String, String> props, String key, java.util.List<String> allowed) {
    String value = props.get(key);
    if (value != null && !allowed.contains(value.toLowerCase(Locale.ROOT))) {
      throw Errors.badOption(key, value, "one of " + allowed);
    }
    if (value != null) {
      props.put(key, value.toLowerCase(Locale.ROOT));
    }
  }

  private static int parsePositive(String value) {
    int n = parseInt(value);
    return n < 1 ? -1 : n;
  }

  /**
   * {@code kplex.max_delay_ms}, parsed the one way a table property, a write option and a
   * read option all are: milliseconds, a long >= 0.
   */
  public static long maxDelayMs(String value) {
    try {
      long ms = Long.parseLong(value.trim());
      if (ms >= 0) return ms;
    } catch (NumberFormatException e) {
      // named below
    }
    throw Errors.badOption(KplexOptions.MAX_DELAY_MS, value, "an integer >= 0 (milliseconds)");
  }

  private static int parseInt(String value) {
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      return Integer.MIN_VALUE;
    }
  }

  /** The known property nearest to a misspelt one (edit distance at most 3), or null. */
  public static String closest(String key) {
    String best = null;
    int bestDistance = 4;
    for (String known : KplexOptions.TABLE_PROPERTIES) {
      int d = distance(key, known);
      if (d < bestDistance) {
        best = known;
        bestDistance = d;
      }
    }
    return best;
  }

  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) prev[j] = j;
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev; prev = cur; cur = t;
    }
    return prev[b.length()];
  }
}
