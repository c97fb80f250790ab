package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How the gateway reaches CodeCapsules, from the provider settings (defaults in {@code conf/gateway.json},
 * {@code providers.codecapsules}).
 *
 * @param apiUrl API base URL ({@code CODECAPSULES_API_URL})
 * @param apiKey API key ({@code CODECAPSULES_API_KEY}), sent as a Bearer token; never printed
 * @param flavor flavor of a sandbox whose create names no template or image ({@code CODECAPSULES_FLAVOR})
 * @param ttlMinutes lifetime of a sandbox created without {@code timeout_secs} ({@code CODECAPSULES_TTL_MINUTES})
 * @param requestTimeout bound of one API call ({@code CODECAPSULES_REQUEST_TIMEOUT_SECS})
 */
public record CodeCapsulesSettings(String apiUrl, Secret apiKey, String flavor, int ttlMinutes,
    Duration requestTimeout) {

  public CodeCapsulesSettings {
    Objects.requireNonNull(apiKey, "apiKey");
    apiUrl = ProviderSettings.httpUrl("CODECAPSULES_API_URL", apiUrl);
    if (!CodeCapsulesWire.FLAVORS.contains(flavor)) {
      throw new ConfigException("CODECAPSULES_FLAVOR must be one of " + new java.util.TreeSet<>(CodeCapsulesWire.FLAVORS));
    }
    if (ttlMinutes < 1 || ttlMinutes > CodeCapsulesWire.MAX_TTL_MINUTES) {
      throw new ConfigException("CODECAPSULES_TTL_MINUTES must be between 1 and " + CodeCapsulesWire.MAX_TTL_MINUTES);
    }
  }

  /** The settings when {@code CODECAPSULES_API_KEY} is configured; empty otherwise (the backend is not offered). */
  public static Optional<CodeCapsulesSettings> from(ProviderSettings p) {
    return p.secret("CODECAPSULES_API_KEY").map(key -> new CodeCapsulesSettings(required(p, "CODECAPSULES_API_URL"),
        key, required(p, "CODECAPSULES_FLAVOR"), positive(p, "CODECAPSULES_TTL_MINUTES"),
        Duration.ofSeconds(positive(p, "CODECAPSULES_REQUEST_TIMEOUT_SECS"))));
  }

  private static String required(ProviderSettings p, String name) {
    return p.get(name).filter(v -> !v.isBlank())
        .orElseThrow(() -> new ConfigException(name + " is required"));
  }

  private static int positive(ProviderSettings p, String name) {
    try {
      int v = Integer.parseInt(required(p, name).trim());
      if (v > 0) {
        return v;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new ConfigException(name + " must be a positive integer");
  }

  /** Never prints the key. */
  @Override
  public String toString() {
    return "CodeCapsulesSettings[apiUrl=" + apiUrl + ", flavor=" + flavor + ", ttlMinutes=" + ttlMinutes + "]";
  }
}
