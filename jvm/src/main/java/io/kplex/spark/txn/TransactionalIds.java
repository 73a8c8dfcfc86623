package io.kplex.spark.txn;

/**
 * The transactional-id scheme: {@code kplex.<table>.<partition>.<stage attempt>.<attempt>}.
 * Bounded (partitions x attempts) and distinct for every attempt of a task, stage retries
 * included, so that two attempts never fence each other and the driver can tell its
 * table's transactions from any other's by the prefix.
 */
public final class TransactionalIds {
  private TransactionalIds() {}

  /** What every transactional id of a table starts with; also the prefix an ACL grants. */
  public static String prefix(String table) {
    return "kplex." + table + ".";
  }

  public static String of(String table, int partitionId, int stageAttempt, int attempt) {
    return prefix(table) + partitionId + "." + stageAttempt + "." + attempt;
  }

  /** The Spark partition id in a transactional id of this scheme. */
  public static int partitionOf(String transactionalId) {
    String[] parts = transactionalId.split("\\.");
    return Integer.parseInt(parts[parts.length - 3]);
  }

  public static boolean belongsTo(String table, String transactionalId) {
    if (!transactionalId.startsWith(prefix(table))) return false;
    // kplex.a.0.0.0 is table a's; kplex.a.b.0.0.0 belongs to table a.b, not to a.
    String rest = transactionalId.substring(prefix(table).length());
    return rest.matches("\\d+\\.\\d+\\.\\d+");
  }
}
