package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code ray} backend over the Ray Jobs REST API of a cluster's dashboard, non-blocking end to end (the
 * Vert.x HTTP and WebSocket clients, on the adapter's context).
 *
 * <ul>
 *   <li>lifecycle: a sandbox is a working area on the cluster with an anchor job holding what its jobs need
 *       ({@link RayLifecycle}, {@link RaySandboxes}).
 *   <li>executions: one job per execution, its log tailed over a WebSocket ({@link RayExecutions},
 *       {@link RayExecution}).
 *   <li>inventory: our jobs by their metadata, and {@code GET /api/version} as health ({@link RayInventory}).
 * </ul>
 *
 * No files (the Jobs API has none: code reaches a cluster only as {@code runtime_env} packages fixed at
 * submit), no metrics, no snapshots. Node independent: every node reads a sandbox from its anchor.
 */
public final class RayProvider implements Backend {
  public static final String BACKEND = "ray";

  private final RayClient client;
  private final Parts parts;

  public RayProvider(Vertx vertx, RaySettings settings) {
    this.client = new RayClient(vertx, settings);
    RayJobs jobs = new RayJobs(client);
    RaySandboxes sandboxes = new RaySandboxes(client, jobs);
    this.parts = new Parts(new RayLifecycle(client, jobs, sandboxes), new RayExecutions(client, jobs, sandboxes),
        new RayInventory(client, jobs), null, null);
  }

  @Override
  public String name() {
    return BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.PROCESS, true, false, false, false);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.noneOf(Capability.class);
  }

  @Override
  public Parts parts() {
    return parts;
  }

  @Override
  public Future<Void> start(Context context) {
    client.useContext(context);
    return Future.succeededFuture();
  }

  @Override
  public Future<Void> close() {
    return client.close();
  }
}
