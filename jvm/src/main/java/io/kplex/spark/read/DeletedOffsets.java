package io.kplex.spark.read;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.KplexOptions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;

/**
 * A task's fetch of offsets that the broker deleted (retention, {@code DeleteRecords}) after the
 * read planned them: kplex's consumers never reset on their own ({@code auto.offset.reset =
 * none}), so the fetch fails, and this names what was lost ({@code [KPLEX_DATA_LOSS]
 * DELETED_IN_READ}), or, for a stream with {@code failOnDataLoss = false}, skips to what the
 * partition holds now and says so in the log. A fetch past the partition's end (it went back:
 * truncated, or the topic recreated) fails the same way ({@code END_WENT_BACK}), or skips the
 * rest of the task's range (the next micro-batch's planning finds the partition as it is now).
 */
final class DeletedOffsets {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DeletedOffsets.class);

  private DeletedOffsets() {}

  /**
   * {@code consumer.poll(timeout)}; after a skip, no records (the caller polls again).
   * {@code until}: where the task's range of each partition ends.
   */
  static ConsumerRecords<byte[], byte[]> poll(Consumer<byte[], byte[]> consumer, Duration timeout, ReadConf conf,
      java.util.function.ToLongFunction<TopicPartition> until) {
    try {
      return consumer.poll(timeout);
    } catch (OffsetOutOfRangeException e) {
      for (Map.Entry<TopicPartition, Long> at : e.offsetOutOfRangePartitions().entrySet()) {
        TopicPartition tp = at.getKey();
        long fetched = at.getValue();
        long start = consumer.beginningOffsets(List.of(tp)).get(tp);
        boolean wentBack = fetched >= start;
        long end = wentBack ? consumer.endOffsets(List.of(tp)).get(tp) : -1;
        var lost = wentBack
            ? Errors.dataLoss(Errors.DataLoss.END_WENT_BACK, tp.topic(), tp.partition(), end, fetched,
                KplexOptions.FAIL_ON_DATA_LOSS)
            : Errors.dataLoss(Errors.DataLoss.DELETED_IN_READ, tp.topic(), tp.partition(), fetched, start,
                KplexOptions.FAIL_ON_DATA_LOSS);
        if (!conf.skipDeleted) throw lost;
        LOG.warn("kplex: {} Skipped ({} = false).", lost.text(), KplexOptions.FAIL_ON_DATA_LOSS);
        consumer.seek(tp, wentBack ? Math.max(fetched, until.applyAsLong(tp)) : start);
      }
      return ConsumerRecords.empty();
    }
  }
}
