package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Each provider's settings ({@code providers.docker}, {@code providers.e2b}, ... in {@code conf/gateway.json}),
 * handed to the adapters under the providers' own variable names, e.g. {@code DOCKER_HOST},
 * {@code E2B_API_KEY}, {@code DAYTONA_API_URL}. Values may be credentials: {@link #toString} names the keys
 * only, and credentials are handed out as {@link Secret}s.
 */
public final class ProviderSettings {
  private static final ProviderSettings EMPTY = new ProviderSettings(Map.of());

  private final Map<String, String> values;

  private ProviderSettings(Map<String, String> values) {
    this.values = Map.copyOf(values);
  }

  public static ProviderSettings empty() {
    return EMPTY;
  }

  /** The provider variables among {@code all}; blank values count as unset. */
  public static ProviderSettings from(Map<String, String> all) {
    Map<String, String> picked = new TreeMap<>();
    all.forEach((k, v) -> {
      if (isProviderKey(k) && v != null && !v.isBlank()) {
        picked.put(k, v.trim());
      }
    });
    return new ProviderSettings(picked);
  }

  /** Whether {@code key} is the variable of a provider's setting. */
  public static boolean isProviderKey(String key) {
    return Variables.isProviderVariable(key);
  }

  /** A plain (non-secret) setting. */
  public Optional<String> get(String key) {
    return Optional.ofNullable(values.get(key));
  }

  public String get(String key, String fallback) {
    return values.getOrDefault(key, fallback);
  }

  /** A credential. */
  public Optional<Secret> secret(String key) {
    return get(key).map(Secret::new);
  }

  @Override
  public String toString() {
    return "ProviderSettings" + new TreeMap<>(values).keySet();
  }
}
