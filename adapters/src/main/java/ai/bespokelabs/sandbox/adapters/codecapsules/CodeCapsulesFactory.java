package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code codecapsules} backend ({@link BackendFactory}). */
public final class CodeCapsulesFactory implements BackendFactory {
  @Override
  public String name() {
    return CodeCapsulesProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return CodeCapsulesSettings.from(e.settings()).map(s -> new CodeCapsulesProvider(e.vertx(), s));
  }
}
