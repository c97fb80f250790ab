package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * Reconciliation and health: the sandboxes whose name carries our marks ({@link TensorlakeMarks}; Tensorlake's
 * list filters by nothing else), and one authenticated snapshot list as the health check. Tensorlake reports
 * no cost, so none is given.
 */
final class TensorlakeInventory implements Inventory {
  private final TensorlakeClient client;
  private final TensorlakeSandboxes sandboxes;

  TensorlakeInventory(TensorlakeClient client, TensorlakeSandboxes sandboxes) {
    this.client = client;
    this.sandboxes = sandboxes;
  }

  /** {@code GET /snapshots}: one authenticated call that touches no sandbox. */
  @Override
  public Future<Void> checkHealth() {
    return client.expect("health", false, HttpMethod.GET, client.api("/snapshots"), null, null).mapEmpty();
  }

  @Override
  public Future<List<Resource>> list() {
    return sandboxes.list("list", m -> true).map(found -> {
      List<Resource> out = new ArrayList<>();
      for (JsonObject s : found) {
        TensorlakeMarks marks = TensorlakeMarks.parse(s.getString("name"));
        out.add(new Resource(TensorlakeSandboxes.id(s), marks.sandboxId(), status(s.getString("status")), null));
      }
      return out;
    });
  }

  static String status(String state) {
    if (state == null || TensorlakeSandboxes.PROVISIONING.contains(state)) {
      return "provisioning";
    }
    if (TensorlakeSandboxes.STOPPED.contains(state)) {
      return "stopping";
    }
    if (TensorlakeSandboxes.GONE.contains(state)) {
      return "terminated";
    }
    return "running";
  }
}
