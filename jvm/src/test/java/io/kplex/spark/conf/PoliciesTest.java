package io.kplex.spark.conf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.fail;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.spec.OptionSpec;
import io.kplex.spark.spec.OptionSpecs;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.Test;

/** The policy enums: their wire names are options.json's choices, parsed in any case. */
public class PoliciesTest {
  private static <E extends Enum<E>> List<String> wire(Class<E> type) {
    List<String> out = new ArrayList<>();
    for (E e : type.getEnumConstants()) out.add(e.toString());
    return out;
  }

  @Test
  public void eachEnumHasExactlyTheChoicesOfItsSetting() {
    assertEquals(OptionSpecs.of(KplexOptions.DELIVERY).choices(), wire(Delivery.class));
    assertEquals(OptionSpecs.of(KplexOptions.NULL_KEY).choices(), wire(NullKeyPolicy.class));
    assertEquals(OptionSpecs.of(KplexOptions.NULL_ORDER).choices(), wire(NullOrderPolicy.class));
    assertEquals(OptionSpecs.of(KplexOptions.LATE_POLICY).choices(), wire(LatePolicy.class));
  }

  @Test
  public void everyChoiceSettingHasAnEnumAndItsDefaultParses() {
    int choices = 0;
    for (OptionSpec spec : OptionSpecs.all()) {
      if (spec.type() == OptionSpec.Type.CHOICE) choices++;
    }
    assertEquals("a choice setting without an enum here", 4, choices);
    assertEquals(Delivery.EXACTLY_ONCE, Delivery.parse(OptionSpecs.of(KplexOptions.DELIVERY).defaultValue()));
    assertEquals(NullKeyPolicy.FAIL, NullKeyPolicy.parse(OptionSpecs.of(KplexOptions.NULL_KEY).defaultValue()));
    assertEquals(NullOrderPolicy.FAIL, NullOrderPolicy.parse(OptionSpecs.of(KplexOptions.NULL_ORDER).defaultValue()));
    assertEquals(LatePolicy.FAIL, LatePolicy.parse(OptionSpecs.of(KplexOptions.LATE_POLICY).defaultValue()));
  }

  @Test
  public void aWireNameParsesInAnyCaseAndPrintsLowerCase() {
    assertEquals(Delivery.AT_LEAST_ONCE, Delivery.parse(" At_Least_Once "));
    assertEquals(NullOrderPolicy.FIRST, NullOrderPolicy.parse("FIRST"));
    assertEquals(LatePolicy.SIDE_TOPIC, LatePolicy.parse("side_topic"));
    assertEquals("side_topic", LatePolicy.SIDE_TOPIC.toString());
    assertEquals("exactly_once", Delivery.EXACTLY_ONCE.wire());
  }

  @Test
  public void anUnknownValueIsNamedWithItsOptionAndTheChoices() {
    refused(Delivery::parse, "twice", "option 'kplex.delivery' = 'twice' is invalid: one of [exactly_once, at_least_once].");
    refused(NullKeyPolicy::parse, "first", "option 'kplex.null_key' = 'first' is invalid: one of [fail, drop].");
    refused(NullOrderPolicy::parse, "last", "option 'kplex.null_order' = 'last' is invalid: one of [fail, drop, first].");
    refused(LatePolicy::parse, "ignore", "option 'kplex.late_policy' = 'ignore' is invalid: one of [fail, drop, side_topic].");
  }

  private static void refused(Function<String, ?> parse, String value, String message) {
    try {
      parse.apply(value);
      fail("accepted " + value);
    } catch (KplexException e) {
      assertEquals("[KPLEX_BAD_OPTION] " + message, e.getMessage());
    }
  }
}
