package io.kplex.spark.functions;

import io.kplex.spark.errors.Errors;
import java.util.Arrays;
import java.util.Locale;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The Confluent wire format of Avro, Protobuf and JSON Schema records: a magic byte 0, the
 * schema id as a 4-byte big-endian int, then (Protobuf only) the message indexes, a
 * zig-zag varint count followed by as many zig-zag varints (a single 0 byte for the file's
 * first message), then the serialized payload. Spark's {@code from_avro} and
 * {@code from_protobuf} read the bare payload:
 * <ul>
 *   <li>{@code kplex_confluent_payload(value [, 'avro' | 'protobuf' | 'json'])}: the payload
 *       (BINARY) with the framing removed;</li>
 *   <li>{@code kplex_confluent_schema_id(value)}: the schema id (INT), which a schema
 *       registry maps to the writer's schema.</li>
 * </ul>
 * NULL gives NULL; a value not in the format (too short, another magic byte, message
 * indexes that run past the end) is an error naming its length and first bytes.
 */
public final class ConfluentWire {
  private ConfluentWire() {}

  static final String PAYLOAD = "kplex_confluent_payload";
  static final String SCHEMA_ID = "kplex_confluent_schema_id";
  static final String PAYLOAD_DESCRIPTION = PAYLOAD + "(value [, format]) - the payload of a record in the"
      + " Confluent wire format (magic byte 0, 4-byte schema id, for 'protobuf' the message indexes), as"
      + " BINARY for from_avro / from_protobuf; format 'avro' (default), 'json' or 'protobuf'.";
  static final String SCHEMA_ID_DESCRIPTION = SCHEMA_ID + "(value) - the schema id of a record in the"
      + " Confluent wire format (magic byte 0, then the id as a 4-byte big-endian INT).";

  static final byte MAGIC = 0;
  static final int HEADER = 5;

  /** What follows the schema id. */
  enum Format {
    AVRO, JSON, PROTOBUF;

    static Format of(String text) {
      for (Format f : values()) {
        if (f.name().equalsIgnoreCase(text.trim())) return f;
      }
      throw Errors.confluentFormat(PAYLOAD, text);
    }
  }

  /** The schema id of a framed value. */
  static int schemaId(byte[] value) {
    requireFramed(value);
    return ((value[1] & 0xff) << 24) | ((value[2] & 0xff) << 16) | ((value[3] & 0xff) << 8) | (value[4] & 0xff);
  }

  /** Where the payload of a framed value starts. */
  static int payloadStart(byte[] value, Format format) {
    requireFramed(value);
    if (format != Format.PROTOBUF) return HEADER;
    int[] at = {HEADER};
    long count = zigzag(value, at);
    if (count < 0 || count > value.length) throw notFramed(value, Errors.Framing.INDEX_COUNT, count);
    for (long i = 0; i < count; i++) {
      zigzag(value, at);
    }
    return at[0];
  }

  static byte[] payload(byte[] value, Format format) {
    return Arrays.copyOfRange(value, payloadStart(value, format), value.length);
  }

  private static void requireFramed(byte[] value) {
    if (value.length < HEADER) throw notFramed(value, Errors.Framing.TOO_SHORT, HEADER);
    if (value[0] != MAGIC) throw notFramed(value, Errors.Framing.MAGIC_BYTE, value[0] & 0xff);
  }

