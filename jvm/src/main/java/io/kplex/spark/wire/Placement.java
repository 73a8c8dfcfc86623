package io.kplex.spark.wire;

import org.apache.kafka.common.utils.Utils;

/**
 * G4 of docs/contract.md: {@code vp = (murmur2(key) & 0x7fffffff) % V} (Kafka's default
 * partitioner formula) and {@code physical = vp % P}.
 */
public final class Placement {
  private Placement() {}

  public static int virtualPartition(byte[] key, int virtualPartitions) {
    return Utils.toPositive(Utils.murmur2(key)) % virtualPartitions;
  }

  public static int physicalPartition(int virtualPartition, int physicalPartitions) {
    return virtualPartition % physicalPartitions;
  }
}
