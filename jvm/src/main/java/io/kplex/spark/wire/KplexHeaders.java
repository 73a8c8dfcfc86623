package io.kplex.spark.wire;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The record headers of kplex's wire format (G5): {@code kplex.vp}, the virtual
 * partition, and {@code kplex.order}, the order value, both ASCII decimal; late records
 * sent to a side topic also carry their source coordinates.
 */
public final class KplexHeaders {
  private KplexHeaders() {}

  public static final String VP = "kplex.vp";
  public static final String ORDER = "kplex.order";
  public static final String SOURCE_PARTITION = "kplex.source_partition";
  public static final String SOURCE_TOPIC = "kplex.source_topic";
  public static final String SOURCE_OFFSET = "kplex.source_offset";

  /** Whether a user header of this name is replaced by kplex's own on a table's record ({@code kplex.vp}, {@code kplex.order}). */
  public static boolean isReserved(String name) {
    return name.equals(VP) || name.equals(ORDER);
  }

  /**
   * Whether a header of this name is one of the five kplex writes on a late record: a source
   * record's header so named is left out of it, as kplex sets its own.
   */
  public static boolean isLateRecords(String name) {
    return isReserved(name) || name.equals(SOURCE_TOPIC) || name.equals(SOURCE_PARTITION) || name.equals(SOURCE_OFFSET);
  }

  /**
   * The decimal ASCII digits of v, as Long.toString(v) spells them, without the String:
   * counted by comparisons, then written two digits per division.
   */
  public static byte[] ascii(long v) {
    if (v == Long.MIN_VALUE) return Long.toString(v).getBytes(StandardCharsets.US_ASCII);
    int sign = v < 0 ? 1 : 0;
    long rest = Math.abs(v);
    int digits = 1;
    for (long bound = 10; digits < 19 && rest >= bound; bound *= 10) digits++;
    byte[] out = new byte[sign + digits];
    int i = out.length;
    while (rest >= 100) {
      int pair = (int) (rest % 100);
      rest /= 100;
      out[--i] = (byte) ('0' + pair % 10);
      out[--i] = (byte) ('0' + pair / 10);
    }
    out[--i] = (byte) ('0' + rest % 10);
    if (rest >= 10) out[--i] = (byte) ('0' + rest / 10);
    if (sign == 1) out[0] = '-';
    return out;
  }

  /** The virtual partition of a kplex-written record (header kplex.vp), or null. */
  public static Integer vp(Headers headers) {
    Long v = decimal(headers.lastHeader(VP));
    return v == null || v < Integer.MIN_VALUE || v > Integer.MAX_VALUE ? null : v.intValue();
  }

  /** The order value of a kplex-written record (header kplex.order), or null. */
  public static Long order(Headers headers) {
    return decimal(headers.lastHeader(ORDER));
  }

  private static Long decimal(Header h) {
    if (h == null || h.value() == null) return null;
    try {
      return Long.valueOf(new String(h.value(), StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
