package io.kplex.spark.testing;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import java.util.Map;
import org.junit.Test;

/**
 * The test hooks are off the user surface: a {@code kplex.testing.*} setting is honoured only
 * in a JVM the test harness armed, and refused, naming it, anywhere else.
 */
public class FaultInjectionTest {
  @Test
  public void withoutATestingSettingThereIsNoFaultArmedOrNot() {
    assertSame(FaultInjection.NONE, FaultInjection.of(Map.of("kplex.max_delay_ms", "5"), false));
    assertSame(FaultInjection.NONE, FaultInjection.of(Map.of(), true));
    assertFalse(FaultInjection.NONE.any());
    assertFalse(FaultInjection.NONE.commitsOneByOne());
  }

  @Test
  public void aTestingSettingInAJvmTheHarnessDidNotArmIsRefusedNamingIt() {
    for (String key : new String[] {"kplex.testing.halt_after_commits", "kplex.testing.sleep_ms"}) {
      KplexException e = assertThrows(KplexException.class,
          () -> FaultInjection.of(Map.of(key, "1", "kplex.max_delay_ms", "5"), false));
      assertEquals("TEST_HOOK", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("'" + key + "'"));
      assertTrue(e.getMessage(), e.getMessage().contains("RESET spark." + key));
      assertTrue(e.getMessage(), e.getMessage().contains(FaultInjection.ARMED_ENV + "=1"));
    }
  }

  @Test
  public void anArmedJvmGetsTheFaultsAskedFor() {
    FaultInjection f = FaultInjection.of(Map.of("kplex.testing.halt_after_commits", "1"), true);
    assertTrue(f.commitsOneByOne());
    assertTrue(FaultInjection.of(Map.of("kplex.testing.sleep_ms", "10"), true).any());
  }
}
