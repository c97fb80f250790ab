package ai.bespokelabs.sandbox.adapters.spi;

import io.vertx.core.Context;
import io.vertx.core.Future;
import java.util.Set;

/**
 * The adapter SPI: one implementation per backend, split by capability. Every method returns a Vert.x
 * {@link Future} and is called on the adapter verticle's context; no method blocks the caller. Host-process
 * backends run their blocking work through {@code host.BlockingBackend} on a named, bounded worker pool; HTTP
 * backends stay non-blocking end to end.
 *
 * <p>Failures are {@link ai.bespokelabs.sandbox.core.error.ProviderException}s (the provider error contract)
 * or {@link ai.bespokelabs.sandbox.core.error.ApiException}s (the caller's mistake: 404, 409, 422); anything
 * else is reported as an outcome-unknown provider error.
 */
public interface Backend {

  /** The backend name clients pass, e.g. {@code local}. */
  String name();

  /**
   * True when a sandbox's runtime lives on the node that created it (local processes, containers on the
   * node's engine); such sandboxes are created and operated through the node's own address.
   */
  boolean nodeBound();

  /** What this backend offers beyond lifecycle and executions; declared once, constant. */
  Set<Capability> capabilities();

  /** What {@code backend: "auto"} may rely on this backend for; declared once, constant. */
  default PlacementFacts placement() {
    return PlacementFacts.NONE;
  }

  /**
   * Why this node cannot create sandboxes of this backend (a missing isolation tool or engine socket, broken
   * settings), in one sentence of the gateway's own that says what to do; empty when it can. A create then
   * answers {@code backend_not_installed} with this sentence as its message, and {@code /v1/providers} shows it.
   * Cheap: no network call. Never provider text, a credential or a host path.
   */
  default java.util.Optional<String> unavailable() {
    return java.util.Optional.empty();
  }

  /** Whether this node has what creating a sandbox needs: {@link #unavailable()} is empty. */
  default boolean installed() {
    return unavailable().isEmpty();
  }

  /** Called once, on the adapter's context, before any other call: HTTP clients bind to it. */
  default Future<Void> start(Context context) {
    return Future.succeededFuture();
  }

  /** What implements each part of the SPI, built once; {@code files} and {@code metrics} are null unless declared. */
  record Parts(Lifecycle lifecycle, Executions executions, Inventory inventory, FileSystem files, Metrics metrics) {}

  /** The objects implementing its parts. */
  Parts parts();

  default Lifecycle lifecycle() {
    return parts().lifecycle();
  }

  default Executions executions() {
    return parts().executions();
  }

  default Inventory inventory() {
    return parts().inventory();
  }

  /** Present exactly when {@link Capability#FILES} is declared. */
  default FileSystem files() {
    return declared(parts().files(), Capability.FILES);
  }

  /** Present exactly when {@link Capability#METRICS} is declared. */
  default Metrics metrics() {
    return declared(parts().metrics(), Capability.METRICS);
  }

  private <T> T declared(T part, Capability capability) {
    if (part == null || !capabilities().contains(capability)) {
      throw new IllegalStateException(name() + " does not declare " + capability);
    }
    return part;
  }

  /** Releases clients and threads; called once when the adapter stops. */
  default Future<Void> close() {
    return Future.succeededFuture();
  }
}
