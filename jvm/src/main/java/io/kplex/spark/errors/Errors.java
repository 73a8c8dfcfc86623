package io.kplex.spark.errors;

import io.kplex.spark.spec.KplexOptions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every error text of kplex, in one place: what is wrong and what to do. Each error also
 * names its culprits as message parameters, with one name per kind of culprit across the
 * file (and the Python side's {@code kplex_error}): {@code table}, {@code topic},
 * {@code partition}, {@code offset}, {@code column}, {@code option} (a table property, write
 * or read option, or setting), {@code value}, {@code expected}, {@code key} (a record's key),
 * {@code order_value}, {@code virtual_partition}, {@code query}, {@code epoch}, {@code file},
 * {@code bootstrap}, {@code principal}, {@code operation}, {@code resource}, {@code reason}
 * (what is wrong, in words)... A failure's cause is its cause, not a parameter.
 */
public final class Errors {
  private Errors() {}

  /** Message parameters: name, value, name, value... in that order; a null value is left out. */
  private static Map<String, String> parameters(Object... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("kplex: message parameters come in pairs of name and value");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      Object value = namesAndValues[i + 1];
      if (value != null) out.put((String) namesAndValues[i], String.valueOf(value));
    }
    return out;
  }

  public static KplexException nullKey(String column, long orderValue) {
    return new KplexException("NULL_KEY", parameters("column", column, "order_value", orderValue),
        "NULL key in column `" + column + "` (row with order value "
        + orderValue + "). Filter such rows out, or set '" + KplexOptions.NULL_KEY + "' = 'drop'.");
  }

  /** A read-time table's key expression gave NULL on a source record (names the source). */
  public static KplexException nullReadTimeKey(String table, String expression, String topic, int partition,
      long offset) {
    return nullReadTime("NULL_KEY", "key", KplexOptions.NULL_KEY, table, expression, topic, partition, offset);
  }

  /** A read-time table's order expression gave NULL on a source record (names the source). */
  public static KplexException nullReadTimeOrder(String table, String expression, String topic, int partition,
      long offset) {
    return nullReadTime("NULL_ORDER", "order value", KplexOptions.NULL_ORDER, table, expression, topic, partition,
        offset);
  }

  private static KplexException nullReadTime(String code, String what, String policy, String table,
      String expression, String topic, int partition, long offset) {
    return new KplexException(code, parameters("table", table, "expression", expression, "topic", topic,
        "partition", partition, "offset", offset),
        "NULL " + what + " from `" + expression + "` of table " + table
        + " for the record of source topic '" + topic + "' at partition " + partition + " offset " + offset
        + ": the " + what + " must exist in every source's records. Fix the expression for that source, or set '"
        + policy + "' = 'drop'.");
  }

  public static KplexException nullOrder(String column, String keyText) {
    return new KplexException("NULL_ORDER", parameters("column", column, "key", keyText),
        "NULL order value in column `" + column + "` for row key "
        + keyText + ". Filter such rows out, or set '" + KplexOptions.NULL_ORDER
        + "' to 'drop' or 'first'.");
  }

  public static KplexException badJsonPointer(String pointer, String problem) {
    return new KplexException("JSON_POINTER", parameters("pointer", pointer, "reason", problem),
        "JSON pointer '" + pointer + "' is malformed: " + problem + ".");
  }

  public static KplexException unsupportedOrderType(String column, String type) {
    return new KplexException("ORDER_TYPE", parameters("column", column, "type", type),
        "the order column `" + column + "` has type " + type
        + "; kplex orders by TIMESTAMP, TIMESTAMP_NTZ, DATE or an integral type (TINYINT..BIGINT)."
        + " CAST it, e.g. kplex_order(CAST(x AS BIGINT)).");
  }

  public static KplexException missingColumn(String role, String how, List<String> columns) {
    return new KplexException("MISSING_COLUMN", parameters("role", role, "expected", how, "columns", columns),
        "the data written has no " + role + " column: " + how + ". Columns present: " + columns + ".");
  }

  public static KplexException ambiguousColumn(String role, List<String> candidates) {
    return new KplexException("AMBIGUOUS_COLUMN", parameters("role", role, "columns", candidates),
        "more than one " + role + " column: " + candidates + ". Select exactly one.");
  }

  public static KplexException unexpectedColumns(List<String> extra) {
    return new KplexException("UNEXPECTED_COLUMN", parameters("columns", extra),
        "columns " + extra + " are not written by kplex:"
        + " select the key (kplex_key), the order (kplex_order), value and optionally headers.");
  }

  public static KplexException badColumnType(String role, String column, String type, String expected) {
    return new KplexException("COLUMN_TYPE",
        parameters("role", role, "column", column, "type", type, "expected", expected),
        "the " + role + " column `" + column + "` has type " + type + "; expected " + expected + ".");
  }

  public static KplexException badOption(String key, String value, String expected) {
    return new KplexException("BAD_OPTION", parameters("option", key, "value", value, "expected", expected),
        "option '" + key + "' = '" + value + "' is invalid: " + expected + ".");
  }

  public static KplexException missingOption(String key, String table, String expected) {
    return new KplexException("MISSING_OPTION", parameters("option", key, "table", table, "expected", expected),
        "table " + table + " needs '" + key + "' ("
        + expected + "), e.g. CREATE TABLE kplex." + table + " TBLPROPERTIES ('"
        + KplexOptions.VIRTUAL_PARTITIONS + "' = '9', '" + KplexOptions.PHYSICAL_PARTITIONS
        + "' = '3').");
  }

  public static KplexException unknownProperty(String key, String suggestion) {
    return new KplexException("UNKNOWN_PROPERTY", parameters("option", key, "suggestion", suggestion),
        "unknown kplex table property '" + key + "'"
        + (suggestion == null ? "" : "; did you mean '" + suggestion + "'?")
        + " Known properties: " + KplexOptions.TABLE_PROPERTIES + ".");
  }

  /**
   * A Kafka client setting given as a table property. Table definitions are stored in a
   * topic any consumer can read, so a credential there would be public: refused, the value
   * never repeated.
   */
  public static KplexException kafkaTableProperty(String key) {
    return new KplexException("BAD_OPTION", parameters("option", key),
        "table property '" + key + "' is a Kafka client setting: kplex"
        + " does not store those with a table, whose definition any Kafka consumer can read. Set it on"
        + " the catalog (spark.sql.catalog.kplex." + key + "), or as a write or read option"
        + " (.option(\"" + key + "\", ...)).");
  }

  public static KplexException unknownTopic(String topic) {
    return new KplexException("UNKNOWN_TOPIC", parameters("topic", topic),
        "topic '" + topic + "' does not exist on the broker."
        + " Create it, or CREATE TABLE kplex." + topic + " TBLPROPERTIES (...) to make a kplex table.");
  }

  public static KplexException notAKplexTable(String topic) {
    return new KplexException("NOT_A_KPLEX_TABLE", parameters("topic", topic),
        "topic '" + topic + "' is a plain Kafka topic,"
        + " not a kplex table, so kplex does not know its virtual partitions. Write into a table made"
        + " with CREATE TABLE kplex.<name> TBLPROPERTIES ('" + KplexOptions.VIRTUAL_PARTITIONS
        + "' = 'V', '" + KplexOptions.PHYSICAL_PARTITIONS + "' = 'P').");
  }

  public static KplexException partitionMismatch(String topic, int actual, int expected) {
    return new KplexException("PARTITION_MISMATCH",
        parameters("topic", topic, "partition_count", actual, "expected", expected),
        "topic '" + topic + "' has " + actual
        + " partitions but its kplex table says " + KplexOptions.PHYSICAL_PARTITIONS + " = "
        + expected + ". Someone changed the topic; writing would break key affinity."
        + " Recreate the table, or restore the partition count.");
  }

  public static KplexException unreachable(String bootstrap, Throwable cause) {
    return new KplexException("UNREACHABLE", parameters("bootstrap", bootstrap),
        "no Kafka broker answered at '" + bootstrap
        + "' (" + cause.getClass().getSimpleName() + ": " + cause.getMessage()
        + "). Check spark.sql.catalog.kplex.kafka.bootstrap.servers or the 'kafka.bootstrap.servers'"
        + " option.", cause);
  }

  public static KplexException noBootstrap() {
    return new KplexException("NO_BOOTSTRAP", parameters("option", "kafka.bootstrap.servers"), "no Kafka address: set"
        + " spark.sql.catalog.kplex.kafka.bootstrap.servers (configure_spark_with_kplex does it)"
        + " or the 'kafka.bootstrap.servers' option.");
  }

  public static KplexException namespace(String ident) {
    return new KplexException("NAMESPACE", parameters("table", ident),
        "kplex tables have no namespace: use kplex.<topic>, not " + ident + ".");
  }

  /**
   * A task's transaction could not be committed. {@code code} and {@code meaning} say which
   * kind of failure it was (fenced, expired, timed out, not authorized: CommitFailure).
   */
  public static KplexException commitFailed(String code, String meaning, String txn, String table,
      int attempts, Throwable cause) {
    return new KplexException(code,
        parameters("table", table, "transaction", txn, "attempts", attempts, "reason", meaning),
        "committing transaction " + txn + " of table " + table + " failed"
        + (attempts > 1 ? " after " + attempts + " attempts" : "") + ": " + meaning + " ("
        + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ").", cause);
  }

  public static KplexException commitTooLate(String table, long openMs, long timeoutMs, long marginMs) {
    return new KplexException("COMMIT_EXPIRED",
        parameters("table", table, "open_ms", openMs, "timeout_ms", timeoutMs, "margin_ms", marginMs),
        "the write to table " + table + " ran for " + openMs
        + " ms, too close to kafka.transaction.timeout.ms (" + timeoutMs + " ms) to commit its transactions"
        + " before Kafka aborts the oldest (kplex commits only with " + marginMs + " ms to spare): nothing"
        + " was committed. Raise kafka.transaction.timeout.ms (and the broker's transaction.max.timeout.ms)"
        + " above the longest write (for a streaming query: the trigger interval plus a micro-batch's"
        + " processing), or write less at once (maxOffsetsPerTrigger).");
  }

  /** {@link #commitTooLate} of a streaming micro-batch, whose rerun after a restart gets {@code rerunMs}. */
  public static KplexException streamCommitTooLate(KplexException tooLate, long rerunMs) {
    String said = tooLate.getMessage().substring(("[KPLEX_" + tooLate.code() + "] ").length());
    Map<String, String> named = new LinkedHashMap<>(tooLate.getMessageParameters());
    named.putAll(parameters("rerun_ms", rerunMs));
    return new KplexException(tooLate.code(), named, said + " Restarted, the query reruns this micro-batch (the same"
        + " offsets) with kafka.transaction.timeout.ms = " + rerunMs + " ms.", tooLate);
  }

  /** A task's transaction was fenced while it wrote: another writer took the table over. */
  public static KplexException taskFenced(String table, String transactionalId, Throwable cause) {
    return new KplexException("TASK_FENCED", parameters("table", table, "transaction", transactionalId),
        "the transaction " + transactionalId + " of this write into table "
        + table + " was fenced while its task wrote (" + cause.getMessage() + "): another writer took the table"
        + " over (this write stood still for longer than " + io.kplex.spark.spec.KplexOptions.WRITER_CLAIM_TIMEOUT_MS
        + ") or `kplex recover` ran. None of this write's rows is committed: run it again (a streaming query"
        + " restarted from its checkpoint does).", cause);
  }

  public static KplexException sendFailed(String topic, Throwable cause) {
    return new KplexException("SEND_FAILED", parameters("topic", topic), "writing to topic '" + topic + "' failed: "
        + cause.getMessage(), cause);
  }

  // Reading, and read-time (virtual) tables.

  public static KplexException lateRecord(String table, String topic, int partition, long offset, long order,
      long partitionMax, long maxDelayMs) {
    return new KplexException("LATE_RECORD", parameters("table", table, "topic", topic, "partition", partition,
        "offset", offset, "order_value", order, "max_order_value", partitionMax, "max_delay_ms", maxDelayMs),
        "table " + table + ": the record at " + topic + "-"
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

  public static KplexException virtualReadOnly(String table, String source) {
    return new KplexException("READ_ONLY", parameters("table", table, "source", source),
        "table " + table + " is a read-time view of topic '"
        + source + "' (" + KplexOptions.SOURCE + "): it has no topic of its own to write to."
        + " INSERT into the source topic, or into a table made with CREATE TABLE kplex.<name>"
        + " TBLPROPERTIES ('" + KplexOptions.VIRTUAL_PARTITIONS + "' = 'V', '"
        + KplexOptions.PHYSICAL_PARTITIONS + "' = 'P').");
  }

  public static KplexException badExpression(String property, String text, String table, String problem) {
    return new KplexException("BAD_EXPRESSION",
        parameters("table", table, "option", property, "expression", text, "reason", problem),
        "table " + table + ": '" + property + "' = '" + text
        + "' is not a usable Spark SQL expression over the source columns (key, value, topic,"
        + " partition, offset, timestamp, headers): " + problem);
  }

  public static KplexException virtualNeeds(String table, String problem) {
    return new KplexException("BAD_VIRTUAL_TABLE", parameters("table", table, "reason", problem),
        "read-time table " + table + " (with '" + KplexOptions.SOURCE + "'): " + problem);
  }

  public static KplexException fixedByDefinition(String option, String table, boolean virtual) {
    return new KplexException("BAD_OPTION", parameters("option", option, "table", table, "read_time", virtual),
        "option '" + option + "' cannot be set on a read of " + table
        + (virtual ? ": it is part of the table's definition. A read may set "
            + KplexOptions.READ_OVERRIDES + "."
            : ": read-time settings apply to read-time tables only. To read a topic in event-time"
            + " order, CREATE TABLE kplex.<name> TBLPROPERTIES ('" + KplexOptions.SOURCE + "' = '<topic>', '"
            + KplexOptions.VIRTUAL_PARTITIONS + "' = '1', '" + KplexOptions.ORDER + "' = '<expression>')."));
  }

  public static KplexException badBounds(String problem) {
    return new KplexException("BAD_OPTION", parameters("reason", problem), "read bounds: " + problem + " Use '"
        + KplexOptions.STARTING_OFFSETS + "'/'" + KplexOptions.ENDING_OFFSETS
        + "' ('earliest', 'latest' or {\"topic\":{\"0\":23}}) or '" + KplexOptions.STARTING_TIMESTAMP
        + "'/'" + KplexOptions.ENDING_TIMESTAMP + "' (epoch milliseconds).");
  }

  public static KplexException lateTopicFailed(String topic, Throwable cause) {
    return new KplexException("SEND_FAILED", parameters("topic", topic), "sending a late record to side topic '" + topic
        + "' failed: " + cause.getMessage(), cause);
  }

  public static KplexException dataLoss(String what, String option) {
    return new KplexException("DATA_LOSS", parameters("reason", what, "option", option),
        what + ". The query cannot read them any more; restart it"
        + " from a new checkpoint, or set the read option '" + option + "' = 'false' to skip them.");
  }

  public static KplexException virtualStream(String table) {
    return new KplexException("STREAM", parameters("table", table),
        "table " + table + " is a read-time table; a streaming query reads"
        + " its source topic (readStream.table(\"kplex.<source>\")) and writes a kplex table, which keeps"
        + " every virtual partition in order across micro-batches.");
  }

  /**
   * A streaming write's late record. {@code behind}: more than max_delay_ms behind the
   * largest order value before it on its source partition ({@code bound} = that value minus
   * the delay); else below what is already written to its virtual partition ({@code bound}).
   * {@code at}: its source position, or null.
   */
  public static KplexException lateStreamRecord(String table, String key, long order, int vp, boolean behind,
      long bound, long maxDelayMs, String at) {
    String record = "a record for table " + table + " with key " + key + " and order value " + order
        + (at == null ? "" : " (" + at + ")") + " is late: ";
    String why = behind
        ? "it is more than " + KplexOptions.MAX_DELAY_MS + " = " + maxDelayMs + " behind the largest order value"
            + " before it on its source partition (it had to be at least " + bound + "); lateness is judged in"
            + " the order of the partition's log, and a producer without idempotence (librdkafka's default)"
            + " can store a partition out of the order it sent it when it retries (docs/streaming.md)"
        : "virtual partition " + vp + " already holds records up to order value " + bound + " (written earlier:"
            + " by another INSERT or streaming query, or by a stream's flush at the end of its input or after an"
            + " idle period, or by the others while this record's source partition was idle: see idleTimeoutMs), and a"
            + " virtual partition never goes back";
    return new KplexException("LATE_RECORD", parameters("table", table, "key", key, "order_value", order,
        "virtual_partition", vp, "behind", behind, "order_bound", bound, "max_delay_ms", maxDelayMs,
        "source_position", at),
        record + why + ". Raise '" + KplexOptions.MAX_DELAY_MS + "', or set '"
        + KplexOptions.LATE_POLICY + "' to 'drop' or 'side_topic' (with '" + KplexOptions.LATE_TOPIC + "').");
  }

  public static KplexException streamingPlacement(int vp, int task, int tasks) {
    return new KplexException("STREAM_PLACEMENT",
        parameters("virtual_partition", vp, "task", task, "task_count", tasks),
        "virtual partition " + vp + " reached task " + task + " of "
        + tasks + ", not the task Spark's hash partitioning gives it: this Spark distributes a streaming"
        + " write differently from what kplex expects, and order across micro-batches cannot be kept.");
  }

  /**
   * A streaming writer got a row from outside its micro-batch's range of a source partition,
   * or a source position out of offset order: the event-time rule would judge with a high
   * from records the batch did not read.
   */
  public static KplexException rowOutsideEpoch(String table, long epoch, String topic, int partition, long offset,
      String range, long order) {
    return new KplexException("SOURCE_RANGE", parameters("table", table, "epoch", epoch, "topic", topic,
        "partition", partition, "offset", offset, "offset_range", range, "order_value", order),
        "micro-batch " + epoch + " of the stream into table " + table
        + " got a row from offset " + offset + " of source partition " + (topic == null ? "" : topic + "-")
        + partition + " (order value " + order + "), but the batch reads offsets " + range + " there. Its order"
        + " value would become the partition's high and move the watermark past what was read; the batch"
        + " fails instead of writing. This is a bug in kplex or in what Spark handed it: report it with this"
        + " message.");
  }

  /** A stream at its cap on held records whose watermark no record can move (strict waiting). */
  public static KplexException heldLimit(String table, long held, long cap, String topic,
      java.util.Collection<Integer> holding) {
    return new KplexException("HELD_LIMIT", parameters("table", table, "held_records", held,
        "max_held_records", cap, "topic", topic, "partitions", holding),
        "the stream into table " + table + " holds " + held
        + " records back, at its cap " + KplexOptions.MAX_HELD_RECORDS + " = " + cap + ", and its watermark is"
        + " held by partition(s) " + holding + " of topic '" + topic + "', which have no record to read, with"
        + " idleTimeoutMs = -1 (strict waiting): nothing can release what is held. Nothing of this micro-batch"
        + " was read or written. Produce to those partitions, let a quiet partition stop holding the watermark"
        + " (idleTimeoutMs >= 0, docs/streaming.md), or raise " + KplexOptions.MAX_HELD_RECORDS + ".");
  }

  public static KplexException sourceOutOfOrder(int partition, long offset, long before) {
    return new KplexException("SOURCE_RANGE",
        parameters("partition", partition, "offset", offset, "previous_offset", before),
        "kplex_high_before got offset " + offset + " of source partition "
        + partition + " after offset " + before + " of it in the same task: the largest order value before a"
        + " record is computed over one range per partition, read in offset order. This is a bug in kplex or"
        + " in what Spark handed it: report it with this message.");
  }

  /** A test hook asked for in a JVM the test harness did not arm. */
  public static KplexException testHookNotArmed(String key, String env, String property) {
    return new KplexException("TEST_HOOK",
        parameters("option", key, "environment_variable", env, "system_property", property),
        "'" + key + "' (the write option, or the session setting 'spark." + key
        + "') is a fault hook of kplex's own test suite, and this JVM does not arm them: they are armed only by"
        + " the environment variable " + env + "=1 or the system property -D" + property + "=true of the JVM that"
        + " plans the write, never from SQL. Nothing was written. Remove the option, or RESET spark." + key + ".");
  }

  public static KplexException noCheckpoint(String table) {
    return new KplexException("MISSING_OPTION", parameters("table", table, "option", "checkpointLocation"),
        "the streaming write into " + table + " needs a checkpoint:"
        + " .option(\"checkpointLocation\", \"<dir>\") (kplex keeps the records it holds back there).");
  }

  /**
   * A writer found, once its commit was recorded, that its claim on the table had been
   * taken over (it stood still past kplex.writer_claim_timeout_ms). {@code handedOver}: the
   * commit was recorded before the take-over, so the taker finishes it.
   */
  public static KplexException claimTaken(String table, String by, boolean handedOver) {
    return new KplexException("CLAIM_TAKEN", parameters("table", table, "taken_by", by, "handed_over", handedOver),
        "this write's claim on table " + table + " was taken over by "
        + by + " while the write stood still for longer than " + io.kplex.spark.spec.KplexOptions.WRITER_CLAIM_TIMEOUT_MS
        + " (a long GC pause, a stopped process). "
        + (handedOver
            ? "Its commit had been recorded before that, so the taker commits it: its rows become visible,"
                + " exactly once. Do not run it again (a streaming query restarted from its checkpoint skips it)."
            : "Nothing of it was committed (the taker aborts its transactions): run it again (a streaming query"
                + " restarted from its checkpoint does).")
        + " Raise " + io.kplex.spark.spec.KplexOptions.WRITER_CLAIM_TIMEOUT_MS + " above the longest pause of a driver.");
  }

  /** A commit of which Kafka aborted some transactions, settled ({@code described}: what is missing, what to do). */
  public static KplexException commitCutShort(String table, String described) {
    return new KplexException("COMMIT_CUT_SHORT", parameters("table", table, "reason", described),
        described + " Table " + table + " stays writable.");
  }

  /** A rerun epoch does not hold the virtual partitions per task that its cut-short first run did. */
  public static KplexException partialRerunDiffers(String table, String query, long epoch,
      java.util.Set<Integer> lostVps, boolean taskLost, int partition, int vp) {
    java.util.Set<Integer> lost = new java.util.TreeSet<>(lostVps);
    return new KplexException("COMMIT_CUT_SHORT", parameters("table", table, "query", query, "epoch", epoch,
        "lost_virtual_partitions", lost, "task_lost", taskLost, "task", partition, "virtual_partition", vp),
        "epoch " + epoch + " of query " + query
        + " into table " + table + " runs again to write the virtual partitions Kafka aborted ("
        + lost + "), but its task " + partition + " now holds virtual partition "
        + vp + (taskLost ? ", which the first run committed" : ", which it lost")
        + ": the rerun is partitioned differently (spark.sql.shuffle.partitions or the query changed), so"
        + " nothing was committed. Restart the query unchanged from its checkpoint.");
  }

  /** The control plane cannot be spread now: {@code why}, for {@code table}. */
  public static KplexException controlPlaneBusy(String table, String why) {
    return new KplexException("CONTROL_PLANE_BUSY", parameters("table", table, "why", why),
        "the control plane (_kplex_commits) cannot be spread by table now: table "
        + table + ": " + why + ". Nothing was changed.");
  }

  public static KplexException tableBusy(String table, String query) {
    return new KplexException("TABLE_BUSY", parameters("table", table, "query", query),
        "table " + table + " is being written by another query (Spark query id "
        + query + "); kplex lets one write at a time into a table. Nothing was written: run this write"
        + " again once that one has finished.");
  }

  /** {@code startingOffsets = 'table'}: no stream from {@code topic} committed to {@code table} (null: to any). */
  public static KplexException nothingToResume(String topic, String table) {
    return new KplexException("RESUME_FROM_TABLE", parameters("topic", topic, "table", table),
        "startingOffsets = 'table': " + (table == null ? "no kplex table" : "table " + table)
        + " has an epoch committed by a stream from topic '" + topic + "' (only streams record where they"
        + " stopped), so there is nothing to resume from. Start with 'earliest', 'latest' or offsets"
        + (table == null ? "" : ", or name another table with the read option 'startingTable'") + ".");
  }

  /** {@code startingOffsets = 'table'} without {@code startingTable}, and several tables streamed from the topic. */
  public static KplexException whichTableToResume(String topic, java.util.Collection<String> tables) {
    return new KplexException("RESUME_FROM_TABLE", parameters("topic", topic, "tables", tables),
        "startingOffsets = 'table': streams from topic '" + topic + "' committed to tables " + tables
        + "; name the one this query writes with the read option 'startingTable'.");
  }

  /** {@code startingOffsets = 'table'} where it has no meaning (a batch read, or with a timestamp). */
  public static KplexException resumeNotHere(String why) {
    return new KplexException("RESUME_FROM_TABLE", parameters("option", KplexOptions.STARTING_OFFSETS, "reason", why),
        "startingOffsets = 'table' " + why + ".");
  }

  /** A query started to resume from the table, whose last stream has moved on since (or never got there). */
  public static KplexException resumeStale(String table, String topic, java.util.Map<Integer, Long> ends,
      java.util.Map<Integer, Long> starts, String by) {
    return new KplexException("RESUME_FROM_TABLE",
        parameters("table", table, "topic", topic, "offsets", ends, "starting_offsets", starts, "query", by),
        "this query was started to resume table " + table + " from topic '" + topic + "' at offsets "
        + new java.util.TreeMap<>(starts) + ", but the table's last stream from that topic now stops at "
        + new java.util.TreeMap<>(ends) + " (query " + by + " wrote since this one started): resuming here would"
        + " write records twice or lose what it held. Nothing was written. Start it again with a new checkpoint"
        + " (its starting offsets are kept in the checkpoint).");
  }

  /** A query resuming from the table whose predecessor's held files are gone (its checkpoint deleted). */
  public static KplexException resumeHeldGone(String table, String from, long held, String file) {
    return new KplexException("RESUME_FROM_TABLE",
        parameters("table", table, "query", from, "held_records", held, "file", file),
        "query " + from + " held " + held + " records of table " + table + " back when it stopped, in files that"
        + " are gone (" + file + "): its checkpoint was deleted or moved, and they lived in it. Nothing was"
        + " written; resuming without them would lose those records. Restore that checkpoint, or start from"
        + " offsets of your choice with the records lost. So that held records outlive a checkpoint, set"
        + " kplex.held_location to a folder the cluster shares (docs/streaming.md).");
  }

  /** A second query resuming from the epoch another one already resumed from. */
  public static KplexException resumeTaken(String table, String from, String by) {
    return new KplexException("RESUME_FROM_TABLE", parameters("table", table, "query", from, "taken_by", by),
        "the last epoch of query " + from + " on table " + table + " was already resumed from by query " + by
        + ", which took over what it held: resuming from it again would write those records twice. Nothing was"
        + " written. Resume from the table again (a new checkpoint with startingOffsets = 'table') to start where"
        + " query " + by + " stopped.");
  }

  /** A query restarted, holding records, after another query's stream from its source wrote the table. */
  public static KplexException heldOvertaken(String table, String query, long held, String by, String topic) {
    return new KplexException("QUERY_SUPERSEDED",
        parameters("table", table, "query", query, "held_records", held, "taken_by", by, "topic", topic),
        "query " + query + " must not write to table " + table + " any more: after it stopped holding " + held
        + " records back, query " + by + " wrote the table from topic '" + topic + "' (it read those records too),"
        + " so releasing them now would write records twice or take virtual partitions back. Nothing was written."
        + " Records query " + by + " read from the topic it wrote (or skipped as written); to go on from where the"
        + " table stands, start the changed query on a new checkpoint with startingOffsets = 'table'.");
  }

  /** A query restarted after another one resumed from its last epoch. */
  public static KplexException querySuperseded(String table, String query, String by) {
    return new KplexException("QUERY_SUPERSEDED", parameters("table", table, "query", query, "taken_by", by),
        "query " + query + " must not write to table " + table + " any more: query " + by + " resumed from its"
        + " last epoch and took over the records it held, so this query would write them a second time. Nothing"
        + " was written. Resume from the table instead (a new checkpoint with startingOffsets = 'table').");
  }

  // Moved here so that every error text is in the catalogue.

  public static KplexException definitionTooNew(String format, int version, int understood) {
    return new KplexException("DEFINITION_FORMAT",
        parameters("format", format, "version", version, "supported_version", understood),
        "table definition of format '" + format + "' version " + version
        + " is not understood by this kplex (format version " + understood + "): upgrade kplex.");
  }

  public static KplexException definitionUnreadable(Exception e) {
    return new KplexException("DEFINITION_FORMAT", "unreadable table definition: " + e.getMessage(), e);
  }

  /** Committing failed with something kplex does not classify. */
  public static KplexException commitFailed(Throwable cause) {
    return new KplexException("COMMIT_FAILED", cause.toString(), cause);
  }

  public static KplexException kafkaClientsInternals(String version, Exception e) {
    return new KplexException("KAFKA_CLIENTS_INTERNALS", parameters("kafka_clients_version", version),
        "this kafka-clients (" + version + ") lacks the internals"
        + " that exactly-once commits need (" + e + "). kplex ships and is tested with the version in"
        + " gradle.properties; use its bundled jars, or kplex.delivery = 'at_least_once'.", e);
  }

  /** A record of kplex's metadata topic {@code topic} that cannot be read ({@code what}: which kind). */
  public static KplexException unreadableMetadata(String what, String topic, Exception e) {
    return new KplexException("METADATA", parameters("record_kind", what, "topic", topic),
        "unreadable " + what + " in " + topic + ": " + e.getMessage(), e);
  }

  public static KplexException metadataReadTimedOut(String topic) {
    return new KplexException("METADATA", parameters("topic", topic), "timed out reading topic '" + topic + "'.");
  }

  public static KplexException heldWrite(Object file, Exception e) {
    return new KplexException("HELD_STATE", parameters("file", file),
        "cannot write the held-back records to " + file + ": " + e, e);
  }

  public static KplexException heldColumns(Object file, int fields, int numFields) {
    return new KplexException("HELD_STATE",
        parameters("file", file, "held_column_count", fields, "column_count", numFields),
        "the held-back records in " + file + " have " + fields
        + " columns, this query writes " + numFields + ": the query changed its columns. Release what the old"
        + " query holds first (kplex stream stop, or a Trigger.AvailableNow run with releaseAtEnd), then start the"
        + " changed query (docs/streaming.md, Changing a query).");
  }

  /** A query resuming from the table whose columns differ from those the old query's held rows have. */
  public static KplexException heldColumnsChanged(String table, String query, long held, String changed) {
    return new KplexException("HELD_STATE",
        parameters("table", table, "query", query, "held_records", held, "columns", changed),
        "query " + query + " held " + held + " records of table " + table + " back as rows of its columns, and"
        + " this query's columns differ: " + changed + ". Held records are written as the old query projected"
        + " them, so the columns must match in number and type, position by position (names may change)."
        + " Nothing was written. Release what query " + query + " holds first (kplex stream stop on its checkpoint,"
        + " or a Trigger.AvailableNow run of it with releaseAtEnd), then resume from the table with the changed"
        + " query.");
  }

  public static KplexException heldRead(Object file, Exception e) {
    return new KplexException("HELD_STATE", parameters("file", file), "cannot read the held-back records of " + file
        + " (the query's checkpoint): " + e, e);
  }

  /** Kafka failed in a way kplex does not classify. */
  public static KplexException kafka(String what, Throwable cause) {
    return new KplexException("KAFKA", parameters("reason", what), what, cause);
  }

  /** {@code what}: the resource ({@code null}: unknown), {@code op}: the ACL operation. */
  public static KplexException notAuthorized(String principal, String op, String what, String bootstrap,
      Throwable cause) {
    return new KplexException("NOT_AUTHORIZED",
        parameters("principal", principal, "operation", op, "resource", what, "bootstrap", bootstrap),
        "principal " + principal + " is not allowed to "
        + op + " " + (what == null ? "a resource kplex needs" : what) + " on " + bootstrap
        + ": grant it an ACL for " + op + " on " + (what == null ? "it" : what)
        + " (docs/secured-kafka.md lists every ACL kplex needs). Kafka said: "
        + cause.getMessage(), cause);
  }

  /** {@code how}: the security protocol (and SASL mechanism); {@code hint}: what to check. */
  public static KplexException notAuthenticated(String bootstrap, String principal, String how, String hint,
      Throwable cause) {
    return new KplexException("NOT_AUTHENTICATED",
        parameters("bootstrap", bootstrap, "principal", principal, "security", how, "reason", hint),
        "the broker at " + bootstrap + " did not authenticate principal "
        + principal + " (" + how + "): " + hint + ". Kafka said: " + cause.getMessage(), cause);
  }

  /** Reading {@code what} made no progress for {@code stallMs}. */
  public static KplexException readStalled(String what, long stallMs) {
    return new KplexException("READ_STALLED", parameters("position", what, "stall_ms", stallMs),
        "no progress reading " + what + " for " + stallMs / 1000 + " s.");
  }

  public static KplexException checkpointOfAnotherTopic(String offsets, String topic) {
    return new KplexException("CHECKPOINT", parameters("offsets", offsets, "topic", topic),
        "the checkpoint's offsets " + offsets + " are not of topic '"
        + topic + "': this checkpoint belongs to a query that read another topic.");
  }

  public static KplexException checkpointUnreadable(String offsets, Exception e) {
    return new KplexException("CHECKPOINT", parameters("offsets", offsets),
        "unreadable offsets in the checkpoint: " + offsets, e);
  }

  public static KplexException cannotAlter() {
    return new KplexException("UNSUPPORTED", "kplex tables cannot be altered: V and P are fixed"
        + " once records are placed. Create a new table and INSERT into it.");
  }

  public static KplexException cannotRename() {
    return new KplexException("UNSUPPORTED", "Kafka topics cannot be renamed.");
  }

  public static KplexException dropPlainTopic(String table) {
    return new KplexException("NOT_A_KPLEX_TABLE", parameters("topic", table), "'" + table + "' is a plain Kafka topic;"
        + " kplex only drops tables it created. Delete the topic with Kafka's tools.");
  }

  public static KplexException noTableOption() {
    return new KplexException("MISSING_OPTION", parameters("option", "table"),
        "say which table: .option(\"table\", \"<name>\") or .save(\"<name>\").");
  }

  public static KplexException noCatalog(String catalog) {
    return new KplexException("NO_CATALOG", parameters("catalog", catalog),
        "the kplex format needs the kplex catalog: set spark.sql.catalog." + catalog
        + "=io.kplex.spark.KplexCatalog (configure_spark_with_kplex does it).");
  }

  public static KplexException checkpointWrite(String what, Object path, Exception e) {
    return new KplexException("CHECKPOINT", parameters("state", what, "file", path),
        "cannot keep " + what + " in " + path + ": " + e, e);
  }

  /** A value that kplex_confluent_payload / kplex_confluent_schema_id cannot unframe. */
  public static KplexException notConfluentFramed(int length, String firstBytesHex, String why) {
    return new KplexException("NOT_CONFLUENT_FRAMED",
        parameters("length", length, "first_bytes", firstBytesHex, "reason", why),
        "a value of " + length + " bytes (starting 0x" + firstBytesHex
        + ") is not in the Confluent wire format: " + why + ". It takes records written by a Confluent serializer"
        + " (magic byte 0, a 4-byte schema id, then for Protobuf the message indexes); filter other records out,"
        + " e.g. WHERE substring(value, 1, 1) = X'00'.");
  }
}
