package io.kplex.spark.stream;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which kplex table each streaming query of this driver writes, told by kplex's sink and
 * read by kplex's source, so that the source can name the query's monitoring consumer group
 * after its table ({@code kplex.<table>.<query id>}). Lifecycle: one entry per query, the
 * oldest dropped past {@code maxQueries} (a query that stopped long ago).
 */
public final class QuerySinks {
  /** The driver's registry. */
  public static final QuerySinks DRIVER = new QuerySinks(256);

  private final Map<String, String> tables;

  public QuerySinks(int maxQueries) {
    this.tables = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
        return size() > maxQueries;
      }
    };
  }

  /** The sink: query {@code query} writes kplex table {@code table}. */
  public synchronized void writes(String query, String table) {
    tables.put(query, table);
  }

  /** The kplex table query {@code query} writes, or null (another sink, or not known yet). */
  public synchronized String table(String query) {
    return tables.get(query);
  }
}
