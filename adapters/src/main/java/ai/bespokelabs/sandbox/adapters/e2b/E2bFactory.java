package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code e2b} backend ({@link BackendFactory}). */
public final class E2bFactory implements BackendFactory {
  @Override
  public String name() {
    return E2bProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return E2bSettings.from(e.settings()).map(s -> new E2bProvider(e.vertx(), s, e.clock()));
  }
}
