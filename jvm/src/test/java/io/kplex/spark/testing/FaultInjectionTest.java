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
    assertSame(FaultInjection.NONE, of(Map.of("kplex.max_delay_ms", "5"), false));
    assertSame(FaultInjection.NONE, of(Map.of(), true));
    assertFalse(FaultInjection.NONE.any());
    assertFalse(FaultInjection.NONE.commitsOneByOne());
  }

  @Test
  public void aTestingSettingInAJvmTheHarnessDidNotArmIsRefusedNamingIt() {
    for (String key : new String[] {"kplex.testing.halt_after_commits", "kplex.testing.sleep_ms"}) {
      KplexException e = assertThrows(KplexException.class,
          () -> of(Map.of(key, "1", "kplex.max_delay_ms", "5"), false));
      assertEquals("TEST_HOOK", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("'" + key + "'"));
      assertTrue(e.getMessage(), e.getMessage().contains("RESET spark." + key));
      assertTrue(e.getMessage(), e.getMessage().contains(FaultInjection.ARMED_ENV + "=1"));
    }
  }

  @Test
  public void anArmedJvmGetsTheFaultsAskedFor() {
    FaultInjection f = of(Map.of("kplex.testing.halt_after_commits", "1"), true);
    assertTrue(f.commitsOneByOne());
    assertTrue(of(Map.of("kplex.testing.sleep_ms", "10"), true).any());
  }

  @Test
  public void theHooksAreReadAsOptionsJsonDeclaresThemDefaultsAndRangesIncluded() {
    FaultInjection f = of(Map.of("kplex.testing.sleep_ms", "7"), true);
    assertEquals(7, f.sleepMs);
    assertEquals("options.json's defaults", -1, f.failAfterRows);
    assertEquals(1, f.failAttempts);
    assertEquals(-1, f.pendingMemoryBytes);
    KplexException bad = assertThrows(KplexException.class,
        () -> of(Map.of("kplex.testing.fail_attempts", "0"), true));
    assertEquals("BAD_OPTION", bad.code());
    assertTrue(bad.getMessage(), bad.getMessage().contains("kplex.testing.fail_attempts")
        && bad.getMessage().contains("-1 for every attempt"));
    for (io.kplex.spark.spec.OptionSpec spec : io.kplex.spark.spec.OptionSpecs.all()) {
      if (spec.name().startsWith("kplex.testing.")) {
        assertTrue(spec.name() + " is set per write or session", spec.setAs().contains(
            io.kplex.spark.spec.OptionSpec.Scope.WRITE));
      }
    }
  }

  /** As a write reads them: through the settings layer. */
  private static FaultInjection of(Map<String, String> settings, boolean armed) {
    return FaultInjection.of(settings, armed, io.kplex.spark.conf.ConfParser.of(settings)::longConf);
  }
}
