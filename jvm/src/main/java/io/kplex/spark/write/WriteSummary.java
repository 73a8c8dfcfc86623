package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * The outcome of the last committed kplex write, for the CLI's and the Python API's
 * summaries ({@code kplex.last_write_summary(spark)}). It is kept as the session setting
 * {@value #SESSION_KEY} of the session that wrote (so a Spark Connect or JDBC client reads
 * it with {@code spark.conf.get} or {@code SET}), and per driver JVM.
 */
public final class WriteSummary {
  private WriteSummary() {}

  /** The session setting holding the JSON of the session's last committed kplex write. */
  public static final String SESSION_KEY = "kplex.last_write";

  private static volatile String last;

  static void record(WriteConf conf, WriterCommitMessage[] messages) {
    long[] perVp = new long[conf.virtualPartitions];
    long dropped = 0;
    long alreadyWritten = 0;
    long late = 0;
    for (WriterCommitMessage m : messages) {
      if (m instanceof KplexCommitMessage) {
        KplexCommitMessage k = (KplexCommitMessage) m;
        for (int vp = 0; vp < perVp.length; vp++) perVp[vp] += k.rowsPerVp[vp];
        dropped += k.dropped;
        alreadyWritten += k.alreadyWritten;
        late += k.late;
      }
    }
    ObjectNode node = new ObjectMapper().createObjectNode();
    node.put("table", conf.table);
    node.put("topic", conf.topic);
    node.put("delivery", conf.delivery.wire());
    long rows = 0;
    ObjectNode counts = node.putObject("rows_per_vp");
    for (int vp = 0; vp < perVp.length; vp++) {
      rows += perVp[vp];
      counts.put(Integer.toString(vp), perVp[vp]);
    }
    node.put("rows", rows);
    node.put("dropped", dropped);
    node.put("already_written", alreadyWritten);
    node.put("late", late);
    last = node.toString();
    org.apache.spark.sql.SparkSession.getActiveSession().foreach(session -> {
      session.conf().set(SESSION_KEY, last);
      return null;
    });
  }

  /** JSON of the last committed write, or null if none. */
  public static String lastJson() {
    return last;
  }
}
