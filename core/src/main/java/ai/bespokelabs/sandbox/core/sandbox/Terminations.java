package ai.bespokelabs.sandbox.core.sandbox;

import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import io.vertx.core.Future;
import java.time.OffsetDateTime;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The one way a sandbox ends, whoever ends it (an operator's DELETE, the supervisor at the deadline or for a
 * termination left half-done, a node stopping with its host sandboxes): its provider resource is destroyed, then
 * the outcome is recorded, {@code destroyed} with the reason or {@code failed} with the provider's error. Also the
 * one way a provider resource no sandbox holds is removed (an orphan, the sandbox of a create that did not go
 * through).
 */
public final class Terminations {
  private final RuntimeClient runtime;
  private final SandboxRepository sandboxes;

  /** A sandbox whose termination has begun (it is {@code stopping}) and why it ends. */
  public record Ending(String sandboxId, String backend, String nodeId, String providerResourceId, String reason) {}

  public Terminations(RuntimeClient runtime, SandboxRepository sandboxes) {
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.sandboxes = Objects.requireNonNull(sandboxes, "sandboxes");
  }

  /** {@link #terminate(Ending, String, Supplier, Function)} through the sandbox's adapter. */
  public Future<SandboxRecord> terminate(Ending e, String byKeyId, Supplier<OffsetDateTime> endedAt) {
    return terminate(e, byKeyId, endedAt, msg -> runtime.destroy(e.backend(), e.nodeId(), msg));
  }

  /**
   * Destroys the sandbox with {@code destroy} and records the outcome at {@code endedAt}: completes with the
   * destroyed sandbox, or, once the failure is recorded, fails with the {@link ProviderException} of the provider's
   * error (a failure that is not in the contract is recorded as a normalized one). A failure to record fails as it
   * is.
   *
   * @param byKeyId the key that asked for the termination (null: the gateway itself)
   */
  public Future<SandboxRecord> terminate(Ending e, String byKeyId, Supplier<OffsetDateTime> endedAt,
      Function<DestroySandbox, Future<?>> destroy) {
    Future<?> destroyed;
    try {
      destroyed = destroy.apply(new DestroySandbox(e.sandboxId(), e.providerResourceId(), e.reason()));
    } catch (RuntimeException t) {
      destroyed = Future.failedFuture(t);
    }
    return destroyed.transform(ar -> {
      if (ar.succeeded()) {
        return sandboxes.finishTermination(e.sandboxId(), byKeyId, e.reason(), endedAt.get());
      }
      ProviderError error = ar.cause() instanceof ProviderException pe ? pe.error()
          : BusFailures.normalize(e.backend(), "destroy");
      return sandboxes.failTermination(e.sandboxId(), error, endedAt.get())
          .compose(v -> Future.<SandboxRecord>failedFuture(new ProviderException(error)));
    });
  }

  /**
   * Destroys a provider resource no live sandbox holds: an orphan found by reconciliation, or the sandbox a
   * provider made for a create whose row was never inserted.
   */
  public Future<SandboxDestroyed> discard(String backend, String nodeId, String sandboxId, String providerResourceId) {
    return runtime.destroy(backend, nodeId, new DestroySandbox(sandboxId, providerResourceId));
  }
}
