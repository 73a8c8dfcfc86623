package io.kplex.spark.read;

import io.kplex.spark.errors.Errors;
import java.util.function.Supplier;

/**
 * When a reader last got records. One that polls nothing for {@link #STALL_MS} fails, naming
 * where it stood, rather than wait for ever on a broker that is gone or a partition it cannot read.
 */
final class ReadProgress {
  static final long STALL_MS = 120_000;

  private final io.kplex.spark.time.Clock clock;
  private long lastProgress;

  ReadProgress(io.kplex.spark.time.Clock clock) {
    this.clock = clock;
    this.lastProgress = clock.millis();
  }

  /** After a poll: notes that records came, or fails when none came for {@link #STALL_MS}. */
  void polled(boolean any, Supplier<String> where) {
    if (any) {
      lastProgress = clock.millis();
    } else if (clock.millis() - lastProgress > STALL_MS) {
      throw Errors.readStalled(where.get(), STALL_MS);
    }
  }
}
