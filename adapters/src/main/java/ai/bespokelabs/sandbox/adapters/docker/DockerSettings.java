package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.Objects;

/**
 * The docker backend's settings ({@code providers.docker} in {@code conf/gateway.json}).
 *
 * @param host where the Docker Engine API listens ({@code DOCKER_HOST}): {@code unix:///path/to.sock} or
 *     {@code tcp://host:port}
 * @param image image of sandboxes that name none ({@code BESPOKE_DOCKER_IMAGE}), an image name
 * @param images comma-separated glob patterns of the image names sandboxes may give ({@code BESPOKE_DOCKER_IMAGES},
 *     matched against the fully qualified name); null or blank: any name
 * @param egressElsewhere the operator filters the egress of this engine's containers on the engine's own host
 *     ({@code BESPOKE_DOCKER_EGRESS_ELSEWHERE}): a remote or rootless engine, whose containers' traffic this
 *     host's rules never see, is enabled only then
 * @throws ConfigException when the image is no image name or a pattern could match none
 */
public record DockerSettings(String host, String image, String images, boolean egressElsewhere) {
  public DockerSettings {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(image, "image");
    try {
      ImageNames.qualified(image);
    } catch (ApiException e) {
      throw new ConfigException("BESPOKE_DOCKER_IMAGE must be an image name (repository[:tag] or"
          + " repository@sha256:digest): " + image);
    }
    ImageNames.allowing(images, "BESPOKE_DOCKER_IMAGES");
  }

  /** Any image name allowed, egress filtered here. */
  public DockerSettings(String host, String image) {
    this(host, image, null, false);
  }

  public static DockerSettings from(ProviderSettings s) {
    String elsewhere = s.get("BESPOKE_DOCKER_EGRESS_ELSEWHERE").map(String::strip).orElse("false");
    if (!elsewhere.equals("true") && !elsewhere.equals("false")) {
      throw new ConfigException("BESPOKE_DOCKER_EGRESS_ELSEWHERE must be true or false: " + elsewhere);
    }
    return new DockerSettings(s.value("DOCKER_HOST"), s.value("BESPOKE_DOCKER_IMAGE"),
        s.get("BESPOKE_DOCKER_IMAGES").orElse(null), Boolean.parseBoolean(elsewhere));
  }
}
