package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code daytona} backend over Daytona's REST control plane and its in-sandbox toolbox, without an SDK,
 * non-blocking end to end (the Vert.x HTTP and WebSocket clients, on the adapter's context).
 *
 * <ul>
 *   <li>lifecycle: create, destroy, adopt and the provider's own lifetime ({@link DaytonaLifecycle}).
 *   <li>executions: one toolbox session per execution ({@link DaytonaExecutions}, {@link DaytonaExecution}).
 *   <li>inventory: reconciliation by our {@code managed} label and health ({@link DaytonaInventory}).
 *   <li>files: the toolbox's files API ({@link DaytonaFiles}).
 *   <li>metrics: the sandbox's resources and the newest points of its telemetry ({@link DaytonaMetrics}).
 * </ul>
 */
public final class DaytonaProvider implements Backend {
  private final Parts parts;
  public static final String BACKEND = "daytona";
  static final String LABEL_MANAGED = "bespokelabs.ai/managed";
  static final String LABEL_SANDBOX = "bespokelabs.ai/sandbox-id";
  static final String LABEL_ORGANIZATION = "bespokelabs.ai/organization-id";
  static final String LABEL_CREATE_TOKEN = "bespokelabs.ai/create-token";

  private final DaytonaClient client;
  private final DaytonaSandboxes sandboxes;
  private final DaytonaLifecycle lifecycle;
  private final DaytonaExecutions executions;
  private final DaytonaInventory inventory;
  private final DaytonaFiles files;
  private final DaytonaMetrics metrics;

  /** @param pricing the catalog pricing the inventory's live cost estimate; null for no estimate */
  public DaytonaProvider(Vertx vertx, DaytonaSettings settings, PricingCatalog pricing, Clock clock) {
    this.client = new DaytonaClient(vertx, BACKEND, settings);
    this.sandboxes = new DaytonaSandboxes(client, settings);
    this.lifecycle = new DaytonaLifecycle(client, settings, sandboxes);
    this.executions = new DaytonaExecutions(client, sandboxes);
    this.inventory = new DaytonaInventory(client, sandboxes, pricing, clock);
    this.files = new DaytonaFiles(vertx, client, sandboxes);
    this.metrics = new DaytonaMetrics(client, sandboxes, clock);
    this.parts = new Parts(lifecycle, executions, inventory, files, metrics);
  }

  /** Sandboxes per list page (Daytona allows up to 200); smaller in tests to cross pages. */
  DaytonaProvider pageSize(int size) {
    sandboxes.pageSize(size);
    return this;
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
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.VM, true, true, false, true);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.METRICS, Capability.ADOPT, Capability.PROVIDER_TIMEOUT);
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
