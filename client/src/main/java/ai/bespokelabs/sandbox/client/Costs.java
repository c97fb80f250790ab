package ai.bespokelabs.sandbox.client;

import java.math.BigDecimal;
import java.util.List;

/** Costs grouped by {@code sandbox}, {@code backend} or {@code day} (money is exact). */
public record Costs(String groupBy, List<Item> items) {

  /** One group: its key (a sandbox id, a backend name or a UTC date) and its sums. */
  public record Item(String key, BigDecimal runtimeSeconds, BigDecimal providerCostUsd,
      BigDecimal customerCostUsd) {
  }
}
