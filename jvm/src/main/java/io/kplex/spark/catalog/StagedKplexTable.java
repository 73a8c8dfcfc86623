package io.kplex.spark.catalog;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * A table {@code CREATE TABLE ... AS SELECT}, {@code REPLACE TABLE} or {@code df.writeTo(t)
 * .create()/.replace()} made (the kplex catalog's staging, {@code KplexCatalog#stageCreate}):
 * made already, as Spark's own non-atomic commands make it, its definition checked in full before
 * anything changed. Its write goes to the table; committing changes nothing more, aborting (the
 * write failed) drops the table again. Spark writes a replacing {@code AS SELECT} as an overwrite
 * of the staged table: the table is new and empty, so its truncation is nothing to do.
 */
public final class StagedKplexTable implements StagedTable, SupportsWrite {
  private final Table table;
  private final Runnable drop;

  public StagedKplexTable(Table table, Runnable drop) {
    this.table = table;
    this.drop = drop;
  }

  /** The table made. */
  public Table table() {
    return table;
  }

  @Override public String name() { return table.name(); }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() { return table.schema(); }

  @Override public Map<String, String> properties() { return table.properties(); }
  @Override
  public Set<TableCapability> capabilities() {
    Set<TableCapability> all = EnumSet.of(TableCapability.TRUNCATE);
    all.addAll(table.capabilities());
    return all;
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    WriteBuilder write = ((SupportsWrite) table).newWriteBuilder(info);
    return new EmptyTruncated(write);
  }

  /** The table's write, for which truncating the new, empty table changes nothing. */
  private static final class EmptyTruncated implements SupportsTruncate {
    private final WriteBuilder write;

    EmptyTruncated(WriteBuilder write) {
      this.write = write;
    }

    @Override public WriteBuilder truncate() { return this; }
    @Override public Write build() { return write.build(); }
  }

  @Override public void commitStagedChanges() {}

  @Override
  public void abortStagedChanges() {
    drop.run();
  }

  @Override public String toString() { return table.toString(); }
}
