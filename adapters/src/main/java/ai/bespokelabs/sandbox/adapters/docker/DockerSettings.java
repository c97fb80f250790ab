package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.util.Objects;

/**
 * The docker backend's settings ({@code providers.docker} in {@code conf/gateway.json}).
 *
 * @param host where the Docker Engine API listens ({@code DOCKER_HOST}): {@code unix:///path/to.sock} or
 *     {@code tcp://host:port}
 * @param image image of sandboxes that name none ({@code BESPOKE_DOCKER_IMAGE})
 */
public record DockerSettings(String host, String image) {
  public DockerSettings {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(image, "image");
  }

  public static DockerSettings from(ProviderSettings s) {
    return new DockerSettings(s.value("DOCKER_HOST"), s.value("BESPOKE_DOCKER_IMAGE"));
  }
}
