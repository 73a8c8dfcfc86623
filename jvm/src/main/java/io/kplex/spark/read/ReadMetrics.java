package io.kplex.spark.read;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import io.kplex.spark.compat.Scala;

/**
 * What a kplex read counts, as Spark SQL metrics of its scan (shown in the SQL tab of the
 * UI, and by {@link #json} / {@code kplex.reader.read_metrics(df)} after an action):
 * source records read, late records dropped, late records sent to the side topic.
 * In a read-time table every task reads all of the source, so "records read" counts
 * each source record once per virtual partition; late records are counted once, by the
 * task of their own virtual partition.
 */
public final class ReadMetrics {
  private ReadMetrics() {}

  public static final String RECORDS = "kplexRecordsRead";
  public static final String LATE_DROPPED = "kplexLateDropped";
  public static final String LATE_SIDE_TOPIC = "kplexLateToSideTopic";

  public static final class Records extends CustomSumMetric {
    @Override public String name() { return RECORDS; }
    @Override public String description() { return "kplex source records read"; }
  }

  public static final class LateDropped extends CustomSumMetric {
    @Override public String name() { return LATE_DROPPED; }
    @Override public String description() { return "kplex late records dropped"; }
  }

  public static final class LateToSideTopic extends CustomSumMetric {
    @Override public String name() { return LATE_SIDE_TOPIC; }
    @Override public String description() { return "kplex late records sent to the side topic"; }
  }

  static CustomMetric[] supported() {
    return new CustomMetric[] {new Records(), new LateDropped(), new LateToSideTopic()};
  }

  private static CustomTaskMetric task(String name, long value) {
    return new CustomTaskMetric() {
      @Override public String name() { return name; }
      @Override public long value() { return value; }
    };
  }

  static CustomTaskMetric[] values(long records, long lateDropped, long lateSideTopic) {
    return new CustomTaskMetric[] {
      task(RECORDS, records), task(LATE_DROPPED, lateDropped), task(LATE_SIDE_TOPIC, lateSideTopic)
    };
  }

  /**
   * The kplex metrics of an executed Dataset's scans, summed, as JSON, e.g.
   * {@code {"kplexLateDropped":3,"kplexLateToSideTopic":0,"kplexRecordsRead":3000}};
   * {@code {}} if it read no kplex table or has not run.
   */
  public static String json(org.apache.spark.sql.Dataset<?> df) {
    Map<String, Long> sums = new TreeMap<>();
    Deque<SparkPlan> todo = new ArrayDeque<>();
    todo.push(io.kplex.spark.compat.Sessions.queryExecution(df).executedPlan());
    while (!todo.isEmpty()) {
      SparkPlan plan = todo.pop();
      if (plan instanceof AdaptiveSparkPlanExec) {
        todo.push(((AdaptiveSparkPlanExec) plan).executedPlan());
        continue;
      }
      if (plan instanceof QueryStageExec) {
        todo.push(((QueryStageExec) plan).plan());
        continue;
      }
      if (plan instanceof BatchScanExec && ((BatchScanExec) plan).scan() instanceof KplexScan) {
        Map<String, SQLMetric> metrics = Scala.asJava(plan.metrics());
        for (String name : new String[] {RECORDS, LATE_DROPPED, LATE_SIDE_TOPIC}) {
          SQLMetric m = metrics.get(name);
          if (m != null) sums.merge(name, m.value(), Long::sum);
        }
      }
      Scala.asJava(plan.children()).forEach(todo::push);
    }
    StringBuilder s = new StringBuilder("{");
    sums.forEach((k, v) -> s.append(s.length() > 1 ? "," : "").append('"').append(k).append("\":").append(v));
    return s.append('}').toString();
  }
}
