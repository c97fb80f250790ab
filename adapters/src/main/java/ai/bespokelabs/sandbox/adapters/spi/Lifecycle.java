package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import io.vertx.core.Future;
import java.math.BigDecimal;

/** Creating and ending sandboxes. The optional operations are called only when their capability is declared. */
public interface Lifecycle {

  /** Creates the sandbox; completes with the provider's id for it (its "provider resource id"). */
  Future<String> create(CreateSandbox request);

  /**
   * The provider's own hourly price of the sandbox {@link #create} just made, for a provider that quotes one per
   * resource (RunPod's live GPU price); the gateway then bills the sandbox at this rate instead of the pricing
   * catalog's. Completes with null when there is no quote; asked once per create, and a failure only means none.
   */
  default Future<BigDecimal> quotedHourlyRate(CreateSandbox request, String providerResourceId) {
    return Future.succeededFuture(null);
  }

  /** Destroys the sandbox from its provider resource id; succeeds when it is already gone. */
  Future<SandboxDestroyed> destroy(DestroySandbox request);

  /**
   * {@link Capability#ADOPT}: attaches this node to a sandbox's still-running resource and completes with its
   * resource id; {@code request.config()} is the stored configuration (env values are never stored). Fails
   * {@code not_found} when the resource is gone.
   */
  default Future<String> adopt(CreateSandbox request, String providerResourceId) {
    return Future.failedFuture(new IllegalStateException("adopt is not declared"));
  }

  /** {@link Capability#SNAPSHOT}: snapshots the file system; completes with an id {@code snapshot_id} accepts. */
  default Future<String> snapshot(SnapshotSandbox request) {
    return Future.failedFuture(new IllegalStateException("snapshot is not declared"));
  }

  /**
   * {@link Capability#PROVIDER_TIMEOUT}: the sandbox's deadline was just set to {@code request.timeoutSecs()}
   * from now; the provider's own lifetime for it moves along. (The supervisor enforces the gateway's deadline
   * for every backend either way.)
   */
  default Future<Void> extendTimeout(SetTimeout request) {
    return Future.failedFuture(new IllegalStateException("provider_timeout is not declared"));
  }
}
