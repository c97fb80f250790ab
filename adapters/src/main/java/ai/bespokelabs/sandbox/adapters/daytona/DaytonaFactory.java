package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code daytona} backend ({@link BackendFactory}). */
public final class DaytonaFactory implements BackendFactory {
  @Override
  public String name() {
    return DaytonaProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return DaytonaSettings.from(e.settings()).map(s -> new DaytonaProvider(e.vertx(), s, e.pricing(), e.clock()));
  }
}
