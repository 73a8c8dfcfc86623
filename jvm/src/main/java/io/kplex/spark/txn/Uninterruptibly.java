package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.time.Clock;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/**
 * Steps that an interrupt must not cut in half: a commit (record, commit every
 * transaction, record the end) runs on a thread of its own, and the caller waits for it
 * whatever happens to its own thread ({@code query.stop()} interrupts the query's thread,
 * and Kafka's clients give up on an interrupted thread). The caller's interrupt status is
 * restored afterwards, so it still stops. A JVM that exits meanwhile leaves the commit to
 * recovery, as a killed driver does.
 */
final class Uninterruptibly {
  private Uninterruptibly() {}

  /** Runs {@code body} for table {@code table}'s commit on a thread of its own, and waits for it. */
  static <T> T call(String table, Supplier<T> body) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Thread worker = new Thread(() -> {
      try {
        result.complete(body.get());
      } catch (Throwable e) {
        result.completeExceptionally(e);
      }
    }, "kplex-commit " + table);
    worker.setDaemon(true);
    worker.start();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return result.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof RuntimeException r) throw r;
          if (cause instanceof Error err) throw err;
          throw Errors.commitFailed(table, cause);
        }
      }
    } finally {
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  /** Waits {@code ms} on {@code clock}, whatever interrupts the thread (its status is kept). */
  static void sleep(Clock clock, long ms) {
    long until = clock.nanos() + ms * 1_000_000;
    boolean interrupted = false;
    long left;
    while ((left = until - clock.nanos()) > 0) {
      try {
        clock.sleep(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }
}
