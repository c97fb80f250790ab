package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;

/**
 * How the gateway reaches Daytona, from the provider settings ({@code providers.daytona} in
 * {@code conf/gateway.json}, which holds the defaults): {@code DAYTONA_API_KEY} (required), {@code DAYTONA_API_URL},
 * {@code DAYTONA_TARGET} (region; Daytona's default when unset), {@code DAYTONA_SNAPSHOT} (snapshot for
 * sandboxes that name neither image nor snapshot; Daytona's default when unset),
 * {@code DAYTONA_CREATE_TIMEOUT_SECS} (how long a sandbox may take to start), {@code DAYTONA_REQUEST_TIMEOUT_SECS}
 * (one API call) and {@code DAYTONA_MAX_CONNECTIONS} (at most 1024). The key prints as redacted.
 */
public record DaytonaSettings(String apiUrl, Secret apiKey, String target, String snapshot, Duration createTimeout,
    Duration requestTimeout, int maxConnections) {
  public DaytonaSettings {
    Objects.requireNonNull(apiKey, "apiKey");
    apiUrl = ProviderSettings.httpUrl("DAYTONA_API_URL", apiUrl);
  }

  /** The settings, empty when {@code DAYTONA_API_KEY} is not configured. */
  public static java.util.Optional<DaytonaSettings> from(ProviderSettings s) {
    return s.secret("DAYTONA_API_KEY").map(key -> new DaytonaSettings(s.value("DAYTONA_API_URL"), key,
        s.get("DAYTONA_TARGET").orElse(null), s.get("DAYTONA_SNAPSHOT").orElse(null),
        Duration.ofSeconds(positive(s, "DAYTONA_CREATE_TIMEOUT_SECS")),
        Duration.ofSeconds(positive(s, "DAYTONA_REQUEST_TIMEOUT_SECS")),
        (int) Math.min(1024, positive(s, "DAYTONA_MAX_CONNECTIONS"))));
  }

  private static long positive(ProviderSettings s, String key) {
    String v = s.value(key);
    try {
      long n = Long.parseLong(v);
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new ConfigException(key + " must be a positive number");
  }

  public DaytonaSettings withTimeouts(Duration create, Duration request) {
    return new DaytonaSettings(apiUrl, apiKey, target, snapshot, create, request, maxConnections);
  }

  @Override
  public String toString() {
    return "DaytonaSettings[apiUrl=" + apiUrl + ", target=" + target + ", snapshot=" + snapshot + "]";
  }
}
