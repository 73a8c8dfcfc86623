import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * The producer ceiling with kplex's records: what {@code ProducerPerformance} does (a payload
 * picked at random per record from the source's real values, as many records as asked), but each
 * record as a kplex exactly-once writer task hands it to the producer (docs/contract.md, wire
 * format): the key (the value's {@code userid}, UTF-8), the {@code kplex.vp} and
 * {@code kplex.order} headers, the virtual partition's physical partition, all in one Kafka
 * transaction committed at the end. Reading, parsing, shuffling and sorting are not in it: what
 * a payload's key, order value and placement are is worked out before the clock starts.
 *
 * <p>Compiled and run by {@code ceiling.py --kplex-records} with the broker's jars:
 * {@code java -cp 'LIBS/*:CLASSES' KplexRecordsCeiling --bootstrap B --topic T --num-records N
 * --payload-file F --v 9 --p 3 --transactional-id ID [--producer-props k=v ...]}. Prints
 * ProducerPerformance's summary line ({@code N records sent, R records/sec (M MB/sec)}, value
 * bytes), timed from the first send to the commit's return.
 */
public final class KplexRecordsCeiling {
  private KplexRecordsCeiling() {}

  /** One payload as kplex's writer sends it: its key, value, headers' bytes and partition. */
  private record Payload(byte[] key, byte[] value, Header vpHeader, byte[] order, int partition) {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new HashMap<>();
    Properties props = new Properties();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--producer-props")) {
        for (i++; i < args.length && !args[i].startsWith("--"); i++) {
          String[] kv = args[i].split("=", 2);
          props.put(kv[0], kv[1]);
        }
        i--;
      } else {
        options.put(args[i].substring(2), args[++i]);
      }
    }
    int v = Integer.parseInt(options.get("v"));
    int p = Integer.parseInt(options.get("p"));
    long records = Long.parseLong(options.get("num-records"));
    String topic = options.get("topic");
    List<Payload> payloads = payloads(Path.of(options.get("payload-file")), v, p);

    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, options.get("bootstrap"));
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, options.get("transactional-id"));
    props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "900000");
    try (KafkaProducer<byte[], byte[]> producer =
             new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      long[] lastOffsets = new long[p];
      Callback callback = (metadata, e) -> {
        if (e != null) {
          System.err.println("send failed: " + e);
          System.exit(1);
        }
        lastOffsets[metadata.partition()] = metadata.offset();
      };
      SplittableRandom random = new SplittableRandom(1);
      long valueBytes = 0;
      long start = System.nanoTime();
      producer.beginTransaction();
      for (long i = 0; i < records; i++) {
        Payload payload = payloads.get(random.nextInt(payloads.size()));
        // As KplexDataWriter.write: a new order header per record, the vp header made once.
        List<Header> headers = Arrays.asList(payload.vpHeader(), new RecordHeader("kplex.order", payload.order()));
        producer.send(new ProducerRecord<>(topic, payload.partition(), null, payload.key(), payload.value(), headers),
            callback);
        valueBytes += payload.value().length;
      }
      producer.commitTransaction();
      double seconds = (System.nanoTime() - start) / 1e9;
      System.out.printf("%d records sent, %.1f records/sec (%.2f MB/sec)%n", records, records / seconds,
          valueBytes / seconds / (1 << 20));
    }
  }

  /** Every line of the payload file with its key, order value and placement. */
  private static List<Payload> payloads(Path file, int v, int p) throws Exception {
    Header[] vpHeaders = new Header[v];
    for (int vp = 0; vp < v; vp++) {
      vpHeaders[vp] = new RecordHeader("kplex.vp", Integer.toString(vp).getBytes(StandardCharsets.US_ASCII));
    }
    List<Payload> out = new ArrayList<>();
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (line.isEmpty()) continue;
      byte[] key = field(line, "\"userid\":\"", '"').getBytes(StandardCharsets.UTF_8);
      byte[] order = field(line, "\"viewtime\":", ',').getBytes(StandardCharsets.US_ASCII);
      int vp = Utils.toPositive(Utils.murmur2(key)) % v;
      out.add(new Payload(key, line.getBytes(StandardCharsets.UTF_8), vpHeaders[vp], order, vp % p));
    }
    if (out.isEmpty()) throw new IllegalArgumentException("no payloads in " + file);
    return out;
  }

  /** The text after {@code name} up to {@code end}, in a pageview's JSON (bench/source.py). */
  private static String field(String json, String name, char end) {
    int from = json.indexOf(name);
    if (from < 0) throw new IllegalArgumentException("no " + name + " in payload " + json);
    from += name.length();
    return json.substring(from, json.indexOf(end, from));
  }
}
