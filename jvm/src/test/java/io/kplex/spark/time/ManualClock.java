package io.kplex.spark.time;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * A clock a test moves: {@link #sleep} and {@link #advance} move it, nothing waits;
 * {@link #whenSleeping} lets another party act while a waiter sleeps.
 */
public final class ManualClock implements Clock {
  private final AtomicLong millis;
  private final AtomicLong nanos = new AtomicLong();

  public ManualClock(long startMillis) {
    this.millis = new AtomicLong(startMillis);
  }

  /** Moves the clock on by {@code ms}. */
  public void advance(long ms) {
    millis.addAndGet(ms);
    nanos.addAndGet(ms * 1_000_000);
  }

  @Override
  public long millis() {
    return millis.get();
  }

  @Override
  public long nanos() {
    return nanos.get();
  }

  /**
   * A view of this clock whose sleeps also run {@code hook} (e.g. another writer renewing its
   * claim while a waiter sleeps); sleeps on this clock itself run nothing.
   */
  public Clock whenSleeping(LongConsumer hook) {
    ManualClock time = this;
    return new Clock() {
      @Override
      public long millis() {
        return time.millis();
      }

      @Override
      public long nanos() {
        return time.nanos();
      }

      @Override
      public void sleep(long ms) {
        time.advance(ms);
        hook.accept(ms);
      }
    };
  }

  @Override
  public void sleep(long ms) {
    advance(ms);
  }
}
