package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
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

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("RAY_ADDRESS", "address"),
        Setting.of("RAY_JOB_TOKEN", "jobToken"),
        Setting.of("RAY_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return RaySettings.from(e.settings()).map(s -> new RayProvider(e.vertx(), s));
  }
}
