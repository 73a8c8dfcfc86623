package io.kplex.spark;

import java.util.List;

/** Every error text of kplex, in one place: what is wrong and what to do. */
final class Errors {
  private Errors() {}

  static KplexException nullKey(String column, long orderValue) {
    return new KplexException("NULL_KEY", "NULL key in column `" + column + "` (row with order value "
        + orderValue + "). Filter such rows out, or set '" + KplexOptions.NULL_KEY + "' = 'drop'.");
  }

  static KplexException nullOrder(String column, String keyText) {
    return new KplexException("NULL_ORDER", "NULL order value in column `" + column + "` for row key "
        + keyText + ". Filter such rows out, or set '" + KplexOptions.NULL_ORDER
        + "' to 'drop' or 'first'.");
  }

  static KplexException badJsonPointer(String pointer, String problem) {
    return new KplexException("JSON_POINTER", "JSON pointer '" + pointer + "' is malformed: " + problem + ".");
  }

  static KplexException unsupportedOrderType(String column, String type) {
    return new KplexException("ORDER_TYPE", "the order column `" + column + "` has type " + type
        + "; kplex orders by TIMESTAMP, TIMESTAMP_NTZ, DATE or an integral type (TINYINT..BIGINT)."
        + " CAST it, e.g. kplex_order(CAST(x AS BIGINT)).");
  }

  static KplexException missingColumn(String role, String how, List<String> columns) {
    return new KplexException("MISSING_COLUMN", "the data written has no " + role + " column: "
        + how + ". Columns present: " + columns + ".");
  }

  static KplexException ambiguousColumn(String role, List<String> candidates) {
    return new KplexException("AMBIGUOUS_COLUMN", "more than one " + role + " column: " + candidates
        + ". Select exactly one.");
  }

  static KplexException unexpectedColumns(List<String> extra) {
    return new KplexException("UNEXPECTED_COLUMN", "columns " + extra + " are not written by kplex:"
        + " select the key (kplex_key), the order (kplex_order), value and optionally headers.");
  }

  static KplexException badColumnType(String role, String column, String type, String expected) {
    return new KplexException("COLUMN_TYPE", "the " + role + " column `" + column + "` has type " + type
        + "; expected " + expected + ".");
  }

  static KplexException badOption(String key, String value, String expected) {
    return new KplexException("BAD_OPTION", "option '" + key + "' = '" + value + "' is invalid: "
        + expected + ".");
  }

  static KplexException missingOption(String key, String table, String expected) {
    return new KplexException("MISSING_OPTION", "table " + table + " needs '" + key + "' ("
        + expected + "), e.g. CREATE TABLE kplex." + table + " TBLPROPERTIES ('"
        + KplexOptions.VIRTUAL_PARTITIONS + "' = '9', '" + KplexOptions.PHYSICAL_PARTITIONS
        + "' = '3').");
  }

  static KplexException unknownProperty(String key, String suggestion) {
    return new KplexException("UNKNOWN_PROPERTY", "unknown kplex table property '" + key + "'"
        + (suggestion == null ? "" : "; did you mean '" + suggestion + "'?")
        + " Known properties: " + KplexOptions.TABLE_PROPERTIES + ".");
  }

  static KplexException unknownTopic(String topic) {
    return new KplexException("UNKNOWN_TOPIC", "topic '" + topic + "' does not exist on the broker."
        + " Create it, or CREATE TABLE kplex." + topic + " TBLPROPERTIES (...) to make a kplex table.");
  }

  static KplexException notAKplexTable(String topic) {
    return new KplexException("NOT_A_KPLEX_TABLE", "topic '" + topic + "' is a plain Kafka topic,"
        + " not a kplex table, so kplex does not know its virtual partitions. Write into a table made"
        + " with CREATE TABLE kplex.<name> TBLPROPERTIES ('" + KplexOptions.VIRTUAL_PARTITIONS
        + "' = 'V', '" + KplexOptions.PHYSICAL_PARTITIONS + "' = 'P').");
  }

  static KplexException partitionMismatch(String topic, int actual, int expected) {
    return new KplexException("PARTITION_MISMATCH", "topic '" + topic + "' has " + actual
        + " partitions but its kplex table says " + KplexOptions.PHYSICAL_PARTITIONS + " = "
        + expected + ". Someone changed the topic; writing would break key affinity."
        + " Recreate the table, or restore the partition count.");
  }

