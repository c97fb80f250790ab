package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;

/**
 * How the gateway reaches a Ray cluster's Jobs API, from the provider settings (defaults in
 * {@code conf/gateway.json}, {@code providers.ray}).
 *
 * @param address the dashboard URL ({@code RAY_ADDRESS}, e.g. {@code http://head:8265}); required
 * @param token the cluster's auth token ({@code RAY_JOB_TOKEN}), sent as {@code Authorization: Bearer}; null
 *     for a cluster without token authentication
 * @param requestTimeout bound of one API call ({@code RAY_REQUEST_TIMEOUT_SECS})
 */
public record RaySettings(String address, Secret token, Duration requestTimeout) {

  public RaySettings {
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    address = ProviderSettings.httpUrl("RAY_ADDRESS", address);
  }

  /** The settings, empty when {@code RAY_ADDRESS} is not configured (the backend is then not offered). */
  public static java.util.Optional<RaySettings> from(ProviderSettings s) {
    return s.get("RAY_ADDRESS").map(address -> new RaySettings(address, s.secret("RAY_JOB_TOKEN").orElse(null),
        Duration.ofSeconds(positive(s, "RAY_REQUEST_TIMEOUT_SECS"))));
  }

  private static long positive(ProviderSettings s, String key) {
    String v = s.get(key).orElse(null);
    try {
      long n = v == null ? 0 : Long.parseLong(v);
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new ConfigException(key + " must be a positive number");
  }

  /** Never prints the token. */
  @Override
  public String toString() {
    return "RaySettings[address=" + address + ", token=" + (token == null ? "none" : "set") + "]";
  }
}
