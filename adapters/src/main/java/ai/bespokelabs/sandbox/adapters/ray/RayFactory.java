package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code ray} backend ({@link BackendFactory}). */
public final class RayFactory implements BackendFactory {
  @Override
  public String name() {
    return RayProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return RaySettings.from(e.settings()).map(s -> new RayProvider(e.vertx(), s));
  }
}
