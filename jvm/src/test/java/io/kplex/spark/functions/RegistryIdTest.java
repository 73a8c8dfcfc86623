package io.kplex.spark.functions;

import static org.junit.Assert.assertEquals;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.junit.Test;

/**
 * The name kplex registers its functions under in a running session: the bare name on a
 * Spark without {@code FunctionRegistry.builtinFunctionIdentifier} (4.1, which these tests
 * compile against), the qualified one where it exists (4.3: the core tests on pyspark
 * 4.3.0 exercise that).
 */
public class RegistryIdTest {
  @Test
  public void aSparkWithoutQualifiedBuiltinNamesTakesTheBareName() throws Exception {
    boolean qualifies = java.util.Arrays.stream(
            Class.forName("org.apache.spark.sql.catalyst.analysis.FunctionRegistry$").getMethods())
        .anyMatch(m -> m.getName().equals("builtinFunctionIdentifier"));
    FunctionIdentifier id = KplexFunctions.registryId("kplex_key");
    assertEquals("kplex_key", id.funcName());
    assertEquals(qualifies, id.catalog().isDefined());
  }
}
