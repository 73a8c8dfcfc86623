package io.kplex.spark.write;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

/**
 * What a planned write asks of Spark: a batch write the size of its writer tasks (so that
 * their sorts fit in memory), a streaming write their number; Spark refuses a write that
 * asks for both (QueryCompilationErrors.numberAndSizeOfPartitionsNotAllowedTogether).
 */
public class KplexWriteTest {
  private static KplexWrite write(int writerTasks) {
    return new KplexWrite(WriterFixture.conf(), WriterFixture.COLUMNS, "q", null, progress -> { }, writerTasks);
  }

  @Test
  public void aBatchWriteAsksForWriterTasksOf16MiBAndLeavesTheirNumberToSpark() {
    KplexWrite batch = write(0);
    assertEquals(16L << 20, batch.advisoryPartitionSizeInBytes());
    assertEquals(0, batch.requiredNumPartitions());
  }

  @Test
  public void aStreamingWriteAsksForItsTaskCountAndNoSize() {
    KplexWrite stream = write(3);
    assertEquals(3, stream.requiredNumPartitions());
    assertEquals(0, stream.advisoryPartitionSizeInBytes());
  }
}
