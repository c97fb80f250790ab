package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.List;

/** What the provider holds, for reconciliation, orphan cleanup and health. */
public interface Inventory {

  /** The provider's resources that carry our marks; node-bound backends list this node's. */
  Future<List<Resource>> list();

  /**
   * As {@link #list()}, given the resource ids of the sandboxes the gateway holds live on this backend (this
   * node's, for a node-bound one): every sandbox reconciliation judges is among them. A backend that cannot list
   * looks these up one by one instead (a resource it does not find is missing; orphans stay unseen).
   */
  default Future<List<Resource>> list(List<String> known) {
    return list();
  }

  /**
   * A real, cheap check that the backend can serve (local: spawn a process; cloud: an authenticated call).
   * Fails when not healthy; the reason never leaves the adapter.
   */
  Future<Void> checkHealth();

  /**
   * Public facts the operator needs to set the provider up, added to the backend's entry of
   * {@code GET /v1/providers/{backend}} (e.g. runpod's SSH public key to register). Never a secret; empty by
   * default.
   */
  default Future<JsonObject> details() {
    return Future.succeededFuture(new JsonObject());
  }
}
