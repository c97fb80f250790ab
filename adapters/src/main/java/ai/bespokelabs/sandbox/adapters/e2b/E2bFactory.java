package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
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

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("E2B_API_KEY", "apiKey"),
        Setting.of("E2B_API_URL", "apiUrl"),
        Setting.of("E2B_DOMAIN", "domain", "e2b.app"),
        Setting.of("E2B_SANDBOX_URL", "sandboxUrl"),
        Setting.of("E2B_TEMPLATE", "template", "base"),
        Setting.of("E2B_SCOPE", "scope", "default"),
        Setting.of("E2B_SANDBOX_TIMEOUT_SECS", "sandboxTimeoutSecs", 3600),
        Setting.of("E2B_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return E2bSettings.from(e.settings()).map(s -> new E2bProvider(e.vertx(), s, e.clock()));
  }
}
