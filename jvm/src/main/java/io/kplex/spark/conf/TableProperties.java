package io.kplex.spark.conf;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.spec.OptionSpecs;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Validation of kplex.* table properties: names (those options.json allows as table
 * properties) and values (by their spec, {@link ConfParser#canonical}).
 */
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
      String before = props.put(key, e.getValue().trim());
      if (before != null && !before.equals(e.getValue().trim())) {
        // The same property in two spellings ('kplex.virtual_partitions', 'KPLEX.Virtual_Partitions'):
        // which one a map gives last is chance.
        throw Errors.propertyTwice(key, java.util.List.of(before, e.getValue().trim()));
      }
    }
    requirePositive(props, KplexOptions.VIRTUAL_PARTITIONS, table);
    boolean virtual = props.containsKey(KplexOptions.SOURCE);
    if (!virtual || props.containsKey(KplexOptions.PHYSICAL_PARTITIONS)) {
      requirePositive(props, KplexOptions.PHYSICAL_PARTITIONS, table);
    }
    props.replaceAll(ConfParser::canonical);
    return props;
  }

  /** The int a required property gives (V, P), or the error naming it missing or wrong. */
  public static int requirePositive(Map<String, String> props, String key, String table) {
    ConfParser settings = ConfParser.of(props);
    if (!settings.isSet(key)) {
      throw Errors.missingOption(key, table, OptionSpecs.of(key).expected());
    }
    return settings.intConf(key);
  }


  /**
   * Refuses a read option whose name is a near miss of one a read takes (edit distance 1 or 2,
   * in any case): Spark passes a misspelt option on unread, so {@code startingOffset} would
   * silently read from the default. Other names pass (a path, another tool's options).
   */
  public static void refuseMisspeltReadOptions(Map<String, String> options) {
    for (String key : options.keySet()) {
      String k = key.toLowerCase(Locale.ROOT);
      if (k.startsWith(KplexOptions.KAFKA_PREFIX) || k.startsWith("kplex.") || READ_OPTIONS_LOWER.contains(k)) {
        continue;  // kafka.* go to the clients; kplex.* are checked by name (ReadConf)
      }
      for (String known : KplexOptions.READ_OPTIONS) {
        if (distance(k, known.toLowerCase(Locale.ROOT)) <= 2) {
          throw Errors.misspeltReadOption(key, known, KplexOptions.READ_OPTIONS);
        }
      }
    }
  }

  private static final java.util.Set<String> READ_OPTIONS_LOWER = KplexOptions.READ_OPTIONS.stream()
      .map(n -> n.toLowerCase(Locale.ROOT)).collect(java.util.stream.Collectors.toUnmodifiableSet());

  /** The known property nearest to a misspelt one (edit distance at most 3), or null. */
  public static String closest(String key) {
    return closest(key, KplexOptions.TABLE_PROPERTIES);
  }

  /**
   * The name among {@code names} nearest to a misspelt one (edit distance at most 3, compared
   * without case; the first of equally near ones), as {@code names} spells it, or null.
   */
  public static String closest(String key, java.util.List<String> names) {
    String lower = key.toLowerCase(Locale.ROOT);
    String best = null;
    int bestDistance = 4;
    for (String known : names) {
      int d = distance(lower, known.toLowerCase(Locale.ROOT));
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
