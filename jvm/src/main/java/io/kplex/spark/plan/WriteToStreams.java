package io.kplex.spark.plan;

import java.lang.reflect.Method;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.streaming.WriteToStream;
import scala.Product;

/** {@code write.copy(field = value)} by the field's name: WriteToStream's fields differ between Spark versions. */
final class WriteToStreams {
  private WriteToStreams() {}

  /** The copy, or {@code write} itself if this Spark has no such copy. */
  static LogicalPlan with(WriteToStream write, String field, Object value) {
    Product p = write;
    Object[] args = new Object[p.productArity()];
    for (int i = 0; i < args.length; i++) {
      args[i] = io.kplex.spark.compat.Scala.fieldName(p, i).equals(field) ? value : p.productElement(i);
    }
    for (Method m : WriteToStream.class.getMethods()) {
      if (m.getName().equals("copy") && m.getParameterCount() == args.length) {
        try {
          return (LogicalPlan) m.invoke(write, args);
        } catch (ReflectiveOperationException e) {
          return write;
        }
      }
    }
    return write;
  }
}
