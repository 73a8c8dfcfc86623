package io.kplex.spark.plan;

import io.kplex.spark.catalog.KplexTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.streaming.WriteToStream;
import org.apache.spark.sql.connector.catalog.Identifier;
import scala.Option;
import scala.Tuple2;

/**
 * An analyzer rule: a streaming query writing a kplex table by format
 * ({@code writeStream.format("kplex").option("table", t)}) gets the table's catalog, as
 * {@code toTable("kplex.t")} does. Spark needs it to plan the write's distribution, which
 * calls kplex's functions ({@code kplex_write_vpartition}) that the catalog provides.
 */
public final class StreamingSinkCatalog extends Rule<LogicalPlan> {
  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!(plan instanceof WriteToStream)) return plan;
    WriteToStream write = (WriteToStream) plan;
    if (!(write.sink() instanceof KplexTable) || write.catalogAndIdent().isDefined()) return plan;
    KplexTable table = (KplexTable) write.sink();
    if (table.catalog().isEmpty()) return plan;
    Option<Tuple2<org.apache.spark.sql.connector.catalog.TableCatalog, Identifier>> withCatalog =
        Option.apply(new Tuple2<>(table.catalog().get(), Identifier.of(new String[0], table.name())));
    return io.kplex.spark.compat.Copies.with(write, "catalogAndIdent", withCatalog);
  }
}
