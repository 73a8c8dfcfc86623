import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;

/**
 * The Kafka Streams contender of bench/streaming/run.py: the pageviews re-keyed by userid,
 * exactly once (processing.guarantee=exactly_once_v2), as a Kafka Streams user writes it:
 *
 * <pre>
 *   builder.stream(SRC).selectKey((k, v) -> userid(v)).repartition().to(DST)
 * </pre>
 *
 * <p>Keys and values stay bytes; the userid is found by a plain search for
 * {@code "userid":"...} in the JSON value (the generated values have no escapes).
 * The output partition is the default partitioner's (murmur2 of the key). Kafka Streams
 * gives no order beyond the source partition's: records of one user from different
 * source partitions interleave in whatever order the repartition topic receives them.
 *
 * <p>Runs until its standard input closes (the harness's way to stop every contender),
 * then closes the application cleanly. Exits non-zero if the application fails.
 *
 * <pre>
 *   java -cp CLASSES:LIBS/* RekeyStreams BOOTSTRAP SRC DST APPLICATION_ID STATE_DIR [THREADS]
 * </pre>
 */
public final class RekeyStreams {
  private static final byte[] USERID = "\"userid\":\"".getBytes(StandardCharsets.UTF_8);

  private RekeyStreams() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println("usage: RekeyStreams BOOTSTRAP SRC DST APPLICATION_ID STATE_DIR [THREADS]");
      System.exit(2);
    }
    String bootstrap = args[0], source = args[1], target = args[2], applicationId = args[3], stateDir = args[4];
    int threads = args.length > 5 ? Integer.parseInt(args[5]) : 1;

    KafkaStreams streams = new KafkaStreams(topology(source, target), config(bootstrap, applicationId, stateDir, threads));
    CountDownLatch stop = new CountDownLatch(1);
    int[] exitCode = {0};
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("RekeyStreams: failed: " + e);
      exitCode[0] = 1;
      stop.countDown();
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.setStateListener((now, before) -> {
      System.err.println("RekeyStreams: " + before + " -> " + now);
      if (now == KafkaStreams.State.ERROR) {
        exitCode[0] = 1;
        stop.countDown();
      }
    });
    Thread stdin = new Thread(() -> {
      waitForEndOfInput(System.in);
      stop.countDown();
    }, "stdin-watch");
    stdin.setDaemon(true);
    stdin.start();

    streams.start();
    stop.await();
    boolean closed = streams.close(Duration.ofSeconds(30));
    System.err.println("RekeyStreams: closed" + (closed ? "" : " (timed out)"));
    System.exit(exitCode[0] != 0 ? exitCode[0] : closed ? 0 : 3);
  }

  static org.apache.kafka.streams.Topology topology(String source, String target) {
    Serde<byte[]> bytes = Serdes.ByteArray();
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(source, Consumed.with(bytes, bytes))
        .selectKey((key, value) -> userid(value))
        .repartition(Repartitioned.with(bytes, bytes).withName("by-userid"))
        .to(target, Produced.with(bytes, bytes));
    return builder.build();
  }

  static Properties config(String bootstrap, String applicationId, String stateDir, int threads) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.toString(threads));
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class.getName());
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class.getName());
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // Everything else is Kafka Streams' default for exactly_once_v2 (commit.interval.ms=100).
    return props;
  }

  /** The bytes of the value's "userid" string, or null when it has none. */
  static byte[] userid(byte[] value) {
    if (value == null) return null;
    int start = indexOf(value, USERID);
    if (start < 0) return null;
    start += USERID.length;
    for (int end = start; end < value.length; end++) {
      if (value[end] == '"') return Arrays.copyOfRange(value, start, end);
    }
    return null;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) continue outer;
      }
      return i;
    }
    return -1;
  }

  private static void waitForEndOfInput(InputStream in) {
    byte[] buffer = new byte[256];
    try {
      while (in.read(buffer) >= 0) {
        // discard: only the end of input matters
      }
    } catch (IOException e) {
      // a broken pipe is an end of input too
    }
  }
}
