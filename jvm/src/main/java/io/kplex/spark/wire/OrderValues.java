package io.kplex.spark.wire;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Order values (docs/contract.md): TIMESTAMP as epoch milliseconds, DATE as epoch
 * milliseconds at midnight UTC, integral types as they are (64-bit).
 */
public final class OrderValues {
  private OrderValues() {}

  public static final long MICROS_PER_DAY = 86_400_000_000L;

  /**
   * The order of records inside a virtual partition (G2 and its tie-break): order value,
   * then canonical key bytes, then value bytes, both unsigned, NULLs first. A write's sort
   * (WriteRequirements), the streaming hold-back's merge and the read-time merge all follow it.
   */
  public static int compare(long order1, byte[] key1, byte[] value1, long order2, byte[] key2, byte[] value2) {
    int c = Long.compare(order1, order2);
    if (c != 0) return c;
    c = compareBytes(key1, key2);
    return c != 0 ? c : compareBytes(value1, value2);
  }

  private static int compareBytes(byte[] a, byte[] b) {
    if (a == null || b == null) return a == null ? (b == null ? 0 : -1) : 1;
    return java.util.Arrays.compareUnsigned(a, b);
  }

  /** Reads an order value of a fixed type as a 64-bit long. */
  public interface Reader extends Serializable {
    long read(SpecializedGetters row, int ordinal);
  }

  public static boolean isTime(DataType type) {
    return type instanceof TimestampType || type instanceof TimestampNTZType || type instanceof DateType;
  }

  public static boolean isSupported(DataType type) {
    return isTime(type) || type instanceof ByteType || type instanceof ShortType
        || type instanceof IntegerType || type instanceof LongType;
  }

  /** Null if the type is not an order type. */
  public static Reader readerFor(DataType type) {
    if (type instanceof TimestampType || type instanceof TimestampNTZType) {
      return (row, i) -> Math.floorDiv(row.getLong(i), 1000L);
    } else if (type instanceof DateType) {
      return (row, i) -> row.getInt(i) * 86_400_000L;
    } else if (type instanceof LongType) {
      return (row, i) -> row.getLong(i);
    } else if (type instanceof IntegerType) {
      return (row, i) -> row.getInt(i);
    } else if (type instanceof ShortType) {
      return (row, i) -> row.getShort(i);
    } else if (type instanceof ByteType) {
      return (row, i) -> row.getByte(i);
    }
    return null;
  }
}
