package io.kplex.spark.wire;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.TreeMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Canonical key bytes (docs/contract.md): chosen so that murmur2 of them matches what
 * Kafka's standard serializers produce. STRING is UTF-8, INT 4-byte and BIGINT 8-byte
 * big-endian, BINARY as is, anything else compact JSON as Jackson writes it: a struct's
 * fields sorted by name; a map's entries sorted by their keys' JSON text (a string key with
 * its quotes), each key written as that text without the quotes (so escaped again); a DOUBLE
 * as {@code Double.toString}. These bytes are on the wire (G1): a change would move existing
 * keys to other virtual partitions, so python/kplex/placement.py follows them, not the reverse.
 */
public final class KeyBytes {
  private KeyBytes() {}

  /** Reads one value of a fixed type from a row or array and encodes it. */
  public interface Encoder extends Serializable {
    byte[] encode(SpecializedGetters row, int ordinal);
  }

  public static Encoder encoderFor(DataType type) {
    if (type instanceof StringType) {
      return (row, i) -> row.getUTF8String(i).getBytes();
    } else if (type instanceof BinaryType) {
      return (row, i) -> row.getBinary(i);
    } else if (type instanceof IntegerType) {
      return (row, i) -> intBytes(row.getInt(i));
    } else if (type instanceof LongType) {
      return (row, i) -> longBytes(row.getLong(i));
    }
    return (row, i) -> json(row.get(i, type), type);
  }

  static byte[] intBytes(int v) {
    return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
  }

  static byte[] longBytes(long v) {
    byte[] b = new byte[8];
    for (int i = 7; i >= 0; i--) {
      b[i] = (byte) v;
      v >>>= 8;
    }
    return b;
  }

  private static final JsonFactory JSON = new JsonFactory();

  static byte[] json(Object value, DataType type) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(64);
    try (JsonGenerator gen = JSON.createGenerator(out)) {
      write(gen, value, type);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  private static void write(JsonGenerator gen, Object value, DataType type) throws IOException {
    if (value == null) {
      gen.writeNull();
    } else if (type instanceof StructType) {
      StructType struct = (StructType) type;
      InternalRow row = (InternalRow) value;
      StructField[] fields = struct.fields();
      List<Integer> byName = new ArrayList<>();
      for (int i = 0; i < fields.length; i++) byName.add(i);
      byName.sort(Comparator.comparing(i -> fields[i].name()));
      gen.writeStartObject();
      for (int i : byName) {
        gen.writeFieldName(fields[i].name());
        write(gen, row.isNullAt(i) ? null : row.get(i, fields[i].dataType()), fields[i].dataType());
      }
      gen.writeEndObject();
    } else if (type instanceof ArrayType) {
      DataType element = ((ArrayType) type).elementType();
      ArrayData array = (ArrayData) value;
      gen.writeStartArray();
      for (int i = 0; i < array.numElements(); i++) {
        write(gen, array.isNullAt(i) ? null : array.get(i, element), element);
      }
      gen.writeEndArray();
    } else if (type instanceof MapType) {
      MapType mapType = (MapType) type;
      MapData map = (MapData) value;
      TreeMap<String, Integer> sorted = new TreeMap<>();
      for (int i = 0; i < map.numElements(); i++) {
        sorted.put(new String(json(map.keyArray().get(i, mapType.keyType()), mapType.keyType()),
            StandardCharsets.UTF_8), i);
      }
      gen.writeStartObject();
      for (var e : sorted.entrySet()) {
        String k = e.getKey();
        gen.writeFieldName(k.startsWith("\"") ? k.substring(1, k.length() - 1) : k);
        int i = e.getValue();
        ArrayData values = map.valueArray();
        write(gen, values.isNullAt(i) ? null : values.get(i, mapType.valueType()), mapType.valueType());
      }
      gen.writeEndObject();
    } else if (type instanceof StringType) {
      gen.writeString(value.toString());
    } else if (type instanceof BinaryType) {
      gen.writeString(Base64.getEncoder().encodeToString((byte[]) value));
    } else if (type instanceof BooleanType) {
      gen.writeBoolean((Boolean) value);
    } else if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) {
      gen.writeNumber(((Number) value).longValue());
    } else if (type instanceof FloatType || type instanceof DoubleType) {
      gen.writeNumber(((Number) value).doubleValue());
    } else if (type instanceof DecimalType) {
      gen.writeNumber(((org.apache.spark.sql.types.Decimal) value).toJavaBigDecimal());
    } else if (type instanceof DateType) {
      gen.writeString(DateTimeUtils.daysToLocalDate((Integer) value).toString());
    } else if (type instanceof TimestampType || type instanceof TimestampNTZType) {
      gen.writeString(DateTimeUtils.microsToInstant((Long) value).toString());
    } else {
      gen.writeString(value.toString());
    }
  }

  /** Key bytes as an error message shows them: quoted text if printable, else hex. */
  public static String printable(byte[] key) {
    String s = new String(key, StandardCharsets.UTF_8);
    if (s.chars().allMatch(c -> c >= 32 && c != 0xFFFD)) return "'" + s + "'";
    StringBuilder hex = new StringBuilder("0x");
    for (byte x : key) hex.append(String.format("%02x", x));
    return hex.toString();
  }
}
