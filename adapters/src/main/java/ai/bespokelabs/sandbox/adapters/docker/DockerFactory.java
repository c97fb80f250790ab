package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
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

  @Override
  public Optional<Backend> create(Environment e) {
    return Optional.of(new DockerProvider(e.vertx(), DockerSettings.from(e.settings())));
  }
}
