package io.kplex.spark.plan;

import io.kplex.spark.wire.OrderValues;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * {@code kplex_high_before(order, partition)}: the largest order value before this row on
 * its source partition in this micro-batch (NULL: none), as kplex's event-time rule needs it
 * ({@link io.kplex.spark.time.EventTime}: a record is late when it is more than max_delay_ms
 * below the largest order value before it on its own partition). Evaluated in the source's
 * task, which reads each partition's range of the micro-batch in offset order; the sink
 * adds what earlier micro-batches read. Not deterministic: it keeps a running maximum per
 * partition for the task (each task has its own copy of the expression). Added by
 * {@link SourcePositions}, never called by users.
 */
final class HighBefore implements ScalarFunction<Long>, Serializable {
  private final DataType orderType;
  private final OrderValues.Reader reader;
  private transient Map<Integer, Long> highs;

  HighBefore(DataType orderType) {
    this.orderType = orderType;
    this.reader = OrderValues.readerFor(orderType);
  }

  @Override
  public DataType[] inputTypes() {
    return new DataType[] {orderType, DataTypes.IntegerType};
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
    if (highs == null) highs = new HashMap<>();
    if (input.isNullAt(1)) return null;
    int partition = input.getInt(1);
    Long before = highs.get(partition);
    if (!input.isNullAt(0)) {
      long order = reader.read(input, 0);
      if (before == null || order > before) highs.put(partition, order);
    }
    return before;
  }
}
