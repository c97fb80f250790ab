package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;

/**
 * How a backend registers itself: each provider package lists its factory in
 * {@code META-INF/services/ai.bespokelabs.sandbox.core.config.BackendSettings}, and the composition root builds
 * whatever factories the class path holds, naming none. A factory declares the settings it reads (names,
 * defaults: {@link #settings()}), and reads them typed and checked when it builds its backend.
 */
public interface BackendFactory extends ai.bespokelabs.sandbox.core.config.BackendSettings {

  /** What a factory may build its backend from. */
  record Environment(Vertx vertx, ProviderSettings settings, Path dataDir, Clock clock, PricingCatalog pricing) {}

  /** The backend name clients pass, e.g. {@code e2b}. */
  @Override
  String name();

  /** See {@link Backend#nodeBound()}: needed before the settings are read, to list a backend they broke. */
  boolean nodeBound();

  /**
   * The backend, or empty when its settings are absent (a cloud provider without credentials is not offered).
   *
   * @throws ai.bespokelabs.sandbox.core.config.ConfigException when its settings are present but cannot be read
   */
  Optional<Backend> create(Environment environment);
}
