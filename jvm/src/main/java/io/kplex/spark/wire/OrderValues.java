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
