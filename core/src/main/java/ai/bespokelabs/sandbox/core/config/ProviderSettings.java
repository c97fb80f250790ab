package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Provider settings taken from the environment (or the config file) under the providers' own variable
 * names, e.g. {@code DOCKER_HOST}, {@code E2B_API_KEY}, {@code DAYTONA_API_URL}. Values may be credentials:
 * {@link #toString} names the keys only, and credentials are handed out as {@link Secret}s.
 */
public final class ProviderSettings {
  /** Name prefixes of the variables that belong to providers. */
  public static final List<String> PREFIXES = List.of("DOCKER_", "BESPOKE_DOCKER_", "E2B_", "DAYTONA_", "MODAL_",
      "RUNPOD_", "TENSORLAKE_", "RAY_", "CODECAPSULES_");

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

  public static boolean isProviderKey(String key) {
    return PREFIXES.stream().anyMatch(key::startsWith);
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
