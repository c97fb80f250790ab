package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How the gateway reaches RunPod, from the provider settings ({@code providers.runpod} in
 * {@code conf/gateway.json}, where every default lives): {@code RUNPOD_API_KEY} (required; without it the backend
 * is not registered), {@code RUNPOD_API_URL} (REST v1), {@code RUNPOD_IMAGE} and {@code RUNPOD_GPU_TYPE} (a pod's
 * image and GPU type id when the create names none), {@code BESPOKE_RUNPOD_SSH_KEY} (the gateway's SSH private
 * key; unset: {@code <data dir>/runpod/id_ecdsa}, generated on first use), {@code RUNPOD_CREATE_TIMEOUT_SECS}
 * (until a pod's SSH port is mapped) and {@code RUNPOD_REQUEST_TIMEOUT_SECS} (one API call, one SSH connect).
 * The key prints as redacted.
 */
public record RunPodSettings(String apiUrl, Secret apiKey, String image, String gpuType, Path sshKey,
    Path hostKeys, Duration createTimeout, Duration requestTimeout) {

  public RunPodSettings {
    Objects.requireNonNull(apiKey, "apiKey");
    Objects.requireNonNull(sshKey, "sshKey");
    Objects.requireNonNull(hostKeys, "hostKeys");
    apiUrl = url(apiUrl);
    if (image == null || image.isBlank()) {
      throw new ConfigException("RUNPOD_IMAGE is required");
    }
    if (gpuType == null || gpuType.isBlank()) {
      throw new ConfigException("RUNPOD_GPU_TYPE is required");
    }
  }

  private static String url(String value) {
    if (value == null) {
      throw new ConfigException("RUNPOD_API_URL is required");
    }
    String v = value.endsWith("/") ? value.substring(0, value.length() - 1) : value;
    URI uri;
    try {
      uri = URI.create(v);
    } catch (IllegalArgumentException e) {
      throw new ConfigException("RUNPOD_API_URL must be an http(s) URL");
    }
    if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
      throw new ConfigException("RUNPOD_API_URL must be an http(s) URL");
    }
    return v;
  }

  /**
   * The settings, empty when {@code RUNPOD_API_KEY} is not configured; the key pair and the pinned host keys
   * live under {@code dataDir} unless {@code BESPOKE_RUNPOD_SSH_KEY} names the key.
   */
  public static java.util.Optional<RunPodSettings> from(ProviderSettings s, Path dataDir) {
    return s.secret("RUNPOD_API_KEY").map(key -> new RunPodSettings(s.get("RUNPOD_API_URL").orElse(null), key,
        s.get("RUNPOD_IMAGE").orElse(null), s.get("RUNPOD_GPU_TYPE").orElse(null),
        s.get("BESPOKE_RUNPOD_SSH_KEY").map(Path::of).orElse(dataDir.resolve("runpod").resolve("id_ecdsa")),
        dataDir.resolve("runpod").resolve("host-keys.properties"),
        Duration.ofSeconds(seconds(s, "RUNPOD_CREATE_TIMEOUT_SECS")),
        Duration.ofSeconds(seconds(s, "RUNPOD_REQUEST_TIMEOUT_SECS"))));
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
    return "RunPodSettings[apiUrl=" + apiUrl + ", image=" + image + ", gpuType=" + gpuType + ", sshKey=" + sshKey
        + "]";
  }
}
