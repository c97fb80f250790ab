package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.ProviderMarks;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code modal} backend: Modal's gRPC API ({@code modal.client.ModalClient}) for sandboxes and each task's
 * command router for programs, with the Vert.x gRPC client and the messages generated from Modal's protos at
 * build time. No SDK, and no thread ever waits. Node independent: every operation works from the Modal sandbox
 * id alone.
 */
public final class ModalProvider implements Backend {
  public static final String BACKEND = "modal";
  /** Tags stamped on every sandbox. */
  static final String TAG_SANDBOX = ProviderMarks.SANDBOX_ID;
  static final String TAG_ORG = ProviderMarks.ORGANIZATION_ID;
  static final String TAG_TOKEN = ProviderMarks.CREATE_TOKEN;

  private final ModalClient client;
  private final ModalExecutions executions;
  private final Parts parts;

  /** @param pricing prices the usage Modal reports for reconciliation; null for no provider cost */
  public ModalProvider(Vertx vertx, ModalSettings settings, PricingCatalog pricing) {
    this.client = new ModalClient(vertx, settings);
    ModalLifecycle lifecycle = new ModalLifecycle(client, pricing);
    this.executions = new ModalExecutions(client);
    this.parts = new Parts(lifecycle, executions, lifecycle, new ModalFiles(client), null);
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

  /** Files, snapshots and adoption; metrics and the provider's own timeout are not offered. */
  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.CONTAINER, true, true, false, true);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.SNAPSHOT, Capability.ADOPT);
  }

  @Override
  public Future<Void> close() {
    executions.abandonAll();
    return client.close();
  }
}
