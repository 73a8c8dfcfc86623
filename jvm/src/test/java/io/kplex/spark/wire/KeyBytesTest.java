package io.kplex.spark.wire;

import static org.junit.Assert.assertArrayEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

/** Canonical key bytes (kplex_key) against tests/vectors/key_bytes.json. */
public class KeyBytesTest {
  private static DataType type(String name) {
    switch (name) {
      case "string": return DataTypes.StringType;
      case "int": return DataTypes.IntegerType;
      case "bigint": return DataTypes.LongType;
      case "binary": return DataTypes.BinaryType;
      case "boolean": return DataTypes.BooleanType;
      case "double": return DataTypes.DoubleType;
      case "array<string>": return DataTypes.createArrayType(DataTypes.StringType);
      case "array<bigint>": return DataTypes.createArrayType(DataTypes.LongType);
      case "array<double>": return DataTypes.createArrayType(DataTypes.DoubleType);
      case "map<string,bigint>": return DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType);
      case "map<bigint,string>": return DataTypes.createMapType(DataTypes.LongType, DataTypes.StringType);
      case "smallint": return DataTypes.ShortType;
      case "tinyint": return DataTypes.ByteType;
      case "date": return DataTypes.DateType;
      case "timestamp": return DataTypes.TimestampType;
      default:
        java.util.regex.Matcher decimal = java.util.regex.Pattern.compile("decimal\\((\\d+),(\\d+)\\)").matcher(name);
        if (decimal.matches()) {
          return DataTypes.createDecimalType(Integer.parseInt(decimal.group(1)), Integer.parseInt(decimal.group(2)));
        }
        throw new IllegalArgumentException("no type " + name + " in this test");
    }
  }

  /** Spark's internal value of a vector's value. */
  private static Object internal(String typeName, JsonNode value) {
    if (value.isNull()) return null;
    switch (typeName) {
      case "string": return UTF8String.fromString(value.asText());
      case "int": return value.asInt();
      case "bigint": return value.asLong();
      case "binary": return HexFormat.of().parseHex(value.asText());
      case "boolean": return value.asBoolean();
      case "double": return value.asDouble();
      case "smallint": return (short) value.asInt();
      case "tinyint": return (byte) value.asInt();
      case "date": return (int) java.time.LocalDate.parse(value.asText()).toEpochDay();
      case "timestamp":
        return org.apache.spark.sql.catalyst.util.DateTimeUtils.instantToMicros(java.time.Instant.parse(value.asText()));
      case "map<string,bigint>", "map<bigint,string>":
        String[] kv = typeName.substring("map<".length(), typeName.length() - 1).split(",");
        List<Object> keys = new ArrayList<>();
        List<Object> values = new ArrayList<>();
        for (JsonNode entry : value) {
          keys.add(internal(kv[0], entry.get(0)));
          values.add(internal(kv[1], entry.get(1)));
        }
        return new ArrayBasedMapData(new GenericArrayData(keys.toArray()), new GenericArrayData(values.toArray()));
      default:
        if (typeName.startsWith("decimal(")) {
          org.apache.spark.sql.types.DecimalType d = (org.apache.spark.sql.types.DecimalType) type(typeName);
          return org.apache.spark.sql.types.Decimal.apply(new java.math.BigDecimal(value.asText()), d.precision(),
              d.scale());
        }
        String element = typeName.substring("array<".length(), typeName.length() - 1);
        List<Object> items = new ArrayList<>();
        for (JsonNode item : value) items.add(internal(element, item));
        return new GenericArrayData(items.toArray());
    }
  }

  @Test
  public void everyTypeGivesTheVectorsBytes() {
    for (JsonNode c : Vectors.load("key_bytes.json").get("cases")) {
      String typeName = c.get("type").asText();
      DataType type;
      Object value;
      if (typeName.equals("struct")) {
        StructType struct = new StructType();
        List<Object> fields = new ArrayList<>();
        for (JsonNode f : c.get("value")) {
          struct = struct.add(f.get(0).asText(), type(f.get(1).asText()));
          fields.add(internal(f.get(1).asText(), f.get(2)));
        }
        type = struct;
        value = new GenericInternalRow(fields.toArray());
      } else {
        type = type(typeName);
        value = internal(typeName, c.get("value"));
      }
      byte[] expected = c.has("bytes_hex") ? HexFormat.of().parseHex(c.get("bytes_hex").asText())
          : c.get("json").asText().getBytes(StandardCharsets.UTF_8);
      byte[] actual = KeyBytes.encoderFor(type).encode(new GenericInternalRow(new Object[] {value}), 0);
      assertArrayEquals(Vectors.describe(c) + " gave " + new String(actual, StandardCharsets.UTF_8), expected, actual);
    }
  }
}
