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
   * The name of a case class's i-th field. Scala 2.12 has no {@code productElementName}; a
   * case class declares its fields in the order of its parameters, before any other field.
   */
  public static String fieldName(scala.Product p, int i) {
    java.util.List<String> names = new java.util.ArrayList<>();
    for (java.lang.reflect.Field f : p.getClass().getDeclaredFields()) {
      if (!java.lang.reflect.Modifier.isStatic(f.getModifiers())) names.add(f.getName());
    }
    return i < names.size() ? names.get(i) : "";
  }
}
