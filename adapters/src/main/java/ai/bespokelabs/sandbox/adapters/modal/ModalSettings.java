package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The Modal backend's settings, under the variable names Modal's own SDKs read where they exist. Every default
 * lives in {@code conf/gateway.json} ({@code providers.modal}).
 *
 * @param serverUrl the API server ({@code MODAL_SERVER_URL}); {@code https://} is gRPC over TLS, {@code http://}
 *     plaintext HTTP/2 (a local server)
 * @param tokenId token id ({@code MODAL_TOKEN_ID}), sent as {@code x-modal-token-id}
 * @param tokenSecret token secret ({@code MODAL_TOKEN_SECRET}), sent as {@code x-modal-token-secret}
 * @param environment Modal environment ({@code MODAL_ENVIRONMENT}), or null for the workspace's default
 * @param appName app the sandboxes belong to when a create names none ({@code MODAL_APP_NAME}); reconciliation
 *     lists this app's sandboxes
 * @param image registry image of a sandbox that names neither {@code image} nor {@code snapshot_id}
 *     ({@code MODAL_IMAGE})
 * @param sandboxTimeoutSecs Modal lifetime of a sandbox created without {@code timeout_secs}
 *     ({@code MODAL_SANDBOX_TIMEOUT_SECS})
 * @param createTimeout how long a create may wait for its image to be built ({@code MODAL_CREATE_TIMEOUT_SECS})
 * @param requestTimeout bound of one unary call ({@code MODAL_REQUEST_TIMEOUT_SECS})
 */
public record ModalSettings(String serverUrl, Secret tokenId, Secret tokenSecret, String environment, String appName,
    String image, int sandboxTimeoutSecs, Duration createTimeout, Duration requestTimeout) {

  public ModalSettings {
    Objects.requireNonNull(tokenId, "tokenId");
    Objects.requireNonNull(tokenSecret, "tokenSecret");
    Objects.requireNonNull(createTimeout, "createTimeout");
    serverUrl = ProviderSettings.httpUrl("MODAL_SERVER_URL", serverUrl);
  }

  /** The settings when both {@code MODAL_TOKEN_ID} and {@code MODAL_TOKEN_SECRET} are set; empty otherwise. */
  public static Optional<ModalSettings> from(ProviderSettings p) {
    Optional<Secret> id = p.secret("MODAL_TOKEN_ID");
    Optional<Secret> secret = p.secret("MODAL_TOKEN_SECRET");
    if (id.isEmpty() || secret.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new ModalSettings(required(p, "MODAL_SERVER_URL"), id.get(), secret.get(),
        p.get("MODAL_ENVIRONMENT").filter(s -> !s.isBlank()).orElse(null), required(p, "MODAL_APP_NAME"),
        required(p, "MODAL_IMAGE"), positive(p, "MODAL_SANDBOX_TIMEOUT_SECS"),
        Duration.ofSeconds(positive(p, "MODAL_CREATE_TIMEOUT_SECS")),
        Duration.ofSeconds(positive(p, "MODAL_REQUEST_TIMEOUT_SECS"))));
  }

  private static String required(ProviderSettings p, String name) {
    return p.get(name).filter(s -> !s.isBlank())
        .orElseThrow(() -> new ConfigException(name + " is required when the modal backend is configured"));
  }

  private static int positive(ProviderSettings p, String name) {
    String raw = required(p, name);
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

  /** Never prints the token. */
  @Override
  public String toString() {
    return "ModalSettings[serverUrl=" + serverUrl + ", environment=" + environment + ", appName=" + appName
        + ", image=" + image + "]";
  }
}
