package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.time.Clock;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;

/**
 * Shipped to the executors for one epoch: the write's settings, how rows become records
 * ({@link RowCodec}), where the epochs before left off, and where Kafka clients and the
 * time come from.
 */
final class StreamingWriterFactory implements StreamingDataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final RowCodec codec;
  private final EpochStart start;
  private final HeldRows held;
  private final int numPartitions;
  private final KafkaClients clients;
  private final Clock clock;
  /** The query's run (its Spark job group), whose tasks keep their producers from epoch to epoch; null: none kept. */
  private final String run;
  /** The epoch whose tasks' producers this epoch's tasks may go on with (-1: none). */
  private final long producersFrom;

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochStart start, HeldRows held, int numPartitions) {
    this(conf, schema, start, held, numPartitions, null, -1);
  }

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochStart start, HeldRows held, int numPartitions,
      String run, long producersFrom) {
    this(conf, schema, start, held, numPartitions, KafkaClients.REAL, Clock.SYSTEM, run, producersFrom);
  }

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochStart start, HeldRows held, int numPartitions,
      KafkaClients clients, Clock clock) {
    this(conf, schema, start, held, numPartitions, clients, clock, null, -1);
  }

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochStart start, HeldRows held, int numPartitions,
      KafkaClients clients, Clock clock, String run, long producersFrom) {
    this.conf = conf;
    this.schema = schema;
    this.codec = RowCodec.of(schema, conf);
    this.start = start;
    this.held = held;
    this.numPartitions = numPartitions;
    this.clients = clients;
    this.clock = clock;
    this.run = run;
    this.producersFrom = producersFrom;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
    if (epochId <= start.lastEpoch()) {
      return new Committed();
    }
    KplexDataWriter out = KplexDataWriter.forTask(conf, codec, partitionId, null, clients,
        new ExactlyOnceDataWriter.Epoch(run, epochId, producersFrom));
    return new StreamingDataWriter(out, conf, schema, codec, start, partitionId, numPartitions, held,
        held.path(epochId, partitionId, numPartitions, taskId), clock);
  }

  /** A task of an epoch this table already committed (Spark runs it again): writes nothing. */
  private static final class Committed implements DataWriter<InternalRow> {
    @Override public void write(InternalRow row) {}
    @Override public WriterCommitMessage commit() { return new EpochCommitMessage(null, null, 0, Map.of(), Map.of(), 0, 0, 0, null); }
    @Override public void abort() {}
    @Override public void close() {}
  }

  @Override
  public String toString() {
    return "StreamingWriterFactory(" + conf + ", after epoch " + start.lastEpoch() + ")";
  }
}
