package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The E2B backend's settings ({@code providers.e2b} in {@code conf/gateway.json}, which holds the defaults),
 * under the variable names E2B's own SDKs read where they exist.
 *
 * @param apiUrl control plane base URL ({@code E2B_API_URL}, else {@code https://api.<domain>})
 * @param apiKey team API key ({@code E2B_API_KEY}), sent as {@code X-API-Key}
 * @param domain sandbox domain ({@code E2B_DOMAIN}) when a sandbox names none
 * @param sandboxUrl envd base URL for every sandbox ({@code E2B_SANDBOX_URL}), or null for
 *     {@code https://sandbox.<domain>}; the sandbox is named by headers either way
 * @param template template used when a create names no template, snapshot or image ({@code E2B_TEMPLATE})
 * @param scope stamped on every sandbox and required when listing ({@code E2B_SCOPE}); give each gateway
 *     deployment sharing one E2B team its own, so one never reaps the other's sandboxes as orphans
 * @param sandboxTimeoutSecs E2B lifetime of a sandbox created without {@code timeout_secs}
 *     ({@code E2B_SANDBOX_TIMEOUT_SECS})
 * @param requestTimeout bound of one control-plane or unary envd call ({@code E2B_REQUEST_TIMEOUT_SECS})
 */
public record E2bSettings(String apiUrl, Secret apiKey, String domain, String sandboxUrl, String template,
    String scope, int sandboxTimeoutSecs, Duration requestTimeout) {
  public E2bSettings {
    Objects.requireNonNull(apiUrl, "apiUrl");
    Objects.requireNonNull(apiKey, "apiKey");
    apiUrl = stripSlash(apiUrl);
    sandboxUrl = sandboxUrl == null ? null : stripSlash(sandboxUrl);
  }

  /** The settings when {@code E2B_API_KEY} is configured; empty otherwise (the backend is then not offered). */
  public static Optional<E2bSettings> from(ProviderSettings p) {
    Optional<Secret> key = p.secret("E2B_API_KEY");
    if (key.isEmpty()) {
      return Optional.empty();
    }
    String domain = p.value("E2B_DOMAIN");
    String apiUrl = p.get("E2B_API_URL").map(u -> ProviderSettings.httpUrl("E2B_API_URL", u))
        .orElseGet(() -> ProviderSettings.httpUrl("E2B_DOMAIN", "https://api." + domain));
    return Optional.of(new E2bSettings(
        apiUrl,
        key.get(),
        domain,
        p.get("E2B_SANDBOX_URL").map(u -> ProviderSettings.httpUrl("E2B_SANDBOX_URL", u)).orElse(null),
        p.value("E2B_TEMPLATE"),
        p.value("E2B_SCOPE"),
        positive(p, "E2B_SANDBOX_TIMEOUT_SECS"),
        Duration.ofSeconds(positive(p, "E2B_REQUEST_TIMEOUT_SECS"))));
  }

  private static int positive(ProviderSettings p, String name) {
    String raw = p.value(name);
    try {
      int v = Integer.parseInt(raw);
      if (v > 0) {
        return v;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new ConfigException(name + " must be a positive integer");
  }

  private static String stripSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  /** Never prints the key. */
  @Override
  public String toString() {
    return "E2bSettings[apiUrl=" + apiUrl + ", domain=" + domain + ", sandboxUrl=" + sandboxUrl + ", template="
        + template + ", scope=" + scope + "]";
  }
}
