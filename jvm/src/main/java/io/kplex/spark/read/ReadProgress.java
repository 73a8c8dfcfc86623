package io.kplex.spark.read;

import io.kplex.spark.errors.Errors;
import java.util.function.Supplier;

/**
 * When a reader last got records. One that polls nothing for {@link #STALL_MS} fails, naming
 * where it stood, rather than wait for ever on a broker that is gone or a partition it cannot read.
 */
final class ReadProgress {
  static final long STALL_MS = 120_000;

  private long lastProgress = System.currentTimeMillis();

  /** After a poll: notes that records came, or fails when none came for {@link #STALL_MS}. */
  void polled(boolean any, Supplier<String> where) {
    if (any) {
      lastProgress = System.currentTimeMillis();
    } else if (System.currentTimeMillis() - lastProgress > STALL_MS) {
      throw Errors.readStalled(where.get(), STALL_MS);
    }
  }
}
