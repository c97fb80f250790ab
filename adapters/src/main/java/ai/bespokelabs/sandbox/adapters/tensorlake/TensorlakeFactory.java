package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code tensorlake} backend ({@link BackendFactory}). */
public final class TensorlakeFactory implements BackendFactory {
  @Override
  public String name() {
    return TensorlakeProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return TensorlakeSettings.from(e.settings()).map(s -> new TensorlakeProvider(e.vertx(), s));
  }
}
