package io.kplex.spark;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

final class KplexScanBuilder implements ScanBuilder {
  private final KplexTable table;
  private final CaseInsensitiveStringMap options;

  KplexScanBuilder(KplexTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
  }

  @Override
  public Scan build() {
    return new KplexScan(table, KafkaConf.from(table.catalogOptions(), options.asCaseSensitiveMap()));
  }
}
