package io.kplex.spark;

import java.util.HashMap;
import java.util.Map;

/** Operator commands that need no Spark job; the {@code kplex} CLI calls them. */
public final class KplexAdmin {
  private KplexAdmin() {}

  /**
   * Finishes a commit a dead driver left half done and fences (Kafka aborts) every open
   * transaction of the table, so nothing pins its topic's last stable offset.
   */
  public static String recover(String bootstrap, String table, String metadataTopic) {
    Map<String, String> options = new HashMap<>();
    options.put(KplexOptions.BOOTSTRAP, bootstrap);
    KafkaConf kafka = KafkaConf.from(options);
    try (TableStore store = new TableStore(kafka, metadataTopic)) {
      TableDefinition def = store.definition(table).orElseThrow(() -> Errors.notAKplexTable(table));
      return Transactions.recover(new WriteConf(def, options, Map.of()));
    }
  }

  /** Throws if the kafka-clients internals that exactly-once needs are missing. */
  public static void checkTransactionSupport() {
    TransactionResumer.selfCheck();
  }
}
