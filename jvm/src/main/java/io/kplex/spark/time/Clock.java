package io.kplex.spark.time;

import java.io.Serializable;

/**
 * The time a stateful class reads: wall-clock milliseconds (deadlines, claim ages,
 * transaction ages), a monotonic nanosecond counter (durations) and a sleep. Production code
 * uses {@link #SYSTEM}; a JUnit test injects a clock it moves itself, so that a timeout is
 * reached in no time.
 */
public interface Clock extends Serializable {
  /** Wall-clock time, {@link System#currentTimeMillis()}. */
  long millis();

  /** A monotonic counter for durations, {@link System#nanoTime()}. */
  long nanos();

  /** Waits {@code ms} milliseconds (a test clock just moves on). */
  void sleep(long ms) throws InterruptedException;

  Clock SYSTEM = SystemClock.INSTANCE;

  /** An enum, so that it stays one instance across serialization. */
  enum SystemClock implements Clock {
    INSTANCE;

    @Override
    public long millis() {
      return System.currentTimeMillis();
    }

    @Override
    public long nanos() {
      return System.nanoTime();
    }

    @Override
    public void sleep(long ms) throws InterruptedException {
      Thread.sleep(ms);
    }
  }
}
