package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static org.junit.Assert.assertEquals;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.txn.OffsetRanges;
import io.kplex.spark.wire.Placement;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

/**
 * A batch write from a kplex topic (rows with their source partition and offset, the offset
 * column naming the topic): what it read goes into its commit message, and a row another writer
 * of the table read, at or below its virtual partition's floor, is skipped and counted.
 */
public class BatchReadsTest {
  private static final StructType SCHEMA = new StructType()
      .add("key", DataTypes.StringType)
      .add("order_value", DataTypes.LongType)
      .add("value", DataTypes.StringType)
      .add(WriteSchema.POSITION_COLUMNS.get(0), DataTypes.IntegerType)
      .add(WriteSchema.POSITION_COLUMNS.get(1), DataTypes.LongType, false,
          new MetadataBuilder().putString(WriteSchema.SOURCE_TOPIC, "views").build());

  private static InternalRow row(long order, int partition, long offset) {
    return new GenericInternalRow(new Object[] {UTF8String.fromString("alice"), order,
        UTF8String.fromString("o" + order + "@" + offset), partition, offset});
  }

  @Test
  public void aRowAnotherWriterReadAtOrBelowTheFloorIsSkippedAndWhatWasReadIsReported() {
    WriteSchema schema = WriteSchema.resolve(SCHEMA);
    assertEquals("views", schema.sourceTopic);
    WriteConf conf = conf("kplex.delivery", "at_least_once");
    int vp = Placement.virtualPartition("alice".getBytes(StandardCharsets.UTF_8), 4);
    WriterFixture.Clients clients = new WriterFixture.Clients();
    KplexDataWriter w = KplexDataWriter.open(conf, RowCodec.of(schema, conf), 0, 0, 0, Map.of(vp, 5L), clients)
        .skipping(io.kplex.spark.txn.ReadByOthers.NONE.withInserts(OffsetRanges.NONE.with(0, 10, 20)));
    w.write(row(4, 0, 15));   // read before, below the floor: skipped (it was late then, or written)
    w.write(row(5, 0, 12));   // read before, at the floor: written then, skipped
    w.write(row(5, 0, 30));   // not read before, at the floor: a tie, written
    w.write(row(6, 0, 16));   // read before, above the floor: written (held back then)
    w.write(row(7, 1, 3));    // another partition
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    assertEquals(2, m.alreadyWritten);
    assertEquals(List.of("o5@30", "o6@16", "o7@3"), clients.producer.history().stream()
        .map(r -> new String(r.value(), StandardCharsets.UTF_8)).toList());
    assertEquals("every row the task got counts as read", "0:[12,31) 1:[3,4)", m.reads.toString());
  }
}