  /** A zig-zag varint at {@code at[0]}, which it moves past. */
  private static long zigzag(byte[] value, int[] at) {
    long raw = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at[0] >= value.length) throw notFramed(value, Errors.Framing.INDEXES_PAST_END, 0);
      byte b = value[at[0]++];
      raw |= (long) (b & 0x7f) << shift;
      if (b >= 0) return (raw >>> 1) ^ -(raw & 1);
    }
    throw notFramed(value, Errors.Framing.INDEX_TOO_LONG, 0);
  }

  private static RuntimeException notFramed(byte[] value, Errors.Framing how, long found) {
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < Math.min(value.length, 8); i++) {
      hex.append(String.format(Locale.ROOT, "%02x", value[i] & 0xff));
    }
    return Errors.notConfluentFramed(value.length, hex.toString(), how, found);
  }

  static BoundFunction bindPayload(StructType input) {
    int n = input.fields().length;
    if (n < 1 || n > 2) {
      throw Errors.unbindable(Errors.functionArgumentCount(Errors.Arity.COUNT_CONFLUENT_PAYLOAD, PAYLOAD, n));
    }
    requireBinary(input, PAYLOAD);
    if (n == 2 && !(input.fields()[1].dataType() instanceof StringType)) {
      throw Errors.unbindable(Errors.functionArgumentType(Errors.Argument.TYPE_CONFLUENT_FORMAT, PAYLOAD,
          input.fields()[1].name(), input.fields()[1].dataType().sql()));
    }
    return new Payload(input.fields()[0].dataType(), n == 2);
  }

  static BoundFunction bindSchemaId(StructType input) {
    if (input.fields().length != 1) {
      throw Errors.unbindable(Errors.functionArgumentCount(Errors.Arity.COUNT_CONFLUENT_SCHEMA_ID, SCHEMA_ID,
          input.fields().length));
    }
    requireBinary(input, SCHEMA_ID);
    return new SchemaId(input.fields()[0].dataType());
  }

  private static void requireBinary(StructType input, String function) {
    DataType type = input.fields()[0].dataType();
    if (!(type instanceof BinaryType) && !(type instanceof NullType)) {
      throw Errors.unbindable(Errors.functionArgumentType(Errors.Argument.TYPE_CONFLUENT_VALUE, function,
          input.fields()[0].name(), type.sql()));
    }
  }

  /** {@code kplex_confluent_payload}; the format argument is nearly always a literal. */
  public static final class Payload implements ScalarFunction<byte[]> {
    private static final long serialVersionUID = 1L;
    private final DataType valueType;
    private final boolean withFormat;
    private transient volatile Object[] last;

    Payload(DataType valueType, boolean withFormat) {
      this.valueType = valueType;
      this.withFormat = withFormat;
    }

    private Format format(UTF8String text) {
      Object[] l = last;
      if (l != null && l[0].equals(text)) return (Format) l[1];
      Format f = Format.of(text.toString());
      last = new Object[] {text.copy(), f};
      return f;
    }

    public byte[] invoke(byte[] value) {
      return value == null ? null : payload(value, Format.AVRO);
    }

    public byte[] invoke(byte[] value, UTF8String format) {
      if (value == null) return null;
      return payload(value, format == null ? Format.AVRO : format(format));
    }

    @Override
    public byte[] produceResult(InternalRow args) {
      if (args.isNullAt(0)) return null;
      return withFormat && !args.isNullAt(1) ? invoke(args.getBinary(0), args.getUTF8String(1))
          : invoke(args.getBinary(0));
    }

    @Override public DataType[] inputTypes() {
      return withFormat ? new DataType[] {valueType, DataTypes.StringType} : new DataType[] {valueType};
    }
    @Override public DataType resultType() { return DataTypes.BinaryType; }
    @Override public String name() { return PAYLOAD; }
    @Override public String canonicalName() { return "kplex." + PAYLOAD + (withFormat ? "(binary,string)" : "(binary)"); }
    @Override public String toString() { return canonicalName(); }
  }

  /** {@code kplex_confluent_schema_id}. */
  public static final class SchemaId implements ScalarFunction<Integer> {
    private static final long serialVersionUID = 1L;
    private final DataType valueType;

    SchemaId(DataType valueType) {
      this.valueType = valueType;
    }

    @Override
    public Integer produceResult(InternalRow args) {
      return args.isNullAt(0) ? null : schemaId(args.getBinary(0));
    }

    @Override public DataType[] inputTypes() { return new DataType[] {valueType}; }
    @Override public DataType resultType() { return DataTypes.IntegerType; }
    @Override public String name() { return SCHEMA_ID; }
    @Override public String canonicalName() { return "kplex." + SCHEMA_ID + "(binary)"; }
    @Override public String toString() { return canonicalName(); }
  }
}
