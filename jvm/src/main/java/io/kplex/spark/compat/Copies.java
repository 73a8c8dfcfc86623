package io.kplex.spark.compat;

import java.lang.reflect.Method;

/**
 * {@code product.copy(field = value)} by the field's name, for Spark's case classes whose fields
 * differ between Spark lines (WriteToStream, DataSourceV2Relation). The one place kplex copies
 * them by reflection, with one failure policy: a class without that field or that copy fails the
 * plan, naming both, rather than planning without kplex's change.
 */
public final class Copies {
  private Copies() {}

  /** An internal error: Spark's plan classes are not what kplex was built against. */
  private static final String UNSUPPORTED =
      "kplex bug, or a Spark version kplex does not support (please report it): cannot plan this: ";

  /** The copy of {@code product} with {@code field} set to {@code value}. */
  @SuppressWarnings("unchecked")
  public static <T extends scala.Product> T with(T product, String field, Object value) {
    Object[] args = new Object[product.productArity()];
    boolean found = false;
    for (int i = 0; i < args.length; i++) {
      boolean mine = Scala.fieldName(product, i).equals(field);
      found |= mine;
      args[i] = mine ? value : product.productElement(i);
    }
    String what = product.getClass().getSimpleName() + "." + field;
    if (!found) throw new IllegalStateException(UNSUPPORTED + what + " does not exist");
    for (Method m : product.getClass().getMethods()) {
      if (m.getName().equals("copy") && m.getParameterCount() == args.length) {
        try {
          return (T) m.invoke(product, args);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(UNSUPPORTED + "the copy of " + what + " failed", e);
        }
      }
    }
    throw new IllegalStateException(UNSUPPORTED + product.getClass().getSimpleName()
        + " has no copy of " + args.length + " fields");
  }
}
