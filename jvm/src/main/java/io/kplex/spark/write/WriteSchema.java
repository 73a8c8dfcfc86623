package io.kplex.spark.write;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.functions.KplexFunctions;
import io.kplex.spark.wire.OrderValues;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Which column of the written data plays which role, decided once at planning time:
 * <ul>
 *   <li>key: the output of {@code kplex_key(...)} or a column named {@code key} (any type;
 *       canonicalized like kplex_key);</li>
 *   <li>order: the output of {@code kplex_order(...)} or a column named {@code order_value}
 *       or {@code order} (TIMESTAMP, TIMESTAMP_NTZ, DATE or integral);</li>
 *   <li>value: a column named {@code value}, else the one column left over (BINARY or STRING);</li>
 *   <li>headers: optional, {@code ARRAY<STRUCT<key: STRING, value: BINARY>>};</li>
 *   <li>a streaming write from kplex's source: the source position of each row, added by
 *       {@code plan.SourcePositions} ({@link #POSITION_COLUMNS}).</li>
 * </ul>
 */
public final class WriteSchema implements Serializable {
  final int key;
  final int order;
  final int value;
  final int headers;
  /**
   * The row's source partition, offset, timestamp and the largest order value before it on
   * that partition in its micro-batch; -1: absent.
   */
  final int sourcePartition;
  final int sourceOffset;
  final int sourceTimestamp;
  /**
   * The topic the source positions are of (the metadata {@link #SOURCE_TOPIC} of the offset
   * column), or null.
   */
  final String sourceTopic;
  /**
   * The bootstrap servers of the catalog the source topic was read through (the metadata
   * {@link #SOURCE_BOOTSTRAP} of the offset column), or null.
   */
  final String sourceBootstrap;
  /**
   * The bootstrap servers the source topic was read through, whatever the read's isolation (the
   * metadata {@link #SOURCE_CLUSTER} of the offset column), or null: where its id can be asked.
   */
  final String sourceCluster;
  /**
   * A digest of the filters the source's rows went through before the write (the metadata
   * {@link #SOURCE_ROWS} of the offset column), or null: every row read reached the write.
   */
  final String sourceRows;
  /** The partition the event-time rule judges the row on: the source partition, or a kplex table's virtual partition. */
  final int orderedPartition;
  final int highBefore;
  final StructType schema;

  /** The hidden columns of a streaming write's source positions, in this order. */
  public static final List<String> POSITION_COLUMNS =
      List.of("__kplex_source_partition", "__kplex_source_offset", "__kplex_source_timestamp",
          "__kplex_ordered_partition", "__kplex_high_before");

  /** The metadata key of the offset column that names its source topic. */
  public static final String SOURCE_TOPIC = "kplex.source_topic";
  /** The metadata key of the offset column that names the bootstrap servers its source topic was read from. */
  public static final String SOURCE_BOOTSTRAP = "kplex.source_bootstrap";
  /** The metadata key of the offset column that holds the digest of the filters its rows went through. */
  public static final String SOURCE_ROWS = "kplex.source_rows";
  /** The metadata key of the offset column that names the bootstrap servers of its source, read committed or not. */
  public static final String SOURCE_CLUSTER = "kplex.source_cluster";

  private WriteSchema(StructType schema, int key, int order, int value, int headers) {
    this.schema = schema;
    this.key = key;
    this.order = order;
    this.value = value;
    this.headers = headers;
    List<String> names = List.of(schema.fieldNames());
    this.sourcePartition = names.indexOf(POSITION_COLUMNS.get(0));
    this.sourceOffset = names.indexOf(POSITION_COLUMNS.get(1));
    this.sourceTimestamp = names.indexOf(POSITION_COLUMNS.get(2));
    this.orderedPartition = names.indexOf(POSITION_COLUMNS.get(3));
    this.highBefore = names.indexOf(POSITION_COLUMNS.get(4));
    org.apache.spark.sql.types.Metadata offsetMeta = sourceOffset < 0 ? null : schema.fields()[sourceOffset].metadata();
    this.sourceTopic = offsetMeta != null && offsetMeta.contains(SOURCE_TOPIC) ? offsetMeta.getString(SOURCE_TOPIC) : null;
    this.sourceBootstrap = offsetMeta != null && offsetMeta.contains(SOURCE_BOOTSTRAP) ? offsetMeta.getString(SOURCE_BOOTSTRAP) : null;
    this.sourceRows = offsetMeta != null && offsetMeta.contains(SOURCE_ROWS) ? offsetMeta.getString(SOURCE_ROWS) : null;
    this.sourceCluster = offsetMeta != null && offsetMeta.contains(SOURCE_CLUSTER) ? offsetMeta.getString(SOURCE_CLUSTER) : null;
  }

  /**
   * Whether rows carry the source partition and offset they were read from, and of which
   * topic (a batch write from a kplex table: what it read is recorded with its commit).
   */
  boolean readsKnown() {
    return sourcePartition >= 0 && sourceOffset >= 0 && sourceTopic != null;
  }

  /** Whether rows carry their source position (a streaming write from kplex's source). */
  boolean positioned() {
    return sourcePartition >= 0 && orderedPartition >= 0 && highBefore >= 0;
  }

  /** The index of the order column of a written schema (the rules of {@link #resolve}). */
  public static int orderColumn(StructType schema) {
    return resolve(schema).order;
  }

  String name(int column) {
    return schema.fields()[column].name();
  }

  DataType type(int column) {
    return schema.fields()[column].dataType();
  }

  static WriteSchema resolve(StructType schema) {
    StructField[] fields = schema.fields();
    List<String> names = new ArrayList<>();
    for (StructField f : fields) names.add(f.name());
    int key = pick(fields, "key", Errors.WrittenColumn.KEY, names,
        f -> made(f, KplexFunctions.KEY) || named(f, "key") || isCall(f, KplexFunctions.KEY));
    int order = pick(fields, "order", Errors.WrittenColumn.ORDER, names,
        f -> made(f, KplexFunctions.ORDER) || named(f, "order_value") || named(f, "order")
            || isCall(f, KplexFunctions.ORDER));
    int headers = find(fields, "headers", f -> named(f, "headers"));
    int value = find(fields, "value", f -> named(f, "value") && !made(f, KplexFunctions.KEY)
        && !made(f, KplexFunctions.ORDER));
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < fields.length; i++) {
      if (i != key && i != order && i != headers && i != value && !POSITION_COLUMNS.contains(fields[i].name())) {
        rest.add(fields[i].name());
      }
    }
    if (value < 0 && rest.size() == 1) {
      value = names.indexOf(rest.remove(0));
    }
    if (value < 0) {
      throw Errors.missingColumn(Errors.WrittenColumn.VALUE, names);
    }
    if (!rest.isEmpty()) {
      throw Errors.unexpectedColumns(rest);
    }
    DataType orderType = fields[order].dataType();
    if (!OrderValues.isSupported(orderType)) {
      throw Errors.unsupportedOrderType(fields[order].name(), orderType.sql());
    }
    DataType valueType = fields[value].dataType();
    if (!(valueType instanceof BinaryType || valueType instanceof StringType)) {
      throw Errors.valueColumnType(fields[value].name(), valueType.sql());
    }
    if (headers >= 0 && !isHeaders(fields[headers].dataType())) {
      throw Errors.headersColumnType(fields[headers].name(), fields[headers].dataType().sql());
    }
    return new WriteSchema(schema, key, order, value, headers);
  }

  /** The column is the output of a kplex function (tagged by {@link KplexFunctions.Builder}). */
  private static boolean made(StructField f, String function) {
    return f.metadata().contains(KplexFunctions.ROLE)
        && f.metadata().getString(KplexFunctions.ROLE).equals(function);
  }

  private static boolean named(StructField f, String name) {
    return f.name().equalsIgnoreCase(name);
  }

  /** The catalog-qualified call {@code kplex.kplex_key(x)} has no tag, only its name. */
  private static boolean isCall(StructField f, String function) {
    String n = f.name().toLowerCase(Locale.ROOT);
    return n.startsWith(function + "(") || n.startsWith("kplex." + function + "(");
  }

  private static int pick(StructField[] fields, String role, Errors.WrittenColumn column, List<String> names,
      java.util.function.Predicate<StructField> matches) {
    int found = find(fields, role, matches);
    if (found < 0) {
      throw Errors.missingColumn(column, names);
    }
    return found;
  }

  private static int find(StructField[] fields, String role, java.util.function.Predicate<StructField> matches) {
    List<String> candidates = new ArrayList<>();
    int found = -1;
    for (int i = 0; i < fields.length; i++) {
      if (matches.test(fields[i])) {
        candidates.add(fields[i].name());
        found = i;
      }
    }
    if (candidates.size() > 1) {
      throw Errors.ambiguousColumn(role, candidates);
    }
    return found;
  }

  private static boolean isHeaders(DataType type) {
    if (!(type instanceof ArrayType)) return false;
    DataType element = ((ArrayType) type).elementType();
    if (!(element instanceof StructType)) return false;
    StructField[] f = ((StructType) element).fields();
    return f.length == 2 && f[0].dataType() instanceof StringType && f[1].dataType() instanceof BinaryType;
  }

  @Override
  public String toString() {
    return "key=" + name(key) + ", order=" + name(order) + ", value=" + name(value)
        + (headers >= 0 ? ", headers" : "");
  }
}
