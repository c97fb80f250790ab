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

  /**
   * Whether this node has what creating a sandbox needs (the isolation tool, the engine's socket, the
   * credentials): false when a create would answer {@code backend_not_installed}. Cheap: no network call.
   */
  default boolean installed() {
    return true;
  }

  /**
   * Why a create is refused although the backend's tool is there, when it is: a fixed sentence for
   * {@code /v1/providers}, never a provider's own text (e.g. its sandbox egress rules are not in force).
   */
  default java.util.Optional<String> unavailableReason() {
    return java.util.Optional.empty();
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
