package io.kplex.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * The outcome of the last committed kplex write in this driver JVM, for the CLI's and
 * the Python API's summaries ({@code kplex.last_write_summary(spark)}).
 */
public final class WriteSummary {
  private WriteSummary() {}

  private static volatile String last;

  static void record(WriteConf conf, WriterCommitMessage[] messages) {
    long[] perVp = new long[conf.virtualPartitions];
    long dropped = 0;
    for (WriterCommitMessage m : messages) {
      if (m instanceof KplexCommitMessage) {
        KplexCommitMessage k = (KplexCommitMessage) m;
        for (int vp = 0; vp < perVp.length; vp++) perVp[vp] += k.rowsPerVp[vp];
        dropped += k.dropped;
      }
    }
    ObjectNode node = new ObjectMapper().createObjectNode();
    node.put("table", conf.table);
    node.put("topic", conf.topic);
    node.put("delivery", conf.delivery);
    long rows = 0;
    ObjectNode counts = node.putObject("rows_per_vp");
    for (int vp = 0; vp < perVp.length; vp++) {
      rows += perVp[vp];
      counts.put(Integer.toString(vp), perVp[vp]);
    }
    node.put("rows", rows);
    node.put("dropped", dropped);
    last = node.toString();
  }

  /** JSON of the last committed write, or null if none. */
  public static String lastJson() {
    return last;
  }
}
