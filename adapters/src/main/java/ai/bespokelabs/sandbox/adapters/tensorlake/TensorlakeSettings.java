package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;

/**
 * How the gateway reaches Tensorlake, from the provider settings ({@code providers.tensorlake} in
 * {@code conf/gateway.json}, where every default lives): {@code TENSORLAKE_API_KEY} (required; without it the
 * backend is not registered), {@code TENSORLAKE_API_URL} (the control plane), {@code TENSORLAKE_SANDBOX_URL}
 * (the in-sandbox daemon's proxy, used when a sandbox's answer names no {@code sandbox_url} of its own),
 * {@code TENSORLAKE_CREATE_TIMEOUT_SECS} (how long a sandbox or a snapshot may take to be ready) and
 * {@code TENSORLAKE_REQUEST_TIMEOUT_SECS} (one API call). The key prints as redacted.
 */
public record TensorlakeSettings(String apiUrl, Secret apiKey, String sandboxUrl, Duration createTimeout,
    Duration requestTimeout) {

  public TensorlakeSettings {
    Objects.requireNonNull(apiKey, "apiKey");
    apiUrl = ProviderSettings.httpUrl("TENSORLAKE_API_URL", apiUrl);
    sandboxUrl = ProviderSettings.httpUrl("TENSORLAKE_SANDBOX_URL", sandboxUrl);
  }

  /** The settings, empty when {@code TENSORLAKE_API_KEY} is not configured. */
  public static java.util.Optional<TensorlakeSettings> from(ProviderSettings s) {
    return s.secret("TENSORLAKE_API_KEY").map(key -> new TensorlakeSettings(s.get("TENSORLAKE_API_URL").orElse(null),
        key, s.get("TENSORLAKE_SANDBOX_URL").orElse(null),
        Duration.ofSeconds(seconds(s, "TENSORLAKE_CREATE_TIMEOUT_SECS")),
        Duration.ofSeconds(seconds(s, "TENSORLAKE_REQUEST_TIMEOUT_SECS"))));
  }

  private static long seconds(ProviderSettings s, String key) {
    String v = s.get(key).orElseThrow(() -> new ConfigException(key + " is required"));
    try {
      long n = Long.parseLong(v.trim());
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new ConfigException(key + " must be a positive number");
  }

  @Override
  public String toString() {
    return "TensorlakeSettings[apiUrl=" + apiUrl + ", sandboxUrl=" + sandboxUrl + "]";
  }
}
