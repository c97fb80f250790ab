package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * How the gateway reaches Daytona, from the provider settings: {@code DAYTONA_API_KEY} (required),
 * {@code DAYTONA_API_URL} (default the public API), {@code DAYTONA_TARGET} (region; Daytona's default when
 * unset), {@code DAYTONA_SNAPSHOT} (snapshot for sandboxes that name neither image nor snapshot; Daytona's
 * default when unset), {@code DAYTONA_CREATE_TIMEOUT_SECS} (how long a sandbox may take to start, default
 * 300) and {@code DAYTONA_REQUEST_TIMEOUT_SECS} (one API call, default 30). The key prints as redacted.
 */
public record DaytonaSettings(String apiUrl, Secret apiKey, String target, String snapshot, Duration createTimeout,
    Duration requestTimeout, int maxConnections) {
  public static final String DEFAULT_API_URL = "https://app.daytona.io/api";

  public DaytonaSettings {
    Objects.requireNonNull(apiKey, "apiKey");
    apiUrl = apiUrl.endsWith("/") ? apiUrl.substring(0, apiUrl.length() - 1) : apiUrl;
    URI uri = URI.create(apiUrl);
    if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
      throw new ConfigException("DAYTONA_API_URL must be an http(s) URL");
    }
  }

  /** The settings, or null when {@code DAYTONA_API_KEY} is not configured. */
  public static DaytonaSettings from(ProviderSettings s) {
    return s.secret("DAYTONA_API_KEY").map(key -> new DaytonaSettings(s.get("DAYTONA_API_URL", DEFAULT_API_URL), key,
        s.get("DAYTONA_TARGET").orElse(null), s.get("DAYTONA_SNAPSHOT").orElse(null),
        Duration.ofSeconds(seconds(s, "DAYTONA_CREATE_TIMEOUT_SECS", 300)),
        Duration.ofSeconds(seconds(s, "DAYTONA_REQUEST_TIMEOUT_SECS", 30)),
        (int) Math.min(1024, seconds(s, "DAYTONA_MAX_CONNECTIONS", 32)))).orElse(null);
  }

  private static long seconds(ProviderSettings s, String key, long fallback) {
    String v = s.get(key, String.valueOf(fallback));
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
