package ai.bespokelabs.sandbox.adapters.spi;

import java.util.Locale;

/**
 * What a backend can do beyond the lifecycle and executions every backend has. A backend declares its set
 * once ({@link Backend#capabilities()}); the adapter answers {@code feature_not_supported} for the rest
 * without calling the backend, and {@code GET /v1/providers} lists the set.
 */
public enum Capability {
  /** The file API: list, read, write, delete, directory archives ({@link Backend#files()}). */
  FILES,
  /** Live resource samples ({@link Backend#metrics()}). */
  METRICS,
  /** {@link Lifecycle#snapshot}: a snapshot id that {@code snapshot_id} accepts at create. */
  SNAPSHOT,
  /** {@link Lifecycle#adopt}: attach to a still-running resource after a restart or from another node. */
  ADOPT,
  /** {@link Lifecycle#extendTimeout}: the provider keeps its own lifetime for the sandbox, moved along. */
  PROVIDER_TIMEOUT;

  /** The name on the wire, e.g. {@code provider_timeout}. */
  public String wire() {
    return name().toLowerCase(Locale.ROOT);
  }
}
