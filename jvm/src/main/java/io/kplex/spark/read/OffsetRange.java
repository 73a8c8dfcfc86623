package io.kplex.spark.read;

import org.apache.spark.sql.connector.read.InputPartition;

/** One physical partition of a topic, offsets [from, until). */
final class OffsetRange implements InputPartition {
  final String topic;
  final int partition;
  final long from;
  final long until;

  OffsetRange(String topic, int partition, long from, long until) {
    this.topic = topic;
    this.partition = partition;
    this.from = from;
    this.until = until;
  }

  @Override
  public String toString() {
    return topic + "-" + partition + "[" + from + ", " + until + ")";
  }
}
