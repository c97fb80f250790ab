package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Each provider's settings ({@code providers.docker}, {@code providers.e2b}, ... in {@code conf/gateway.json}),
 * handed to the adapters under the providers' own variable names, e.g. {@code DOCKER_HOST},
 * {@code E2B_API_KEY}, {@code DAYTONA_API_URL}. Every setting the file gives a default has a value here (the
 * adapters keep no defaults of their own). Values may be credentials: {@link #toString} names the keys only,
 * and credentials are handed out as {@link Secret}s.
 */
public final class ProviderSettings {
  private final Map<String, String> values;

  private ProviderSettings(Map<String, String> values) {
    this.values = Map.copyOf(values);
  }

  /**
   * The provider variables among {@code all}, a blank or missing one taking its value from {@code defaults}
   * (a setting still blank counts as unset).
   */
  static ProviderSettings from(Map<String, String> all, Map<String, String> defaults) {
    Map<String, String> picked = new TreeMap<>();
    Variables.KEYS.keySet().stream().filter(ProviderSettings::isProviderKey).forEach(k -> {
      String v = all.get(k);
      if (v == null || v.isBlank()) {
        v = defaults.get(k);
      }
      if (v != null && !v.isBlank()) {
        picked.put(k, v.trim());
      }
    });
    return new ProviderSettings(picked);
  }

  /**
   * The settings of {@code overrides} (by variable name; others are ignored) over the defaults of
   * {@code conf/gateway.json}, loaded as the gateway loads them; for a backend built on its own.
   */
  public static ProviderSettings withDefaults(Map<String, String> overrides) {
    return ConfigLoader.providerSettings(overrides);
  }

  /** Whether {@code key} is the variable of a provider's setting. */
  public static boolean isProviderKey(String key) {
    return Variables.isProviderVariable(key);
  }

  /** A plain (non-secret) setting that may be unset. */
  public Optional<String> get(String key) {
    return Optional.ofNullable(values.get(key));
  }

  /** A plain setting that {@code conf/gateway.json} gives a default. */
  public String value(String key) {
    String v = values.get(key);
    if (v == null) {
      throw new ConfigException(key + " needs a value");
    }
    return v;
  }

  /** A credential. */
  public Optional<Secret> secret(String key) {
    return get(key).map(Secret::new);
  }

  /**
   * {@code value}, the setting {@code key}, as an http(s) URL with a host, without a trailing slash; a
   * {@link ConfigException} naming the setting (never its value) otherwise.
   */
  public static String httpUrl(String key, String value) {
    if (value == null) {
      throw new ConfigException(key + " is required");
    }
    String v = value.endsWith("/") ? value.substring(0, value.length() - 1) : value;
    java.net.URI uri;
    try {
      uri = new java.net.URI(v);
    } catch (java.net.URISyntaxException e) {
      throw new ConfigException(key + " must be an http(s) URL");
    }
    if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
      throw new ConfigException(key + " must be an http(s) URL");
    }
    return v;
  }

  @Override
  public String toString() {
    return "ProviderSettings" + new TreeMap<>(values).keySet();
  }
}
