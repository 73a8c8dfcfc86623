package io.kplex.spark.describe;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.compat.LeafExec;
import io.kplex.spark.compat.Scala;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code DESCRIBE TABLE EXTENDED} of a kplex table: the rows of Spark's own node, then the
 * table's state ({@link StateRows}), read from the broker when the command runs, on the
 * driver, as Spark's {@code V2CommandExec} does. If the state cannot be read, a row says why
 * and the definition still shows.
 */
public final class DescribeKplexTableExec extends LeafExec {
  /**
   * What the node describes, its one {@code Product} field, so that Spark's copies of a plan
   * ({@code TreeNode.makeCopy}: the public constructor of the product's fields) work.
   */
  public record Described(List<Attribute> output, SparkPlan spark, KplexTable table, Function<KplexTable, String> state) {
    @Override
    public String toString() {
      return table.name();
    }
  }

  private final Described described;
  private transient InternalRow[] result;

  public DescribeKplexTableExec(Described described) {
    this.described = described;
  }

  private synchronized InternalRow[] result() {
    if (result == null) {
      List<InternalRow> rows = new ArrayList<>(Arrays.asList(described.spark().executeCollect()));
      List<StateRows.Row> kplex;
      try {
        kplex = StateRows.of(described.state().apply(described.table()));
      } catch (RuntimeException e) {
        kplex = StateRows.unavailable(e.getMessage());
      }
      for (StateRows.Row r : kplex) rows.add(row(r.name(), r.value(), r.comment()));
      result = rows.toArray(new InternalRow[0]);
    }
    return result;
  }

  private static InternalRow row(String... values) {
    Object[] cells = new Object[values.length];
    for (int i = 0; i < values.length; i++) cells[i] = UTF8String.fromString(values[i]);
    return new GenericInternalRow(cells);
  }

  @Override
  public scala.collection.immutable.List<Attribute> output() {
    return Scala.list(described.output());
  }

  @Override
  public InternalRow[] executeCollect() {
    return result().clone();
  }

  @Override
  public scala.collection.Iterator<InternalRow> executeToIterator() {
    return Scala.list(Arrays.asList(result())).iterator();
  }

  @Override
  public InternalRow[] executeTake(int limit) {
    return Arrays.copyOf(result(), Math.min(Math.max(limit, 0), result().length));
  }

  @Override
  public InternalRow[] executeTail(int limit) {
    InternalRow[] all = result();
    return Arrays.copyOfRange(all, Math.max(0, all.length - Math.max(limit, 0)), all.length);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    return sparkContext().parallelize(Scala.list(Arrays.asList(result())), 1,
        scala.reflect.ClassTag$.MODULE$.apply(InternalRow.class));
  }

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n != 0) throw new IndexOutOfBoundsException(Integer.toString(n));
    return described;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof DescribeKplexTableExec;
  }
}
