package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reconciliation and health. A sandbox's resource is the sandbox itself (its id is the resource id): it is
 * listed while its anchor or any of its jobs exists at Ray (Ray lists every job; ours are picked out here by
 * their metadata), so a sandbox the gateway no longer has is found as an orphan even when none of its jobs
 * runs, and one whose anchor vanished is found missing. Health is {@code GET /api/version}.
 */
final class RayInventory implements Inventory {
  private final RayClient client;
  private final RayJobs jobs;

  RayInventory(RayClient client, RayJobs jobs) {
    this.client = client;
    this.jobs = jobs;
  }

  @Override
  public Future<Void> checkHealth() {
    return client.expect("health", false, HttpMethod.GET, "/api/version", null).map(r -> {
      client.object("health", r, false);
      return null;
    });
  }

  /**
   * One resource per sandbox: {@code running} while its anchor exists or one of its jobs is pending or
   * running, else {@code terminated} (only ended jobs are left of it). Ray reports no cost.
   */
  @Override
  public Future<List<Resource>> list() {
    return jobs.ours("list").map(found -> {
      Map<String, String> status = new LinkedHashMap<>();
      for (JsonObject j : found) {
        String sandboxId = RaySandboxes.sandboxOf(j);
        boolean live = RaySandboxes.isAnchor(j) || !RaySandboxes.terminal(j.getString("status"));
        status.merge(sandboxId, live ? "running" : "terminated",
            (a, b) -> a.equals("running") || b.equals("running") ? "running" : "terminated");
      }
      List<Resource> out = new ArrayList<>();
      status.forEach((id, s) -> out.add(new Resource(id, id, s, null)));
      return out;
    });
  }
}
