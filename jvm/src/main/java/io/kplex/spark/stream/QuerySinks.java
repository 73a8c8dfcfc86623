package io.kplex.spark.stream;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which kplex table each streaming query of this driver writes, and how fast its last
 * micro-batch went, told by kplex's sink and read by kplex's source: the source names the
 * query's monitoring consumer group after its table ({@code kplex.<table>.<query id>}), and
 * sizes its next micro-batch so that it commits well within the transaction timeout.
 * Lifecycle: one entry per query, the oldest dropped past {@code maxQueries} (a query that
 * stopped long ago).
 */
public final class QuerySinks {
  /** The driver's registry. */
  public static final QuerySinks DRIVER = new QuerySinks(256);

  private final Map<String, String> tables;
  /** Per query: {offsets read, ms from the write's start to its commit} of its last micro-batch with records. */
  private final Map<String, long[]> paces;

  public QuerySinks(int maxQueries) {
    this.tables = bounded(maxQueries);
    this.paces = bounded(maxQueries);
  }

  private static <V> Map<String, V> bounded(int max) {
    return new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
        return size() > max;
      }
    };
  }

  /**
   * Where query {@code query}'s sink stands in event time after its last committed epoch:
   * per source partition the largest order value read ({@code highs}), the partitions idle
   * then, the table's max_delay_ms, the records it holds back and its cap on them
   * ({@code kplex.max_held_records}, -1: none).
   */
  public record Stand(java.util.Map<Integer, Long> highs, java.util.Set<Integer> idle, long maxDelayMs,
      long heldRecords, long maxHeldRecords) {
    public Stand(java.util.Map<Integer, Long> highs, java.util.Set<Integer> idle, long maxDelayMs) {
      this(highs, idle, maxDelayMs, 0, -1);
    }

    /** Whether the sink holds as many records as its cap allows, or more. */
    public boolean full() {
      return maxHeldRecords >= 0 && heldRecords >= maxHeldRecords;
    }
  }

  private final Map<String, Stand> stands = bounded(256);

  /** The sink: query {@code query} committed an epoch and stands at {@code stand}. */
  public synchronized void stands(String query, Stand stand) {
    stands.put(query, stand);
  }

  /** Where query {@code query}'s sink stands (null: not known, or not a kplex sink). */
  public synchronized Stand stand(String query) {
    return stands.get(query);
  }

  /**
   * A graceful stop's steps for a query: asked (by {@code kplex.streaming.stop_gracefully}),
   * planned (its source planned the micro-batch that releases everything), done (its kplex
   * sink committed that micro-batch: nothing is held any more).
   */
  public enum Release { ASKED, PLANNED, DONE }

  private final Map<String, Release> releases = bounded(256);

  /** Asks query {@code query} to release everything it holds at its next micro-batch, as at the end of its input. */
  public synchronized void askRelease(String query) {
    releases.put(query, Release.ASKED);
  }

  /** Where query {@code query}'s graceful stop stands (null: not asked). */
  public synchronized Release release(String query) {
    return releases.get(query);
  }

  /** The source planned the releasing micro-batch; the sink committed it. */
  public synchronized void released(String query, Release step) {
    Release was = releases.get(query);
    if (was != null && was.ordinal() < step.ordinal()) releases.put(query, step);
  }

  /** Whether query {@code query} has released everything since it was asked (for Python, which cannot name an enum). */
  public synchronized boolean releaseDone(String query) {
    return releases.get(query) == Release.DONE;
  }

  /** The sink: query {@code query}'s last micro-batch read {@code offsets} source offsets in {@code ms}, all told. */
  public synchronized void paced(String query, long offsets, long ms) {
    if (offsets > 0) paces.put(query, new long[] {offsets, Math.max(1, ms)});
  }

  /** Offsets per ms of query {@code query}'s last micro-batch with records, or -1 (none yet). */
  public synchronized double pace(String query) {
    long[] p = paces.get(query);
    return p == null ? -1 : (double) p[0] / p[1];
  }

  /** The sink: query {@code query} writes kplex table {@code table}. */
  public synchronized void writes(String query, String table) {
    tables.put(query, table);
  }

  /** The kplex table query {@code query} writes, or null (another sink, or not known yet). */
  public synchronized String table(String query) {
    return tables.get(query);
  }

  private final Map<String, java.util.Set<String>> reads = bounded(256);

  /** The source: query {@code query} reads {@code topics} (a query of several sources: each adds its own). */
  public synchronized void reads(String query, java.util.Collection<String> topics) {
    reads.computeIfAbsent(query, q -> new java.util.TreeSet<>()).addAll(topics);
  }

  /** Whether query {@code query} reads topic {@code topic} through kplex's source, as far as this driver knows. */
  public synchronized boolean readsTopic(String query, String topic) {
    java.util.Set<String> topics = reads.get(query);
    return topics != null && topics.contains(topic);
  }

  /** Per query: its sink's commit to the monitoring group still under way (lag tools only). */
  private final Map<String, java.util.concurrent.Future<?>> monitoring = bounded(256);

  /**
   * Query {@code query}'s sink sent its committed offsets to the monitoring group and goes on
   * without waiting for the answer: {@code commit} completes when the group has them.
   */
  public synchronized void monitoring(String query, java.util.concurrent.Future<?> commit) {
    monitoring.put(query, commit);
  }

  /**
   * Waits, at most {@code timeoutMs}, until the query's monitoring-group commit under way (if
   * any) is answered: before the next one is sent (so the group's offsets only move forward),
   * and when the query's source stops (so lag tools see the last epoch once the query ended).
   * Its failure is the sender's to report, not the waiter's.
   */
  public void awaitMonitoring(String query, long timeoutMs) {
    java.util.concurrent.Future<?> commit;
    synchronized (this) {
      commit = monitoring.remove(query);
    }
    if (commit == null) return;
    try {
      commit.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      // reported by the sender (a monitoring group never fails a query)
    }
  }
}
