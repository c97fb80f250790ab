package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.Optional;

/** Registers the {@code runpod} backend ({@link BackendFactory}). */
public final class RunPodFactory implements BackendFactory {
  @Override
  public String name() {
    return RunPodProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return RunPodSettings.from(e.settings(), e.dataDir()).map(s -> new RunPodProvider(e.vertx(), s, e.clock()));
  }
}
