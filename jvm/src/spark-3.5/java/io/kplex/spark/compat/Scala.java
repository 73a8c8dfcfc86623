package io.kplex.spark.compat;

import java.util.List;
import java.util.Map;
import scala.collection.JavaConverters;

/**
 * Scala collections to Java and back, for Spark 3.5 (Scala 2.12, which has no
 * {@code scala.jdk.javaapi}). The Spark 4 build compiles its copy from {@code jvm/src/spark-4}.
 */
public final class Scala {
  private Scala() {}

  public static <T> List<T> asJava(scala.collection.Seq<T> seq) {
    return JavaConverters.seqAsJavaListConverter(seq).asJava();
  }

  public static <K, V> Map<K, V> asJava(scala.collection.Map<K, V> map) {
    return JavaConverters.mapAsJavaMapConverter(map).asJava();
  }

  /** An immutable Scala list, which 3.5's {@code scala.collection.Seq} parameters take. */
  public static <T> scala.collection.immutable.List<T> list(List<T> list) {
    return JavaConverters.asScalaBufferConverter(list).asScala().toList();
  }

  /**
   * The name of a case class's i-th field. Scala 2.12 has no {@code productElementName}, and
   * its class files list lazy vals before the parameters, so the name is found by value: the
   * parameters are the final instance fields, and the one holding the i-th element (the same
   * object) is it; where several hold it (two {@code None}s), the i-th final field.
   */
  public static String fieldName(scala.Product p, int i) {
    Object element = p.productElement(i);
    java.util.List<String> finals = new java.util.ArrayList<>();
    java.util.List<String> holding = new java.util.ArrayList<>();
    for (java.lang.reflect.Field f : p.getClass().getDeclaredFields()) {
      int mod = f.getModifiers();
      if (java.lang.reflect.Modifier.isStatic(mod) || !java.lang.reflect.Modifier.isFinal(mod)) continue;
      finals.add(f.getName());
      try {
        f.setAccessible(true);
        Object value = f.get(p);
        if (value == element || (value != null && f.getType().isPrimitive() && value.equals(element))) {
          holding.add(f.getName());
        }
      } catch (ReflectiveOperationException | RuntimeException e) {
        // not readable: the position decides
      }
    }
    if (holding.size() == 1) return holding.get(0);
    String positional = i < finals.size() ? finals.get(i) : "";
    return holding.isEmpty() || holding.contains(positional) ? positional : holding.get(0);
  }
}
