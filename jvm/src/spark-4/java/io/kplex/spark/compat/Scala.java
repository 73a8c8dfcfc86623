package io.kplex.spark.compat;

import java.util.List;
import java.util.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Scala collections to Java and back, for Spark 4 (Scala 2.13). The Spark 3.5 build
 * (Scala 2.12) compiles its own copy of this class from {@code jvm/src/spark-3.5}; the
 * shared code calls only these methods, so it compiles against either Scala.
 */
public final class Scala {
  private Scala() {}

  public static <T> List<T> asJava(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }

  public static <K, V> Map<K, V> asJava(scala.collection.Map<K, V> map) {
    return CollectionConverters.asJava(map);
  }

  /** An immutable Scala list: what Spark 4's {@code Seq} parameters take (3.5's too). */
  public static <T> scala.collection.immutable.List<T> list(List<T> list) {
    return CollectionConverters.asScala(list).toList();
  }

  /** The name of a case class's i-th field. */
  public static String fieldName(scala.Product p, int i) {
    return p.productElementName(i);
  }
}
