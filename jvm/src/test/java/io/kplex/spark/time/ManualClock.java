package io.kplex.spark.time;

import java.util.concurrent.atomic.AtomicLong;

/** A clock a test moves: {@link #sleep} and {@link #advance} move it, nothing waits. */
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

  @Override
  public void sleep(long ms) {
    advance(ms);
  }
}
