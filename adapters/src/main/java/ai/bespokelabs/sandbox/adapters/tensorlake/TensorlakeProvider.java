package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code tensorlake} backend over Tensorlake's control plane and its in-sandbox daemon, without an SDK,
 * non-blocking end to end (the Vert.x HTTP client, on the adapter's context).
 *
 * <ul>
 *   <li>lifecycle: create (a 504 resolved by polling for the create's token), destroy, adopt, snapshots
 *       ({@link TensorlakeLifecycle}); Tensorlake cannot move a sandbox's lifetime, so no provider timeout.
 *   <li>executions: daemon processes followed over SSE ({@link TensorlakeExecutions}, {@link TensorlakeExecution}).
 *   <li>inventory: reconciliation by the marks in the sandbox name, and health ({@link TensorlakeInventory}).
 *   <li>files: the daemon's files API, archives built on it ({@link TensorlakeFiles}).
 *   <li>metrics: the sandbox's resources and the daemon's process count ({@link TensorlakeMetrics}).
 * </ul>
 */
public final class TensorlakeProvider implements Backend {
  public static final String BACKEND = "tensorlake";

  private final TensorlakeClient client;
  private final Parts parts;

  public TensorlakeProvider(Vertx vertx, TensorlakeSettings settings) {
    this.client = new TensorlakeClient(vertx, settings);
    TensorlakeSandboxes sandboxes = new TensorlakeSandboxes(client);
    TensorlakeEnv env = new TensorlakeEnv(client);
    this.parts = new Parts(new TensorlakeLifecycle(client, sandboxes, env),
        new TensorlakeExecutions(client, sandboxes, env), new TensorlakeInventory(client, sandboxes),
        new TensorlakeFiles(vertx, client, sandboxes), new TensorlakeMetrics(client, sandboxes));
  }

  @Override
  public Parts parts() {
    return parts;
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
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.CONTAINER, false, true, false, true);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.SNAPSHOT, Capability.METRICS, Capability.ADOPT);
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