  static KplexException unreachable(String bootstrap, Throwable cause) {
    return new KplexException("UNREACHABLE", "no Kafka broker answered at '" + bootstrap
        + "' (" + cause.getClass().getSimpleName() + ": " + cause.getMessage()
        + "). Check spark.sql.catalog.kplex.kafka.bootstrap.servers or the 'kafka.bootstrap.servers'"
        + " option.", cause);
  }

  static KplexException noBootstrap() {
    return new KplexException("NO_BOOTSTRAP", "no Kafka address: set"
        + " spark.sql.catalog.kplex.kafka.bootstrap.servers (configure_spark_with_kplex does it)"
        + " or the 'kafka.bootstrap.servers' option.");
  }

  static KplexException namespace(String ident) {
    return new KplexException("NAMESPACE", "kplex tables have no namespace: use kplex.<topic>, not "
        + ident + ".");
  }

  static KplexException sendFailed(String topic, Throwable cause) {
    return new KplexException("SEND_FAILED", "writing to topic '" + topic + "' failed: "
        + cause.getMessage(), cause);
  }

  // Reading, and read-time (virtual) tables.

  static KplexException lateRecord(String table, String topic, int partition, long offset, long order,
      long partitionMax, long maxDelayMs) {
    return new KplexException("LATE_RECORD", "table " + table + ": the record at " + topic + "-"
        + partition + " offset " + offset + " has order value " + order + ", "
        + lateness(partitionMax, order) + " behind the largest order value seen before it on that"
        + " partition (" + partitionMax + "), beyond '" + KplexOptions.MAX_DELAY_MS + "' = " + maxDelayMs
        + ". Raise '" + KplexOptions.MAX_DELAY_MS + "', or set '" + KplexOptions.LATE_POLICY
        + "' to 'drop' or 'side_topic' (with '" + KplexOptions.LATE_TOPIC + "').");
  }

  private static String lateness(long max, long order) {
    long d = max - order;
    return d < 0 ? "far" : d + " ms";
  }

  static KplexException virtualReadOnly(String table, String source) {
    return new KplexException("READ_ONLY", "table " + table + " is a read-time view of topic '"
        + source + "' (" + KplexOptions.SOURCE + "): it has no topic of its own to write to."
        + " INSERT into the source topic, or into a table made with CREATE TABLE kplex.<name>"
        + " TBLPROPERTIES ('" + KplexOptions.VIRTUAL_PARTITIONS + "' = 'V', '"
        + KplexOptions.PHYSICAL_PARTITIONS + "' = 'P').");
  }

  static KplexException badExpression(String property, String text, String table, String problem) {
    return new KplexException("BAD_EXPRESSION", "table " + table + ": '" + property + "' = '" + text
        + "' is not a usable Spark SQL expression over the source columns (key, value, topic,"
        + " partition, offset, timestamp, headers): " + problem);
  }

  static KplexException virtualNeeds(String table, String problem) {
    return new KplexException("BAD_VIRTUAL_TABLE", "read-time table " + table + " (with '"
        + KplexOptions.SOURCE + "'): " + problem);
  }

  static KplexException fixedByDefinition(String option, String table, boolean virtual) {
    return new KplexException("BAD_OPTION", "option '" + option + "' cannot be set on a read of " + table
        + (virtual ? ": it is part of the table's definition. A read may set "
            + KplexOptions.READ_OVERRIDES + "."
            : ": read-time settings apply to read-time tables only. To read a topic in event-time"
            + " order, CREATE TABLE kplex.<name> TBLPROPERTIES ('" + KplexOptions.SOURCE + "' = '<topic>', '"
            + KplexOptions.VIRTUAL_PARTITIONS + "' = '1', '" + KplexOptions.ORDER + "' = '<expression>')."));
  }

  static KplexException badBounds(String problem) {
    return new KplexException("BAD_OPTION", "read bounds: " + problem + " Use '"
        + KplexOptions.STARTING_OFFSETS + "'/'" + KplexOptions.ENDING_OFFSETS
        + "' ('earliest', 'latest' or {\"topic\":{\"0\":23}}) or '" + KplexOptions.STARTING_TIMESTAMP
        + "'/'" + KplexOptions.ENDING_TIMESTAMP + "' (epoch milliseconds).");
  }

  static KplexException lateTopicFailed(String topic, Throwable cause) {
    return new KplexException("SEND_FAILED", "sending a late record to side topic '" + topic
        + "' failed: " + cause.getMessage(), cause);
  }
}
