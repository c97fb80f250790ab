package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code modal} backend ({@link BackendFactory}). */
public final class ModalFactory implements BackendFactory {
  @Override
  public String name() {
    return ModalProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return ModalSettings.from(e.settings()).map(s -> new ModalProvider(e.vertx(), s, e.pricing()));
  }
}
