package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
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

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("DAYTONA_API_KEY", "apiKey"),
        Setting.of("DAYTONA_API_URL", "apiUrl", "https://app.daytona.io/api"),
        Setting.of("DAYTONA_TARGET", "target"),
        Setting.of("DAYTONA_SNAPSHOT", "snapshot"),
        Setting.of("DAYTONA_CREATE_TIMEOUT_SECS", "createTimeoutSecs", 300),
        Setting.of("DAYTONA_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30),
        Setting.of("DAYTONA_MAX_CONNECTIONS", "maxConnections", 32));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return DaytonaSettings.from(e.settings()).map(s -> new DaytonaProvider(e.vertx(), s, e.pricing(), e.clock()));
  }
}
