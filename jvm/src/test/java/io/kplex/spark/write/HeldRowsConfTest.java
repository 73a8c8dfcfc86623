package io.kplex.spark.write;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;

import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.junit.Test;

/**
 * The session's Hadoop configuration that held files are written with is written to bytes
 * once per change, not every micro-batch: the same bytes while no entry changes, new ones
 * as soon as one is set, changed or removed.
 */
public class HeldRowsConfTest {
  @Test
  public void theBytesAreWrittenAgainOnlyWhenAnEntryChanged() {
    Configuration conf = new Configuration(false);
    conf.set("fs.a", "1");
    byte[] first = HeldRows.shipped(conf);
    assertSame(first, HeldRows.shipped(conf));
    conf.set("fs.a", "2");
    byte[] changed = HeldRows.shipped(conf);
    assertFalse(Arrays.equals(first, changed));
    conf.set("fs.b", "x");
    byte[] added = HeldRows.shipped(conf);
    assertFalse(Arrays.equals(changed, added));
    conf.unset("fs.b");
    assertArrayEquals(changed, HeldRows.shipped(conf));
  }
}
