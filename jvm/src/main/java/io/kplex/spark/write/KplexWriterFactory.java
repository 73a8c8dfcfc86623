package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.txn.ReadByOthers;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/**
 * Shipped to the executors: the resolved settings, how rows become records ({@link RowCodec}),
 * where each virtual partition stands and where Kafka clients come from.
 */
final class KplexWriterFactory implements DataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final RowCodec codec;
  /** Per virtual partition, the largest order value the table already holds. */
  private final Map<Integer, Long> floor;
  private final KafkaClients clients;
  /** What other writers of the table read of the write's source ({@link KplexDataWriter#skipping}). */
  private final ReadByOthers readBefore;

  KplexWriterFactory(WriteConf conf, WriteSchema schema, Map<Integer, Long> floor, ReadByOthers readBefore) {
    this(conf, schema, floor, KafkaClients.REAL, readBefore);
  }

  KplexWriterFactory(WriteConf conf, WriteSchema schema, Map<Integer, Long> floor, KafkaClients clients) {
    this(conf, schema, floor, clients, ReadByOthers.NONE);
  }

  private KplexWriterFactory(WriteConf conf, WriteSchema schema, Map<Integer, Long> floor, KafkaClients clients,
      ReadByOthers readBefore) {
    this.readBefore = readBefore;
    this.conf = conf;
    this.schema = schema;
    this.codec = RowCodec.of(schema, conf);
    this.floor = floor;
    this.clients = clients;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return KplexDataWriter.forTask(conf, codec, partitionId, floor, clients).skipping(readBefore);
  }

  @Override
  public String toString() {
    return "KplexWriterFactory(" + conf + ", " + schema + ")";
  }
}
