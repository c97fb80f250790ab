package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
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

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("TENSORLAKE_API_KEY", "apiKey"),
        Setting.of("TENSORLAKE_API_URL", "apiUrl", "https://api.tensorlake.ai"),
        Setting.of("TENSORLAKE_SANDBOX_URL", "sandboxUrl", "https://sandbox.tensorlake.ai"),
        Setting.of("TENSORLAKE_CREATE_TIMEOUT_SECS", "createTimeoutSecs", 300),
        Setting.of("TENSORLAKE_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return TensorlakeSettings.from(e.settings()).map(s -> new TensorlakeProvider(e.vertx(), s));
  }
}
