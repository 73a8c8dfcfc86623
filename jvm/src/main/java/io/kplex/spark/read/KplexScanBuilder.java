package io.kplex.spark.read;

import io.kplex.spark.catalog.KplexTable;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Plans a read: resolves its settings ({@link ReadConf}) and keeps the virtual partitions
 * that {@code WHERE vpartition = n} or {@code vpartition IN (...)} select, so that only
 * those are read. Spark still applies every filter to the rows. A plain topic's read
 * builds only the columns the query uses.
 */
public final class KplexScanBuilder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns {
  private final KplexTable table;
  private final CaseInsensitiveStringMap options;
  private TreeSet<Integer> vps;
  private final List<Filter> pushed = new ArrayList<>();
  private StructType required;

  public KplexScanBuilder(KplexTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    if (table.definition().isEmpty()) {
      return filters;
    }
    for (Filter f : filters) {
      TreeSet<Integer> selected = null;
      if (f instanceof EqualTo && ((EqualTo) f).attribute().equals("vpartition")) {
        selected = ints(new Object[] {((EqualTo) f).value()});
      } else if (f instanceof In && ((In) f).attribute().equals("vpartition")) {
        selected = ints(((In) f).values());
      }
      if (selected != null) {
        pushed.add(f);
        if (vps == null) vps = selected; else vps.retainAll(selected);
      }
    }
    return filters;
  }

  private static TreeSet<Integer> ints(Object[] values) {
    TreeSet<Integer> set = new TreeSet<>();
    for (Object v : values) {
      if (v instanceof Number && ((Number) v).longValue() == ((Number) v).intValue()) {
        set.add(((Number) v).intValue());
      }
    }
    return set;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed.toArray(new Filter[0]);
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Scan build() {
    return new KplexScan(table, ReadConf.resolve(table, options.asCaseSensitiveMap()), options, vps, required);
  }
}
