import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * What a stream's planning asks of the broker, call by call, on an idle machine
 * (docs/performance.md, Streaming): the topic's description through the Admin client, its end
 * offsets through a read_committed consumer (the calls {@code KplexMicroBatchStream.latestOffset}
 * makes) and through the Admin client, and a description with the Admin's end offsets at once.
 * Medians of N calls of each, three rounds:
 *
 * <pre>java -cp ".cache/kafka-4.1.1/libs/*" bench/AdminTimes.java 127.0.0.1:9092 admin_times 50</pre>
 *
 * (the jars {@code scripts/kafka.sh} fetched; the topic, of 3 partitions, is made if missing).
 */
public final class AdminTimes {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int n = Integer.parseInt(args[2]);
    Properties common = new Properties();
    common.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(common)) {
      try {
        admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
      } catch (ExecutionException exists) {
        // made by an earlier run
      }
      Properties c = new Properties();
      c.putAll(common);
      c.put("isolation.level", "read_committed");
      c.put("key.deserializer", ByteArrayDeserializer.class.getName());
      c.put("value.deserializer", ByteArrayDeserializer.class.getName());
      try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
        List<TopicPartition> tps = new ArrayList<>();
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < 3; p++) {
          tps.add(new TopicPartition(topic, p));
          latest.put(tps.get(p), OffsetSpec.latest());
        }
        ListOffsetsOptions committed = new ListOffsetsOptions(IsolationLevel.READ_COMMITTED);
        for (int round = 1; round <= 3; round++) {
          long[] describe = new long[n];
          long[] consumerEnds = new long[n];
          long[] adminEnds = new long[n];
          long[] together = new long[n];
          for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            admin.describeTopics(List.of(topic)).allTopicNames().get();
            long t1 = System.nanoTime();
            consumer.endOffsets(tps);
            long t2 = System.nanoTime();
            admin.listOffsets(latest, committed).all().get();
            long t3 = System.nanoTime();
            var described = admin.describeTopics(List.of(topic)).allTopicNames();
            var ends = admin.listOffsets(latest, committed).all();
            described.get();
            ends.get();
            long t4 = System.nanoTime();
            describe[i] = t1 - t0;
            consumerEnds[i] = t2 - t1;
            adminEnds[i] = t3 - t2;
            together[i] = t4 - t3;
            Thread.sleep(20);
          }
          System.out.printf("round %d, medians of %d, ms: describe %.2f | consumer endOffsets %.2f"
              + " | admin listOffsets %.2f | describe and listOffsets at once %.2f%n",
              round, n, median(describe), median(consumerEnds), median(adminEnds), median(together));
        }
      }
    }
  }

  private static double median(long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2] / 1e6;
  }
}
