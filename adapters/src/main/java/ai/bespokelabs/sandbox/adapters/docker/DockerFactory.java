package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
import java.util.Optional;

/** Registers the {@code docker} backend ({@link BackendFactory}). */
public final class DockerFactory implements BackendFactory {
  @Override
  public String name() {
    return DockerProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return true;
  }

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("DOCKER_HOST", "host", "unix:///var/run/docker.sock"),
        Setting.of("BESPOKE_DOCKER_IMAGE", "image", "python:3.12-slim"),
        Setting.of("BESPOKE_DOCKER_IMAGES", "images"),
        Setting.of("BESPOKE_DOCKER_EGRESS_ELSEWHERE", "egressElsewhere", false));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return Optional.of(new DockerProvider(e.vertx(), DockerSettings.from(e.settings())));
  }
}
