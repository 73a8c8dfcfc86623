package io.kplex.spark.functions;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.wire.OrderValues;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * {@code kplex_high_before(order, partition, offset)}: the largest order value before this row
 * on its source partition in this micro-batch (NULL: none), as kplex's event-time rule needs it
 * ({@link io.kplex.spark.time.EventTime}: a record is late when it is more than max_delay_ms
 * below the largest order value before it on its own partition). Evaluated in the source's
 * task, which reads each partition's range of the micro-batch in offset order; the sink
 * adds what earlier micro-batches read. Not deterministic: it keeps a running maximum per
 * partition for the task (each task has its own copy of the expression). That state is
 * only right over one range per partition read in offset order, so each row's offset must
 * lie past the last one seen on its partition: a row that does not (state carried over from
 * another task or batch, or rows out of order) fails the task, naming both offsets. Added by
 * {@link SourcePositions}, never called by users.
 */
public final class HighBefore implements ScalarFunction<Long>, Serializable {
  private final DataType orderType;
  private final OrderValues.Reader reader;
  /** Per partition: {largest order value so far (Long.MIN_VALUE: none), last offset}. */
  private transient Map<Integer, long[]> seen;

  public HighBefore(DataType orderType) {
    this.orderType = orderType;
    this.reader = OrderValues.readerFor(orderType);
  }

  @Override
  public DataType[] inputTypes() {
    return new DataType[] {orderType, DataTypes.IntegerType, DataTypes.LongType};
  }

  @Override
  public DataType resultType() {
    return DataTypes.LongType;
  }

  @Override
  public boolean isResultNullable() {
    return true;
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public String name() {
    return "kplex_high_before";
  }

  @Override
  public Long produceResult(InternalRow input) {
    if (seen == null) seen = new HashMap<>();
    if (input.isNullAt(1)) return null;
    int partition = input.getInt(1);
    long offset = input.isNullAt(2) ? Long.MIN_VALUE : input.getLong(2);
    long[] state = seen.get(partition);
    if (state == null) {
      state = new long[] {Long.MIN_VALUE, Long.MIN_VALUE};
      seen.put(partition, state);
    } else if (offset != Long.MIN_VALUE && offset <= state[1]) {
      throw Errors.sourceOutOfOrder(partition, offset, state[1]);
    }
    Long before = state[0] == Long.MIN_VALUE ? null : state[0];
    if (!input.isNullAt(0)) state[0] = Math.max(state[0], reader.read(input, 0));
    if (offset != Long.MIN_VALUE) state[1] = offset;
    return before;
  }
}
