package io.kplex.spark.errors;

import io.kplex.spark.spec.KplexOptions;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Every kplex error, by its condition: each factory names the condition (or
 * {@code CONDITION.SUB_CLASS}) of {@code error_conditions.json} whose message template says
 * what is wrong and what to do, and fills the template's parameters. No error text is
 * written here: it is all in the conditions file, which the Python package reads too.
 *
 * <p>The parameters name the culprits, with one name per kind of culprit across the file
 * (and the Python side's {@code kplex_error}): {@code table}, {@code topic},
 * {@code partition}, {@code offset}, {@code column}, {@code option} (a table property, write
 * or read option, or setting), {@code value}, {@code expected}, {@code key} (a record's key),
 * {@code order_value}, {@code virtual_partition}, {@code query}, {@code epoch}, {@code file},
 * {@code bootstrap}, {@code principal}, {@code operation}, {@code resource}, {@code reason}
 * (what is wrong, in words)... A failure's cause is chained as its cause; what it said is
 * the parameter {@code cause} where the template quotes it.
 */
public final class Errors {
  private Errors() {}

  /**
   * The error of {@code condition}, with its parameters: name, value, name, value... in that
   * order (a null value renders as {@code null} and is left out of getMessageParameters).
   */
  private static KplexException error(String condition, Throwable cause, Object... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("kplex: message parameters come in pairs of name and value");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      Object value = namesAndValues[i + 1];
      out.put((String) namesAndValues[i], value == null ? null : String.valueOf(value));
    }
    return new KplexException(condition, out, cause);
  }

  private static KplexException error(String condition, Object... namesAndValues) {
    return error(condition, null, namesAndValues);
  }

  /** What a cause said: its class and message (the {@code cause} parameter). */
  private static String said(Throwable cause) {
    // With what it was caused by: Kafka's "Failed to create new KafkaAdminClient" names no
    // setting, its cause does (a login module not allowed, a file not found).
    StringBuilder out = new StringBuilder(cause.getClass().getSimpleName() + ": " + cause.getMessage());
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    seen.add(cause);
    for (Throwable c = cause.getCause(); c != null && seen.add(c) && seen.size() <= 6; c = c.getCause()) {
      String message = c.getMessage();
      if (message != null && !out.toString().contains(message)) {
        out.append(" (caused by ").append(c.getClass().getSimpleName()).append(": ").append(message).append(')');
      }
    }
    return SECRET.matcher(out.toString()).replaceAll("$1***");
  }

  /** A secret a client's error may echo from its settings (a JAAS line's password), hidden. */
  private static final java.util.regex.Pattern SECRET =
      java.util.regex.Pattern.compile("(?i)((?:password|secret|token)\\s*[=:]\\s*)(\"[^\"]*\"|[^\\s;,)]+)");

  public static KplexException nullKey(String column, long orderValue) {
    return error("NULL_KEY.WRITE", "column", column, "order_value", orderValue);
  }

  /**
   * A read-time table's key expression (its text, {@code expression}) gave NULL on a source
   * record (names the source).
   */
  public static KplexException nullReadTimeKey(String table, String expression, String topic, int partition,
      long offset) {
    return error("NULL_KEY.READ_TIME", "table", table, "expression", expression, "topic", topic,
        "partition", partition, "offset", offset);
  }

  /** A read-time table's order expression gave NULL on a source record (names the source). */
  public static KplexException nullReadTimeOrder(String table, String expression, String topic, int partition,
      long offset) {
    return error("NULL_ORDER.READ_TIME", "table", table, "expression", expression, "topic", topic,
        "partition", partition, "offset", offset);
  }

  public static KplexException nullOrder(String column, String keyText) {
    return error("NULL_ORDER.WRITE", "column", column, "key", keyText);
  }

  public static KplexException badJsonPointer(String pointer, String problem) {
    return error("JSON_POINTER.REASON", "pointer", pointer, "reason", problem);
  }

  /** A JSON pointer that is not empty and does not start with '/'. */
  public static KplexException jsonPointerNoSlash(String pointer) {
    return error("JSON_POINTER.NO_SLASH", "pointer", pointer);
  }

  /** A JSON pointer with a '~' not followed by 0 or 1. */
  public static KplexException jsonPointerTilde(String pointer) {
    return error("JSON_POINTER.TILDE", "pointer", pointer);
  }

  public static KplexException unsupportedOrderType(String column, String type) {
    return error("ORDER_TYPE", "column", column, "type", type);
  }

  /** A column the written data must have, each a sub-class of {@code MISSING_COLUMN}. */
  public enum WrittenColumn { KEY, ORDER, VALUE }

  /** The written data has no {@code role} column; its columns are {@code columns}. */
  public static KplexException missingColumn(WrittenColumn role, List<String> columns) {
    return error("MISSING_COLUMN." + role.name(), "columns", columns);
  }

  public static KplexException ambiguousColumn(String role, List<String> candidates) {
    return error("AMBIGUOUS_COLUMN", "role", role, "columns", candidates);
  }

  public static KplexException unexpectedColumns(List<String> extra) {
    return error("UNEXPECTED_COLUMN", "columns", extra);
  }

  /** The written value column {@code column} has type {@code type}, not BINARY or STRING. */
  public static KplexException valueColumnType(String column, String type) {
    return error("COLUMN_TYPE.VALUE", "column", column, "type", type);
  }

  /** The written headers column {@code column} has type {@code type}, not Kafka's headers. */
  public static KplexException headersColumnType(String column, String type) {
    return error("COLUMN_TYPE.HEADERS", "column", column, "type", type);
  }

  /** {@code expected}: what the option's declaration in options.json allows (OptionSpec.expected). */
  public static KplexException badOption(String key, String value, String expected) {
    return error("BAD_OPTION.VALUE", "option", key, "value", value, "expected", expected);
  }

  /** An option whose value is none of {@code choices} (an enum's wire names). */
  public static KplexException badChoice(String key, String value, List<String> choices) {
    return error("BAD_OPTION.CHOICE", "option", key, "value", value, "choices", choices);
  }

  /** {@code kplex.late_topic} of a write to {@code table} names the table's own topic. */
  public static KplexException lateTopicIsTable(String table, String lateTopic) {
    return error("BAD_OPTION.LATE_TOPIC_IS_TABLE", "option", KplexOptions.LATE_TOPIC, "late_topic", lateTopic,
        "table", table);
  }

  /** {@code kplex.late_topic} of a write to {@code table} names a topic of Kafka's or kplex's own. */
  public static KplexException lateTopicReserved(String table, String lateTopic) {
    return error("BAD_OPTION.LATE_TOPIC_RESERVED", "option", KplexOptions.LATE_TOPIC, "late_topic", lateTopic,
        "table", table);
  }

  /** A write into {@code table} whose late topic is a topic its query reads. */
  public static KplexException lateTopicIsSource(String table, String lateTopic) {
    return error("BAD_OPTION.LATE_TOPIC_IS_SOURCE", "option", KplexOptions.LATE_TOPIC, "late_topic", lateTopic,
        "table", table);
  }

  /** {@code kplex.late_topic} of a write to or a read of {@code table} names the topic of table {@code other}. */
  public static KplexException lateTopicOfTable(String table, String lateTopic, String other) {
    return error("BAD_OPTION.LATE_TOPIC_OF_TABLE", "option", KplexOptions.LATE_TOPIC, "late_topic", lateTopic,
        "table", table, "other", other);
  }

  /** late_policy = side_topic without a late topic. */
  public static KplexException lateTopicNeeded(String key, String value) {
    return error("BAD_OPTION.LATE_TOPIC_NEEDED", "option", key, "value", value,
        "late_topic_option", KplexOptions.LATE_TOPIC);
  }

  /** kplex_confluent_payload's format argument, not avro, json or protobuf. */
  public static KplexException confluentFormat(String function, String value) {
    return error("BAD_OPTION.CONFLUENT_FORMAT", "function", function, "value", value);
  }

  /** kplex_vpartition's V below 1. */
  public static KplexException vpartitionCount(String function, long v) {
    return error("BAD_OPTION.VPARTITION_COUNT", "function", function, "value", v);
  }

  public static KplexException missingOption(String key, String table, String expected) {
    return error("MISSING_OPTION.TABLE_PROPERTY", "option", key, "table", table, "expected", expected);
  }

  public static KplexException unknownProperty(String key, String suggestion) {
    return suggestion == null
        ? error("UNKNOWN_PROPERTY.NO_SUGGESTION", "option", key, "known", KplexOptions.TABLE_PROPERTIES)
        : error("UNKNOWN_PROPERTY.SUGGESTION", "option", key, "suggestion", suggestion,
            "known", KplexOptions.TABLE_PROPERTIES);
  }

  /**
   * A Kafka client setting given as a table property. Table definitions are stored in a
   * topic any consumer can read, so a credential there would be public: refused, the value
   * never repeated.
   */
  public static KplexException kafkaTableProperty(String key) {
    return error("BAD_OPTION.KAFKA_TABLE_PROPERTY", "option", key);
  }

  /** {@code topic} cannot name a Kafka topic ({@code problem}: why, in the words of kafka/TopicNames). */
  public static KplexException badTopicName(String topic, String problem) {
    return error("BAD_TOPIC_NAME.TOPIC", "topic", topic, "problem", problem);
  }

  /** {@code table} cannot name a kplex table ({@code problem}: why, for people). */
  public static KplexException badTableName(String table, String problem) {
    return error("BAD_TABLE_NAME", "table", table, "problem", problem);
  }

  /** Table {@code table}, with no {@code kplex.topic}, would write to the topic of its own name, which cannot be one. */
  public static KplexException badTableTopicName(String table, String problem) {
    return error("BAD_TOPIC_NAME.TABLE_NAME", "table", table, "problem", problem, "option", KplexOptions.TOPIC);
  }

  /** Option {@code option} names a topic, {@code topic}, that cannot be one. */
  public static KplexException badTopicOption(String option, String topic, String problem) {
    return error("BAD_TOPIC_NAME.OPTION", "option", option, "topic", topic, "problem", problem);
  }

  /**
   * The broker refused {@code operation} on {@code topic} for what was asked (a policy, a
   * partition count, a replication factor the cluster cannot meet, a name that collides).
   */
  public static KplexException kafkaRefused(String operation, String topic, Throwable cause) {
    return error("KAFKA.REFUSED", cause, "operation", operation.toLowerCase(java.util.Locale.ROOT), "topic", topic,
        "cause", said(cause));
  }

  /** As {@link #kafkaRefused}, for a topic's creation: says what was asked ({@code replication} < 1: the broker's default). */
  public static KplexException createRefused(String topic, int partitions, int replication, Throwable cause) {
    return error("KAFKA.CREATE_REFUSED", cause, "topic", topic, "partitions", partitions,
        "replication", replication < 1 ? "the broker's default" : String.valueOf(replication), "cause", said(cause));
  }

  public static KplexException unknownTopic(String topic) {
    return error("UNKNOWN_TOPIC.BROKER", "topic", topic);
  }

  /** The topic of kplex table {@code table} is gone (deleted outside kplex; the definition stays). */
  public static KplexException tableTopicDeleted(String table, String topic) {
    return error("UNKNOWN_TOPIC.TABLE_TOPIC_DELETED", "table", table, "topic", topic);
  }

  /**
   * The topic of {@code table} holds nothing and never held anything, yet kplex committed order
   * value {@code order} to its virtual partition {@code vp}: it was deleted and created again.
   */
  public static KplexException tableTopicRecreated(String table, String topic, int vp, long order) {
    return error("DATA_LOSS.TABLE_TOPIC_RECREATED", "table", table, "topic", topic, "vp", vp, "order_value", order);
  }

  /**
   * The topic named as {@code table}'s is not the one kplex committed order values up to
   * {@code order} (in virtual partition {@code vp}) to: its id is {@code topicId}, and the
   * writes went to the topic of id {@code writtenTopicId}, deleted since.
   */
  public static KplexException tableTopicReplaced(String table, String topic, int vp, long order,
      String writtenTopicId, String topicId) {
    return error("DATA_LOSS.TABLE_TOPIC_REPLACED", "table", table, "topic", topic, "vp", vp, "order_value", order,
        "written_topic_id", writtenTopicId, "topic_id", topicId);
  }

  public static KplexException notAKplexTable(String topic) {
    return error("NOT_A_KPLEX_TABLE.WRITE", "topic", topic);
  }

  public static KplexException partitionMismatch(String topic, int actual, int expected) {
    return error("PARTITION_MISMATCH.WRITE", "topic", topic, "partition_count", actual, "expected", expected);
  }

  /** A read of kplex table {@code table}, whose topic no longer has the table's P partitions. */
  public static KplexException partitionMismatchOnRead(String topic, int actual, String table, int expected) {
    return error("PARTITION_MISMATCH.READ", "topic", topic, "partition_count", actual, "table", table,
        "expected", expected);
  }

  public static KplexException unreachable(String bootstrap, Throwable cause) {
    return error("UNREACHABLE.BROKER", cause, "bootstrap", bootstrap, "cause", said(cause));
  }

  public static KplexException noBootstrap() {
    return error("NO_BOOTSTRAP.CATALOG", "option", "kafka.bootstrap.servers");
  }

  public static KplexException namespace(String ident) {
    return error("NAMESPACE", "table", ident);
  }

  /**
   * A task's transaction could not be committed. {@code code}, the condition, says which kind
   * of failure it was (fenced, expired, timed out, not authorized: CommitFailure); its
   * template says what that means.
   */
  public static KplexException commitFailed(String code, String txn, String table, int attempts, Throwable cause) {
    return error(code + (attempts > 1 ? ".TRANSACTION_RETRIED" : ".TRANSACTION"), cause, "table", table,
        "transaction", txn, "attempts", attempts, "cause", said(cause));
  }

  public static KplexException commitTooLate(String table, long openMs, long timeoutMs, long marginMs) {
    return error("COMMIT_EXPIRED.TOO_LATE", "table", table, "open_ms", openMs, "timeout_ms", timeoutMs,
        "margin_ms", marginMs);
  }

  /** {@link #commitTooLate} of a streaming micro-batch, whose rerun after a restart gets {@code rerunMs}. */
  public static KplexException streamCommitTooLate(KplexException tooLate, long rerunMs) {
    Map<String, String> named = new LinkedHashMap<>(tooLate.getMessageParameters());
    named.put("rerun_ms", String.valueOf(rerunMs));
    return new KplexException("COMMIT_EXPIRED.STREAM_TOO_LATE", named, tooLate);
  }

  /** A task's transaction was fenced while it wrote: another writer took the table over. */
  public static KplexException taskFenced(String table, String transactionalId, Throwable cause) {
    return error("TASK_FENCED", cause, "table", table, "transaction", transactionalId,
        "cause", cause.getMessage(), "claim_timeout", KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
  }

  public static KplexException sendFailed(String topic, Throwable cause) {
    return error("SEND_FAILED.TOPIC", cause, "topic", topic, "cause", cause.getMessage());
  }

  // Reading, and read-time (virtual) tables.

  public static KplexException lateRecord(String table, String topic, int partition, long offset, long order,
      long partitionMax, long maxDelayMs) {
    long behind = partitionMax - order;
    return error("LATE_RECORD.READ", "table", table, "topic", topic, "partition", partition,
        "offset", offset, "order_value", order, "max_order_value", partitionMax, "max_delay_ms", maxDelayMs,
        "lateness", behind < 0 ? "far" : behind + " ms");
  }

  public static KplexException virtualReadOnly(String table, String source) {
    return error("READ_ONLY", "table", table, "source", source);
  }

  /** A read-time table's expression Spark cannot analyze ({@code problem}: what Spark said). */
  public static KplexException badExpression(String property, String text, String table, String problem) {
    return error("BAD_EXPRESSION.READ_TIME", "table", table, "option", property, "expression", text,
        "reason", problem);
  }

  public static KplexException emptyExpression(String property, String text, String table) {
    return error("BAD_EXPRESSION.READ_TIME_EMPTY", "table", table, "option", property, "expression", text);
  }

  public static KplexException notOneScalarExpression(String property, String text, String table) {
    return error("BAD_EXPRESSION.READ_TIME_NOT_SCALAR", "table", table, "option", property, "expression", text);
  }

  public static KplexException readTimeOrderType(String property, String text, String table, String type) {
    return error("BAD_EXPRESSION.READ_TIME_ORDER_TYPE", "table", table, "option", property, "expression", text,
        "type", type);
  }

  /** A read-time table's definition is wrong: {@code problem} (prefer the factories below, one per problem). */
  public static KplexException virtualNeeds(String table, String problem) {
    return error("BAD_VIRTUAL_TABLE.REASON", "table", table, "reason", problem);
  }

  public static KplexException virtualNoSource(String table) {
    return error("BAD_VIRTUAL_TABLE.NO_SOURCE", "table", table, "option", KplexOptions.SOURCE);
  }

  public static KplexException virtualSourceTwice(String table, String source) {
    return error("BAD_VIRTUAL_TABLE.SOURCE_TWICE", "table", table, "source", source);
  }

  public static KplexException virtualOwnTopic(String table, String source) {
    return error("BAD_VIRTUAL_TABLE.OWN_TOPIC", "table", table, "source", source, "option", KplexOptions.TOPIC);
  }

  public static KplexException virtualNullOrderFirst(String table) {
    return error("BAD_VIRTUAL_TABLE.NULL_ORDER_FIRST", "table", table, "option", KplexOptions.NULL_ORDER);
  }

  public static KplexException virtualNoLateTopic(String table) {
    return error("BAD_VIRTUAL_TABLE.NO_LATE_TOPIC", "table", table, "option", KplexOptions.LATE_TOPIC);
  }

  public static KplexException virtualLateTopicIsSource(String table, String lateTopic) {
    return error("BAD_VIRTUAL_TABLE.LATE_TOPIC_IS_SOURCE", "table", table, "late_topic", lateTopic);
  }

  /** A REPLACE into a read-time table whose source is the topic of the table it drops. */
  public static KplexException virtualSourceReplaced(String table, String source) {
    return error("BAD_VIRTUAL_TABLE.SOURCE_REPLACED", "table", table, "source", source);
  }

  /** The stored definition of {@code table} in {@code topic} that this kplex cannot read ({@code cause}). */
  public static KplexException definitionOfTable(String table, String topic, KplexException cause) {
    return error("DEFINITION_FORMAT.OF_TABLE", cause, "table", table, "topic", topic, "cause", cause.getMessage());
  }

  public static KplexException virtualNameTaken(String table) {
    return error("BAD_VIRTUAL_TABLE.NAME_TAKEN", "table", table);
  }

  public static KplexException virtualPartitions(String table, List<String> sources, int partitions, String given) {
    return error("BAD_VIRTUAL_TABLE.PARTITIONS", "table", table, "source", String.join(", ", sources),
        "partition_count", partitions, "option", KplexOptions.PHYSICAL_PARTITIONS, "value", given);
  }

  /** A write's kplex.* option that options.json does not declare; {@code known}: what a write may set. */
  public static KplexException unknownWriteOption(String option, String suggestion, List<String> known) {
    return suggestion == null
        ? error("UNKNOWN_PROPERTY.WRITE_OPTION", "option", option, "known", known)
        : error("UNKNOWN_PROPERTY.WRITE_OPTION_SUGGESTION", "option", option, "suggestion", suggestion, "known", known);
  }

  /** A {@code spark.kplex.*} session setting options.json does not declare; {@code known}: those it does. */
  public static KplexException unknownSessionSetting(String setting, String suggestion, List<String> known) {
    return suggestion == null
        ? error("UNKNOWN_PROPERTY.SESSION_SETTING", "option", setting, "known", known)
        : error("UNKNOWN_PROPERTY.SESSION_SETTING_SUGGESTION", "option", setting, "suggestion", suggestion, "known", known);
  }

  /** A {@code kplex.stream.*} session setting no stream takes; {@code suggestion} may be null. */
  public static KplexException unknownStreamSetting(String setting, String suggestion, List<String> known) {
    return suggestion == null
        ? error("UNKNOWN_PROPERTY.STREAM_SETTING", "option", setting, "known", known)
        : error("UNKNOWN_PROPERTY.STREAM_SETTING_SUGGESTION", "option", setting, "suggestion", suggestion, "known", known);
  }

  /** A read option named almost as {@code suggestion}, one a read takes ({@code known}). */
  public static KplexException misspeltReadOption(String option, String suggestion, List<String> known) {
    return error("UNKNOWN_PROPERTY.READ_OPTION_SUGGESTION", "option", option, "suggestion", suggestion, "known", known);
  }

  /** A write's option that only the table's definition sets (V, P, its topic, ...). */
  public static KplexException fixedOnWrite(String option, String table, List<String> known) {
    return error("BAD_OPTION.FIXED_ON_WRITE", "option", option, "table", table, "write_options", known);
  }

  public static KplexException fixedByDefinition(String option, String table, boolean virtual) {
    return virtual
        ? error("BAD_OPTION.FIXED_BY_DEFINITION", "option", option, "table", table, "read_time", true,
            "read_overrides", KplexOptions.READ_OVERRIDES)
        : error("BAD_OPTION.READ_TIME_ONLY", "option", option, "table", table, "read_time", false);
  }

  /** Read bounds that are wrong: {@code problem} (prefer the factories below, one per problem). */
  public static KplexException badBounds(String problem) {
    return error("BAD_OPTION.READ_BOUNDS", "reason", problem);
  }

  public static KplexException boundsBoth(String offsetsKey, String timestampKey) {
    return error("BAD_OPTION.BOUNDS_BOTH", "option", offsetsKey, "other_option", timestampKey);
  }

  public static KplexException boundsTimestamp(String timestampKey, String value) {
    return error("BAD_OPTION.BOUNDS_TIMESTAMP", "option", timestampKey, "value", value);
  }

  public static KplexException boundsNotJson(String offsetsKey, String value) {
    return error("BAD_OPTION.BOUNDS_NOT_JSON", "option", offsetsKey, "value", value);
  }

  public static KplexException boundsNotObject(String offsetsKey, String value) {
    return error("BAD_OPTION.BOUNDS_NOT_OBJECT", "option", offsetsKey, "value", value);
  }

  public static KplexException boundsOtherTopic(String offsetsKey, String topic, List<String> topics) {
    return error("BAD_OPTION.BOUNDS_OTHER_TOPIC", "option", offsetsKey, "topic", topic,
        "topics", String.join(", ", topics));
  }

  public static KplexException boundsPartition(String offsetsKey, String partition) {
    return error("BAD_OPTION.BOUNDS_PARTITION", "option", offsetsKey, "partition", partition);
  }

  public static KplexException boundsNoPartition(String offsetsKey, String topic, int partition) {
    return error("BAD_OPTION.BOUNDS_NO_PARTITION", "option", offsetsKey, "topic", topic, "partition", partition);
  }

  /** An ending bound given to a stream, which has none. */
  public static KplexException boundsStreamEnd(String key) {
    return error("BAD_OPTION.BOUNDS_STREAM_END", "option", key);
  }

  public static KplexException boundsOffset(String offsetsKey, String offset) {
    return error("BAD_OPTION.BOUNDS_OFFSET", "option", offsetsKey, "offset", offset);
  }

  public static KplexException lateTopicFailed(String topic, Throwable cause) {
    return error("SEND_FAILED.LATE_TOPIC", cause, "topic", topic, "cause", cause.getMessage());
  }

  /**
   * Offsets [{@code from}, {@code until}) of a source partition that a stream cannot read:
   * {@code how} (a sub-class of KPLEX_DATA_LOSS: PARTITION_GONE, END_WENT_BACK, BROKER_DELETED,
   * TOPIC_RECREATED: {@code from} where the query stood in the old topic, {@code until} the new one's end);
   * {@code option}: the read option that skips them.
   */
  public static KplexException dataLoss(DataLoss how, String topic, int partition, long from, long until,
      String option) {
    return error("DATA_LOSS." + how.name(), "topic", topic, "partition", partition, "from_offset", from,
        "until_offset", until, "option", option);
  }

  /** How a stream lost source offsets (the sub-classes of KPLEX_DATA_LOSS). */
  public enum DataLoss { PARTITION_GONE, END_WENT_BACK, BROKER_DELETED, TOPIC_RECREATED, DELETED_IN_READ }

  public static KplexException virtualStream(String table) {
    return error("STREAM", "table", table);
  }

  /**
   * A streaming write's late record. {@code behind}: more than max_delay_ms behind the
   * largest order value before it on its source partition ({@code bound} = that value minus
   * the delay); else below what is already written to its virtual partition ({@code bound}).
   * {@code at}: its source position, or null.
   */
  /**
   * A streamed record is late; it came from {@code topic}-{@code partition} at {@code offset},
   * or from a source position the plan lost (a null {@code topic}).
   */
  public static KplexException lateStreamRecord(String table, String key, long order, int vp, boolean behind,
      long bound, long maxDelayMs, String topic, int partition, long offset) {
    if (topic == null) {
      return error(behind ? "LATE_RECORD.BEHIND_SOURCE_UNPOSITIONED" : "LATE_RECORD.BELOW_WRITTEN_UNPOSITIONED",
          "table", table, "key", key, "order_value", order, "virtual_partition", vp, "behind", behind,
          "order_bound", bound, "max_delay_ms", maxDelayMs);
    }
    return error(behind ? "LATE_RECORD.BEHIND_SOURCE" : "LATE_RECORD.BELOW_WRITTEN", "table", table, "key", key,
        "order_value", order, "virtual_partition", vp, "behind", behind, "order_bound", bound,
        "max_delay_ms", maxDelayMs, "topic", topic, "partition", partition, "offset", offset);
  }

  /**
   * A batch write's record below what its virtual partition holds, under late_policy fail: no
   * max_delay_ms helps (a batch write judges by what the table holds only); where it came from
   * when its row carries its source position ({@code topic} null: unknown).
   */
  public static KplexException lateInsertRecord(String table, String key, long order, int vp, long bound,
      String topic, int partition, long offset) {
    if (topic == null) {
      return error("LATE_RECORD.BELOW_WRITTEN_INSERT_UNPOSITIONED", "table", table, "key", key, "order_value", order,
          "virtual_partition", vp, "order_bound", bound);
    }
    return error("LATE_RECORD.BELOW_WRITTEN_INSERT", "table", table, "key", key, "order_value", order,
        "topic", topic, "partition", partition, "offset", offset, "virtual_partition", vp, "order_bound", bound);
  }

  public static KplexException streamingPlacement(int vp, int task, int tasks) {
    return error("STREAM_PLACEMENT", "virtual_partition", vp, "task", task, "task_count", tasks);
  }

  /**
   * A streaming writer got a row from outside its micro-batch's range of a source partition,
   * or a source position out of offset order: the event-time rule would judge with a high
   * from records the batch did not read.
   */
  public static KplexException rowOutsideEpoch(String table, long epoch, String topic, int partition, long offset,
      String range, long order) {
    return error("SOURCE_RANGE.OUTSIDE_EPOCH", "table", table, "epoch", epoch, "topic", topic,
        "partition", partition, "offset", offset, "offset_range", range, "order_value", order,
        "source_partition", topic == null ? String.valueOf(partition) : topic + "-" + partition);
  }

  /** A stream at its cap on held records whose watermark no record can move (strict waiting). */
  public static KplexException heldLimit(String table, long held, long cap, String topic, Collection<Integer> holding) {
    return error("HELD_LIMIT", "table", table, "held_records", held, "max_held_records", cap, "topic", topic,
        "partitions", holding);
  }

  public static KplexException sourceOutOfOrder(int partition, long offset, long before) {
    return error("SOURCE_RANGE.OUT_OF_ORDER", "partition", partition, "offset", offset, "previous_offset", before);
  }

  /** A test hook asked for in a JVM the test harness did not arm. */
  /** A restricted server's refusal of a statement's Kafka client setting beyond its list. */
  public static KplexException serverKafkaOption(String option, String allowed) {
    return error("SERVER_RESTRICTED.KAFKA_OPTION", "option", option, "allowed", allowed,
        "switch", "spark.kplex.server.restricted", "list", "spark.kplex.server.kafka_options");
  }

  /** A restricted server's refusal of a statement's Kafka setting that names a config provider's variable. */
  public static KplexException serverKafkaVariable(String option) {
    return error("SERVER_RESTRICTED.KAFKA_VARIABLE", "option", option, "switch", "spark.kplex.server.restricted");
  }

  /** A restricted server's refusal of a kplex catalog it did not start with. */
  public static KplexException serverCatalog(String catalog, String started) {
    return error("SERVER_RESTRICTED.CATALOG", "catalog", catalog, "catalogs", started,
        "switch", "spark.kplex.server.restricted");
  }

  /** A restricted server's refusal of a kplex catalog whose options a session changed. */
  public static KplexException serverCatalogSetting(String catalog, String setting) {
    return error("SERVER_RESTRICTED.CATALOG_SETTING", "catalog", catalog, "setting", setting,
        "switch", "spark.kplex.server.restricted");
  }

  public static KplexException testHookNotArmed(String key, String env, String property) {
    return error("TEST_HOOK", "option", key, "environment_variable", env, "system_property", property);
  }

  public static KplexException noCheckpoint(String table) {
    return error("MISSING_OPTION.CHECKPOINT", "table", table, "option", "checkpointLocation");
  }

  /**
   * A writer found, once its commit was recorded, that its claim on the table had been
   * taken over (it stood still past kplex.writer_claim_timeout_ms). {@code handedOver}: the
   * commit was recorded before the take-over, so the taker finishes it.
   */
  public static KplexException claimTaken(String table, String by, boolean handedOver) {
    return error(handedOver ? "CLAIM_TAKEN.HANDED_OVER" : "CLAIM_TAKEN.NOTHING_COMMITTED", "table", table,
        "taken_by", by, "handed_over", handedOver, "claim_timeout", KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
  }

  /**
   * An at-least-once write whose claim on {@code table} was taken over by {@code by} before it
   * recorded what it wrote: its rows were sent, its mark is not recorded.
   */
  public static KplexException claimTakenAtLeastOnce(String table, String by) {
    return error("CLAIM_TAKEN.AT_LEAST_ONCE", "table", table, "taken_by", by, "claim_timeout",
        KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
  }

  /**
   * A commit of which Kafka aborted all {@code transactions} transactions, settled: nothing of
   * it is visible ({@code insert}: a batch INSERT, else epoch {@code epoch} of a stream).
   */
  public static KplexException commitAllAborted(String table, String query, boolean insert, long epoch,
      int transactions) {
    return error(insert ? "COMMIT_CUT_SHORT.ALL_ABORTED_INSERT" : "COMMIT_CUT_SHORT.ALL_ABORTED_EPOCH",
        "table", table, "query", query, "epoch", epoch, "transaction_count", transactions);
  }

  /**
   * A commit of which Kafka aborted the transactions of {@code tasks}, settled: which virtual
   * partitions are in the table, which are missing ({@code known}: whether the commit record
   * says), and what to do ({@code insert}: a batch INSERT, else epoch {@code epoch} of a stream).
   */
  public static KplexException commitCutShort(String table, String query, boolean insert, long epoch,
      Set<Integer> tasks, Set<Integer> committed, Set<Integer> lost, boolean known, int virtualPartitions) {
    String condition = "COMMIT_CUT_SHORT." + (known ? "PARTIAL_" : "PARTIAL_UNRECORDED_") + (insert ? "INSERT" : "EPOCH");
    return error(condition, "table", table, "query", query, "epoch", epoch, "tasks", new TreeSet<>(tasks),
        "committed_virtual_partitions", new TreeSet<>(committed), "lost_virtual_partitions", new TreeSet<>(lost),
        "lost_virtual_partition_list", String.join(", ", new TreeSet<>(lost).stream().map(String::valueOf).toList()),
        "virtual_partition_count", virtualPartitions);
  }

  /** A rerun epoch does not hold the virtual partitions per task that its cut-short first run did. */
  public static KplexException partialRerunDiffers(String table, String query, long epoch, Set<Integer> lostVps,
      boolean taskLost, int partition, int vp) {
    return error(taskLost ? "COMMIT_CUT_SHORT.RERUN_HOLDS_COMMITTED" : "COMMIT_CUT_SHORT.RERUN_HOLDS_LOST", "table", table,
        "query", query, "epoch", epoch, "lost_virtual_partitions", new TreeSet<>(lostVps), "task_lost", taskLost,
        "task", partition, "virtual_partition", vp);
  }

  /** The control plane cannot be spread now: {@code why}, for {@code table}. */
  public static KplexException controlPlaneBusy(String table, String why) {
    return error("CONTROL_PLANE_BUSY.REASON", "table", table, "why", why);
  }

  /** The control plane cannot be spread now: the writer claim {@code claim} was renewed {@code renewedMs} ago. */
  public static KplexException controlPlaneWriter(String table, String claim, long renewedMs) {
    return error("CONTROL_PLANE_BUSY.WRITER", "table", table, "claim", claim, "renewed_ms", renewedMs);
  }

  /** The control plane cannot be spread now: {@code table} has a commit under way. */
  public static KplexException controlPlaneCommitUnderWay(String table) {
    return error("CONTROL_PLANE_BUSY.COMMIT_UNDER_WAY", "table", table);
  }

  public static KplexException tableBusy(String table, String query) {
    return error("TABLE_BUSY", "table", table, "query", query);
  }

  /** {@code startingOffsets = 'table'}: no stream from {@code topic} committed to {@code table} (null: to any). */
  public static KplexException nothingToResume(String topic, String table) {
    return table == null
        ? error("RESUME_FROM_TABLE.NOTHING_IN_ANY_TABLE", "topic", topic)
        : error("RESUME_FROM_TABLE.NOTHING_IN_TABLE", "topic", topic, "table", table);
  }

  /** {@code startingOffsets = 'table'} without {@code startingTable}, and several tables streamed from the topic. */
  public static KplexException whichTableToResume(String topic, Collection<String> tables) {
    return error("RESUME_FROM_TABLE.WHICH_TABLE", "topic", topic, "tables", tables);
  }

  /** {@code startingOffsets = 'table'} where it has no meaning: {@code why} (prefer the factories below). */
  public static KplexException resumeNotHere(String why) {
    return error("RESUME_FROM_TABLE.NOT_HERE", "option", KplexOptions.STARTING_OFFSETS, "reason", why);
  }

  /** {@code startingOffsets = 'table'} on a batch read ({@code offsetsKey}: the option that said so). */
  public static KplexException resumeInBatch(String offsetsKey) {
    return error("RESUME_FROM_TABLE.BATCH_READ", "option", offsetsKey);
  }

  /** A stream resuming {@code resumed} ('startingTable') that writes another table. */
  public static KplexException resumeOtherTable(String resumed, String table) {
    return error("RESUME_FROM_TABLE.OTHER_TABLE", "resumed_table", resumed, "table", table);
  }

  /** {@code startingOffsets = 'table'} with a starting timestamp. */
  public static KplexException resumeWithTimestamp() {
    return error("RESUME_FROM_TABLE.WITH_TIMESTAMP", "option", KplexOptions.STARTING_TIMESTAMP);
  }

  /** A query started to resume from the table, whose last stream has moved on since (or never got there). */
  public static KplexException resumeStale(String table, String topic, Map<Integer, Long> ends,
      Map<Integer, Long> starts, String by) {
    return error("RESUME_FROM_TABLE.STALE", "table", table, "topic", topic, "offsets", new TreeMap<>(ends),
        "starting_offsets", new TreeMap<>(starts), "query", by);
  }

  /** A query resuming from the table whose predecessor's held files are gone (its checkpoint deleted). */
  public static KplexException resumeHeldGone(String table, String from, long held, String file) {
    return error("RESUME_FROM_TABLE.HELD_GONE", "table", table, "query", from, "held_records", held, "file", file);
  }

  /**
   * A query resuming from the table where query {@code query}'s stream stopped ({@code ends}),
   * whose epoch {@code epoch} after that Kafka cut short: its committed part would be read again.
   */
  public static KplexException resumeCutShort(String table, String topic, Map<Integer, Long> ends, String query,
      long epoch, Set<Integer> committedVps, Set<Integer> lostVps) {
    return error("RESUME_FROM_TABLE.CUT_SHORT", "table", table, "topic", topic, "offsets", new TreeMap<>(ends),
        "query", query, "epoch", epoch, "committed_virtual_partitions", new TreeSet<>(committedVps),
        "lost_virtual_partitions", new TreeSet<>(lostVps));
  }

  /** A second query resuming from the epoch another one already resumed from. */
  public static KplexException resumeTaken(String table, String from, String by) {
    return error("RESUME_FROM_TABLE.TAKEN", "table", table, "query", from, "taken_by", by);
  }

  /** A query restarted, holding records, after another query's stream from its source wrote the table. */
  public static KplexException heldOvertaken(String table, String query, long held, String by, String topic) {
    return error("QUERY_SUPERSEDED.OVERTAKEN", "table", table, "query", query, "held_records", held,
        "taken_by", by, "topic", topic);
  }

  /** A query restarted after another one resumed from its last epoch. */
  public static KplexException querySuperseded(String table, String query, String by) {
    return error("QUERY_SUPERSEDED.RESUMED", "table", table, "query", query, "taken_by", by);
  }

  public static KplexException definitionTooNew(String format, int version, int understood) {
    return error("DEFINITION_FORMAT.TOO_NEW", "format", format, "version", version, "supported_version", understood);
  }

  public static KplexException definitionUnreadable(Exception e) {
    return error("DEFINITION_FORMAT.UNREADABLE", e, "cause", e.getMessage());
  }

  /** Committing failed with something kplex does not classify. */
  public static KplexException commitFailed(String table, Throwable cause) {
    return error("COMMIT_FAILED.UNCLASSIFIED", cause, "table", table, "cause", cause.toString());
  }

  public static KplexException kafkaClientsInternals(String version, Exception e) {
    return error("KAFKA_CLIENTS_INTERNALS", e, "kafka_clients_version", version, "cause", e.toString());
  }

  /** The kinds of record of kplex's metadata topic, each with its sub-class of {@code METADATA}. */
  public enum MetadataRecord {
    EPOCH_RECORD, PENDING_COMMIT, PARTIAL_COMMIT, TOPIC_ID_RECORD
  }

  /** A record of kplex's metadata topic {@code topic} that cannot be read ({@code kind}: which kind). */
  public static KplexException unreadableMetadata(MetadataRecord kind, String topic, Exception e) {
    return error("METADATA." + kind.name(), e, "topic", topic, "cause", e.getMessage());
  }

  /**
   * An epoch record {@code record} written as changes to epoch {@code baseEpoch} whose base
   * {@code baseRecord} is missing.
   */
  public static KplexException epochBaseMissing(String topic, String record, long baseEpoch, String baseRecord) {
    return error("METADATA.EPOCH_BASE_MISSING", "topic", topic, "record", record, "base_epoch", baseEpoch,
        "base_record", baseRecord);
  }

  /**
   * An epoch record {@code record} written as changes to epoch {@code baseEpoch} whose base
   * {@code baseRecord} holds epoch {@code heldEpoch} (of another query, or out of its range).
   */
  public static KplexException epochBaseOther(String topic, String record, long baseEpoch, String baseRecord,
      long heldEpoch) {
    return error("METADATA.EPOCH_BASE_OTHER", "topic", topic, "record", record, "base_epoch", baseEpoch,
        "base_record", baseRecord, "epoch", heldEpoch);
  }

  public static KplexException metadataReadTimedOut(String topic) {
    return error("METADATA.TIMED_OUT", "topic", topic);
  }

  public static KplexException heldWrite(Object file, Exception e) {
    return error("HELD_STATE.WRITE", e, "file", file, "cause", e.toString());
  }

  public static KplexException heldColumns(Object file, int fields, int numFields) {
    return error("HELD_STATE.COLUMNS", "file", file, "held_column_count", fields, "column_count", numFields);
  }

  /** A query resuming from the table whose columns differ from those the old query's held rows have. */
  public static KplexException heldColumnsChanged(String table, String query, long held, String changed) {
    return error("HELD_STATE.COLUMNS_CHANGED", "table", table, "query", query, "held_records", held,
        "columns", changed);
  }

  public static KplexException heldRead(Object file, Exception e) {
    return error("HELD_STATE.READ", e, "file", file, "cause", e.toString());
  }

  /** Kafka failed in a way kplex does not classify: what it said. */
  public static KplexException kafka(Throwable cause) {
    return error("KAFKA.UNCLASSIFIED", cause, "cause", said(cause));
  }

  /** {@code what}: the resource ({@code null}: unknown), {@code op}: the ACL operation. */
  public static KplexException notAuthorized(String principal, String op, Resource what, String bootstrap,
      Throwable cause) {
    return error(what == null ? "NOT_AUTHORIZED.UNKNOWN_RESOURCE" : "NOT_AUTHORIZED." + what.kind(), cause,
        "principal", principal, "operation", op, "resource", what == null ? null : what.name(),
        "bootstrap", bootstrap, "cause", cause.getMessage());
  }

  /**
   * The broker lists {@code operations} as the principal's operations on {@code topic} (KIP-430),
   * and {@code op} is not among them.
   */
  public static KplexException topicOperationNotListed(String principal, String op, String topic,
      Collection<String> operations, String bootstrap) {
    return error("NOT_AUTHORIZED.TOPIC_NOT_LISTED", "principal", principal, "operation", op, "resource", topic,
        "bootstrap", bootstrap, "operations", operations);
  }

  /**
   * A Kafka resource an ACL is for: its kind (a sub-class of KPLEX_NOT_AUTHORIZED, whose
   * template says it in words) and its name (the parameter {@code resource}; null for the
   * kinds that have none).
   */
  public record Resource(Kind kind, String name) {
    /** The kinds of resource (the sub-classes of KPLEX_NOT_AUTHORIZED but UNKNOWN_RESOURCE). */
    public enum Kind { TOPIC, TOPICS, TOPIC_UNNAMED, TOPIC_OFFSETS, CONSUMER_GROUP, CONSUMER_GROUP_UNNAMED,
      CLUSTER, TRANSACTIONAL_ID, TRANSACTIONAL_ID_PREFIX, TRANSACTIONAL_IDS }

    public static Resource topic(String topic) {
      return new Resource(Kind.TOPIC, topic);
    }

    /** Several topics: one is {@link #topic}. */
    public static Resource topics(Collection<String> topics) {
      if (topics.size() == 1) return topic(topics.iterator().next());
      return new Resource(Kind.TOPICS, String.join(", ", new TreeSet<>(topics).stream().map(t -> "'" + t + "'").toList()));
    }

    /** The offsets of {@code partitions} (topic-partitions). */
    public static Resource offsets(Collection<?> partitions) {
      return new Resource(Kind.TOPIC_OFFSETS, String.valueOf(partitions));
    }

    public static Resource consumerGroup(String group) {
      return new Resource(Kind.CONSUMER_GROUP, group);
    }

    public static Resource cluster() {
      return new Resource(Kind.CLUSTER, null);
    }

    public static Resource transactionalId(String id) {
      return new Resource(Kind.TRANSACTIONAL_ID, id);
    }

    /** The transactional ids that start with {@code prefix} (a PREFIXED ACL). */
    public static Resource transactionalIdPrefix(String prefix) {
      return new Resource(Kind.TRANSACTIONAL_ID_PREFIX, prefix);
    }

    /** The transactional ids of a writer, not known by name. */
    public static Resource transactionalIds() {
      return new Resource(Kind.TRANSACTIONAL_IDS, null);
    }

    /** Whether it is a transactional id, or ids. */
    public boolean transactional() {
      return kind == Kind.TRANSACTIONAL_ID || kind == Kind.TRANSACTIONAL_ID_PREFIX || kind == Kind.TRANSACTIONAL_IDS;
    }

    /** Its name: what its error's {@code resource} parameter is. */
    @Override
    public String toString() {
      return name;
    }
  }

  /** {@code how}: the security protocol (and SASL mechanism); {@code hint}: what to check. */
  public static KplexException notAuthenticated(String bootstrap, String principal, String how, String hint,
      Throwable cause) {
    return error("NOT_AUTHENTICATED.BROKER", cause, "bootstrap", bootstrap, "principal", principal,
        "security", how, "reason", hint, "cause", cause.getMessage());
  }

  /** Reading {@code what} made no progress for {@code stallMs}. */
  public static KplexException readStalled(String what, long stallMs) {
    return error("READ_STALLED.POSITION", "position", what, "stall_ms", stallMs, "stall_s", stallMs / 1000);
  }

  public static KplexException checkpointOfAnotherTopic(String offsets, String topic) {
    return error("CHECKPOINT.ANOTHER_TOPIC", "offsets", offsets, "topic", topic);
  }

  public static KplexException checkpointUnreadable(String offsets, Exception e) {
    return error("CHECKPOINT.UNREADABLE", e, "offsets", offsets);
  }

  /** A table property given twice, in two spellings, with different values. */
  public static KplexException propertyTwice(String key, List<String> values) {
    return error("BAD_OPTION.TWICE", "option", key, "values", values);
  }

  /** A CREATE TABLE with a column list (its first column {@code column}). */
  public static KplexException columnsGiven(String table, String column) {
    return error("UNSUPPORTED.COLUMNS", "table", table, "column", column);
  }

  /** A CREATE TABLE with PARTITIONED BY (its first transform {@code by}). */
  public static KplexException partitionedBy(String table, String by) {
    return error("UNSUPPORTED.PARTITIONED_BY", "table", table, "by", by);
  }

  public static KplexException cannotAlter() {
    return error("UNSUPPORTED.ALTER");
  }

  public static KplexException cannotRename() {
    return error("UNSUPPORTED.RENAME");
  }

  /** CREATE TABLE of {@code table} on {@code topic}, one of Kafka's own ({@code __...}). */
  public static KplexException topicOfKafka(String table, String topic) {
    return error("TOPIC_IN_USE.KAFKA", "table", table, "topic", topic);
  }

  /** CREATE TABLE of {@code table} on {@code topic}, the catalog's topic of table definitions. */
  public static KplexException topicOfDefinitions(String table, String topic) {
    return error("TOPIC_IN_USE.DEFINITIONS", "table", table, "topic", topic);
  }

  /** CREATE TABLE of {@code table} on {@code topic}, kplex's commit log. */
  public static KplexException topicOfCommitLog(String table, String topic) {
    return error("TOPIC_IN_USE.COMMIT_LOG", "table", table, "topic", topic);
  }

  /** CREATE TABLE of {@code table} on {@code topic}, the topic of kplex table {@code other}. */
  public static KplexException topicOfAnotherTable(String table, String topic, String other) {
    return error("TOPIC_IN_USE.TABLE", "table", table, "topic", topic, "other", other);
  }

  /** CREATE TABLE of {@code table} on {@code topic}, which exists and was written ({@code endOffsets} per partition). */
  public static KplexException topicWritten(String table, String topic, Map<Integer, Long> endOffsets) {
    return error("TOPIC_IN_USE.WRITTEN", "table", table, "topic", topic, "end_offsets", endOffsets);
  }

  /**
   * REPLACE of {@code table}: its topic was deleted and created again outside kplex after kplex
   * wrote to it, and holds records ({@code endOffsets}) the drop would keep.
   */
  public static KplexException topicOthersRecords(String table, String topic, Map<Integer, Long> endOffsets) {
    return error("TOPIC_IN_USE.OTHERS_RECORDS", "table", table, "topic", topic, "end_offsets", endOffsets);
  }

  /**
   * DROP or REPLACE of {@code table}: its topic holds records, and the id of the topic kplex
   * wrote to could not be read from {@code commitLog} (so whose they are cannot be told).
   */
  public static KplexException tableTopicUnverified(String table, String topic, String commitLog, Throwable cause) {
    return error("TOPIC_IN_USE.UNVERIFIED", cause, "table", table, "topic", topic, "commit_log", commitLog,
        "cause", said(cause));
  }

  /**
   * CREATE TABLE of {@code table}: {@code topic} was free when checked, and another client created
   * it before this CREATE could; no definition of {@code table} followed within {@code waitMs}.
   */
  public static KplexException topicCreatedMeanwhile(String table, String topic, long waitMs) {
    return error("TOPIC_IN_USE.CREATED_MEANWHILE", "table", table, "topic", topic, "wait_ms", waitMs);
  }

  public static KplexException dropPlainTopic(String table) {
    return error("NOT_A_KPLEX_TABLE.DROP", "topic", table);
  }

  public static KplexException noTableOption() {
    return error("MISSING_OPTION.TABLE", "option", "table");
  }

  public static KplexException noCatalog(String catalog) {
    return error("NO_CATALOG", "catalog", catalog);
  }

  /** The query's starting offsets cannot be kept in the checkpoint's file {@code path}. */
  public static KplexException startingOffsetsWrite(Object path, Exception e) {
    return error("CHECKPOINT.WRITE_STARTING_OFFSETS", e, "file", path, "cause", e.toString());
  }

  // A kplex SQL function called with arguments it does not take (bound as Spark binds a function).

  /** How many arguments a function takes: each a sub-class of {@code FUNCTION_ARGUMENT}. */
  public enum Arity {
    COUNT_ONE, COUNT_CONFLUENT_PAYLOAD, COUNT_CONFLUENT_SCHEMA_ID, COUNT_JSON
  }

  /** {@code function} takes the arguments {@code arity} says, not {@code count}. */
  public static KplexException functionArgumentCount(Arity arity, String function, int count) {
    return error("FUNCTION_ARGUMENT." + arity.name(), "function", function, "count", count);
  }

  /** A function's argument, by its role: each a sub-class of {@code FUNCTION_ARGUMENT}. */
  public enum Argument {
    TYPE_CONFLUENT_FORMAT, TYPE_CONFLUENT_VALUE, TYPE_JSON_DOCUMENT, TYPE_JSON_POINTER
  }

  /** {@code function}'s {@code argument}, the column {@code column}, has a type it does not take. */
  public static KplexException functionArgumentType(Argument argument, String function, String column,
      String type) {
    return error("FUNCTION_ARGUMENT." + argument.name(), "function", function, "column", column,
        "type", type);
  }

  public static KplexException vpartitionArguments() {
    return error("FUNCTION_ARGUMENT.VPARTITION");
  }

  public static KplexException writeVPartitionArguments() {
    return error("FUNCTION_ARGUMENT.WRITE_VPARTITION");
  }

  /**
   * {@code e} as Spark's {@code UnboundFunction.bind} reports a function it cannot bind: an
   * {@link UnsupportedOperationException} with kplex's message (Spark quotes it in its
   * analysis error, so the Python package still raises it by its condition).
   */
  public static UnsupportedOperationException unbindable(KplexException e) {
    UnsupportedOperationException out = new UnsupportedOperationException(e.getMessage(), e);
    return out;
  }

  /** A value that kplex_confluent_payload / kplex_confluent_schema_id cannot unframe: {@code why}. */
  public static KplexException notConfluentFramed(int length, String firstBytesHex, String why) {
    return error("NOT_CONFLUENT_FRAMED.REASON", "length", length, "first_bytes", firstBytesHex, "reason", why);
  }

  /**
   * A value not in the Confluent wire format, {@code how} (one of {@code INDEX_COUNT},
   * {@code TOO_SHORT}, {@code MAGIC_BYTE}, {@code INDEXES_PAST_END}, {@code INDEX_TOO_LONG}: the
   * sub-classes of KPLEX_NOT_CONFLUENT_FRAMED) with what it found ({@code found}: the count,
   * the header's size or the magic byte; ignored by the others).
   */
  public static KplexException notConfluentFramed(int length, String firstBytesHex, Framing how, long found) {
    return switch (how) {
      case INDEX_COUNT -> error("NOT_CONFLUENT_FRAMED.INDEX_COUNT", "length", length, "first_bytes", firstBytesHex,
          "count", found);
      case TOO_SHORT -> error("NOT_CONFLUENT_FRAMED.TOO_SHORT", "length", length, "first_bytes", firstBytesHex,
          "header_bytes", found);
      case MAGIC_BYTE -> error("NOT_CONFLUENT_FRAMED.MAGIC_BYTE", "length", length, "first_bytes", firstBytesHex,
          "magic_byte", found);
      case INDEXES_PAST_END -> error("NOT_CONFLUENT_FRAMED.INDEXES_PAST_END", "length", length,
          "first_bytes", firstBytesHex);
      case INDEX_TOO_LONG -> error("NOT_CONFLUENT_FRAMED.INDEX_TOO_LONG", "length", length,
          "first_bytes", firstBytesHex);
    };
  }

  /** How a value is not Confluent-framed (the sub-classes of KPLEX_NOT_CONFLUENT_FRAMED). */
  public enum Framing { INDEX_COUNT, TOO_SHORT, MAGIC_BYTE, INDEXES_PAST_END, INDEX_TOO_LONG }
}
