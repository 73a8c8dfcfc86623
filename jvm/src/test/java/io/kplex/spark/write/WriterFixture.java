package io.kplex.spark.write;

import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.kafka.KafkaClients;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * What the data writer tests share: table {@code t} (topic {@code t}, 4 virtual partitions
 * over 2 physical ones), rows of {@code (key STRING, order_value BIGINT, value STRING,
 * headers ARRAY<STRUCT<key STRING, value BINARY>>)}, and Kafka clients whose producer is
 * Kafka's {@code MockProducer}, nothing completed until the test says so.
 */
final class WriterFixture {
  private WriterFixture() {}

  static final String TOPIC = "t";

  static final StructType SCHEMA = new StructType()
      .add("key", DataTypes.StringType)
      .add("order_value", DataTypes.LongType)
      .add("value", DataTypes.StringType)
      .add("headers", DataTypes.createArrayType(new StructType()
          .add("key", DataTypes.StringType).add("value", DataTypes.BinaryType)));

  static final WriteSchema COLUMNS = WriteSchema.resolve(SCHEMA);

  /** The settings of a write into table t; {@code options}: write options, name then value. */
  static WriteConf conf(String... options) {
    Map<String, String> write = new HashMap<>();
    write.put("kafka.bootstrap.servers", "localhost:9");
    for (int i = 0; i < options.length; i += 2) write.put(options[i], options[i + 1]);
    TableDefinition table = TableDefinition.create(TOPIC,
        Map.of("kplex.virtual_partitions", "4", "kplex.physical_partitions", "2"));
    return new WriteConf(table, Map.of(), write);
  }

  static RowCodec codec(WriteConf conf) {
    return RowCodec.of(COLUMNS, conf);
  }

  /** A row; {@code headers}: name then value, as strings (a null name or value stays NULL). */
  static InternalRow row(String key, Long order, String value, String... headers) {
    Object headerArray = null;
    if (headers.length > 0) {
      Object[] pairs = new Object[headers.length / 2];
      for (int i = 0; i < headers.length; i += 2) {
        pairs[i / 2] = new GenericInternalRow(new Object[] {utf8(headers[i]),
            headers[i + 1] == null ? null : headers[i + 1].getBytes(StandardCharsets.UTF_8)});
      }
      headerArray = new GenericArrayData(pairs);
    }
    return new GenericInternalRow(new Object[] {utf8(key), order, utf8(value), headerArray});
  }

  private static UTF8String utf8(String s) {
    return s == null ? null : UTF8String.fromString(s);
  }

  static String text(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
  }

  /** A MockProducer over a cluster where topic t has 2 partitions, recording how it was closed. */
  static final class Producing extends MockProducer<byte[], byte[]> {
    /** The timeout of each close, in order. */
    final List<Duration> closes = new ArrayList<>();
    /** Calls of flush. */
    int flushes;
    /** If set, flush completes the first pending send with it (a send that fails while flushing). */
    RuntimeException failOnFlush;
    /** If set, initTransactions waits for it (a broker slow to open the transaction). */
    volatile CountDownLatch initGate;
    /** Calls of abortTransaction, refused ones included. */
    int aborts;

    Producing() {
      super(cluster(), false, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static Cluster cluster() {
      Node node = new Node(0, "localhost", 9);
      List<PartitionInfo> partitions = List.of(
          new PartitionInfo(TOPIC, 0, node, new Node[] {node}, new Node[] {node}),
          new PartitionInfo(TOPIC, 1, node, new Node[] {node}, new Node[] {node}));
      return new Cluster("kplex", List.of(node), partitions, Set.of(), Set.of());
    }

    @Override
    public synchronized void flush() {
      flushes++;
      if (failOnFlush != null) errorNext(failOnFlush);
      super.flush();
    }

    @Override
    public void close(Duration timeout) {
      closes.add(timeout);
      super.close(timeout);
    }

    @Override
    public void initTransactions() {
      CountDownLatch gate = initGate;
      if (gate != null) {
        try {
          gate.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      super.initTransactions();
    }

    @Override
    public synchronized void abortTransaction() {
      aborts++;
      super.abortTransaction();
    }
  }

  /** Kafka clients that hand out one producer and remember the settings it was made with. */
  static final class Clients implements KafkaClients {
    private static final long serialVersionUID = 1L;
    final transient Producing producer = new Producing();
    transient Map<String, Object> settings;

    @Override
    public Producer<byte[], byte[]> producer(Map<String, Object> props) {
      settings = props;
      return producer;
    }

    @Override
    public Consumer<byte[], byte[]> consumer(Map<String, Object> props) {
      throw new UnsupportedOperationException("a data writer reads nothing");
    }

    @Override
    public Admin admin(Map<String, Object> props) {
      throw new UnsupportedOperationException("a data writer administers nothing");
    }
  }
}
