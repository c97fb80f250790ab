package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
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

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("CODECAPSULES_API_KEY", "apiKey"),
        Setting.of("CODECAPSULES_API_URL", "apiUrl", "https://sandbox.codecapsules.io/v1"),
        Setting.of("CODECAPSULES_FLAVOR", "flavor", "python-3.12"),
        Setting.of("CODECAPSULES_TTL_MINUTES", "ttlMinutes", 60),
        Setting.of("CODECAPSULES_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return CodeCapsulesSettings.from(e.settings()).map(s -> new CodeCapsulesProvider(e.vertx(), s));
  }
}
