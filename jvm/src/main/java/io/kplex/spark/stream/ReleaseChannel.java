package io.kplex.spark.stream;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The way a micro-batch's {@link HeldRelease.Signal} goes from kplex's streaming source to
 * kplex's streaming sink of the same query (Flink's {@code Backchannel} between a sink's
 * writer and committer is the model): the source {@link #signal}s the batch it plans, the
 * sink {@link #take}s the batch it writes. A signal is addressed by the query's id and the
 * batch's id, so it does not depend on which thread plans or writes, and a signal left for
 * another batch (a batch planned and never written, a rerun after a restart) is never used:
 * the sink then assumes {@link HeldRelease#NONE}.
 *
 * <p>Lifecycle: each query has at most one slot, its last planned batch's, emptied when the
 * sink takes it; slots a sink never takes (another sink, a query that stopped between
 * planning and writing) are bounded, the oldest dropped past {@code maxQueries}.
 */
public final class ReleaseChannel {
  private record Slot(long batch, HeldRelease.Signal signal) {}

  private final Map<String, Slot> slots;

  /** A channel holding the last planned batch of at most {@code maxQueries} queries. */
  public ReleaseChannel(int maxQueries) {
    this.slots = new LinkedHashMap<>(16, 0.75f, false) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Slot> eldest) {
        return size() > maxQueries;
      }
    };
  }

  /** The source: batch {@code batch} of query {@code query} was planned with {@code signal}. */
  public synchronized void signal(String query, long batch, HeldRelease.Signal signal) {
    slots.remove(query);  // re-inserted: the slot is the newest again
    slots.put(query, new Slot(batch, signal));
  }

  /** The sink: the signal of batch {@code batch} of query {@code query}, or NONE; empties the query's slot. */
  public synchronized HeldRelease.Signal take(String query, long batch) {
    Slot slot = slots.remove(query);
    return slot != null && slot.batch == batch ? slot.signal : HeldRelease.NONE;
  }

  /** How many queries have a signal waiting. */
  synchronized int waiting() {
    return slots.size();
  }
}
