package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import java.util.Optional;
import java.util.Set;

/**
 * A backend whose settings could not be read (a malformed URL, a bad number): listed by {@code /v1/providers} as
 * not configured with {@code reason}, every request refused with it, while the other backends serve as usual.
 *
 * @param reason the settings error, naming the setting (never a credential)
 */
public record Unconfigured(String name, boolean nodeBound, String reason) implements Backend {

  @Override
  public Set<Capability> capabilities() {
    return Set.of();
  }

  @Override
  public Optional<String> unavailable() {
    return Optional.of(reason);
  }

  /** Fails: {@link AdapterVerticle} then answers every request with {@code backend_not_installed}. */
  @Override
  public Future<Void> start(Context context) {
    return Future.failedFuture(new ConfigException(reason));
  }

  @Override
  public Parts parts() {
    return new Parts(null, null, null, null, null);
  }
}
