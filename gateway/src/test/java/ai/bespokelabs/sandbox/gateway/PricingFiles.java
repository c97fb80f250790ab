package ai.bespokelabs.sandbox.gateway;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Operator pricing catalogs for test gateways. */
final class PricingFiles {
  private PricingFiles() {}

  /**
   * The gateway settings that price with {@code catalog} (the JSON of a pricing file), plus {@code extra} as
   * name-value pairs.
   */
  static Map<String, String> settings(String catalog, String... extra) {
    try {
      Path file = Files.createTempFile("pricing-", ".json");
      Files.writeString(file, catalog);
      Map<String, String> out = new HashMap<>();
      out.put("BESPOKE_PRICING_FILE", file.toString());
      for (int i = 0; i < extra.length; i += 2) {
        out.put(extra[i], extra[i + 1]);
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
