package io.kplex.spark;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.spec.KplexOptions;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsCatalogOptions;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import io.kplex.spark.errors.Errors;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code kplex} format: {@code df.write.format("kplex").option("table", "t")} and
 * {@code spark.read.format("kplex").option("table", "t")} go through the kplex catalog
 * (option {@code catalog}, default {@code kplex}), so reads and writes by format and by
 * SQL are one code path.
 */
public final class KplexSource implements SupportsCatalogOptions, DataSourceRegister {
  @Override
  public String shortName() {
    return "kplex";
  }

  @Override
  public Identifier extractIdentifier(CaseInsensitiveStringMap options) {
    String table = options.get(KplexOptions.TABLE);
    if (table == null || table.isBlank()) {
      table = options.get("path");
    }
    if (table == null || table.isBlank()) {
      throw Errors.noTableOption();
    }
    return Identifier.of(new String[0], table);
  }

  @Override
  public String extractCatalog(CaseInsensitiveStringMap options) {
    return ConfParser.of(options).text(KplexOptions.CATALOG);
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return KplexTable.TOPIC_SCHEMA;
  }

  /**
   * Streaming reads and writes ({@code readStream.format("kplex")}, {@code writeStream.format("kplex")})
   * come here rather than through {@link #extractCatalog}: the table is loaded from the kplex
   * catalog all the same.
   */
  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(properties);
    String catalog = extractCatalog(options);
    Object plugin = sessionCatalog(catalog);
    if (!(plugin instanceof TableCatalog)) {
      throw Errors.noCatalog(catalog);
    }
    try {
      return ((TableCatalog) plugin).loadTable(extractIdentifier(options));
    } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
      throw Errors.unknownTopic(extractIdentifier(options).name());
    }
  }

  /**
   * The session's catalog of that name, or null. Called by reflection: {@code CatalogManager}
   * is a class in Spark 4.0 and 4.1 and an interface in 4.3, so a compiled call links on
   * one of them only.
   */
  private static Object sessionCatalog(String name) {
    Object manager = io.kplex.spark.compat.Sessions.activeState().catalogManager();
    try {
      return org.apache.spark.sql.connector.catalog.CatalogManager.class.getMethod("catalog", String.class)
          .invoke(manager, name);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;  // no such catalog
    }
  }
}
