package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.outbox.OutboxConsumer;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.sqlclient.SqlConnection;
import java.util.Iterator;
import java.util.List;

/**
 * Turns lifecycle events into money, inside the outbox batch's transaction: a destroyed or failed sandbox
 * gets its lifecycle cost at that moment, a finished execution its usage. Observation ids make every
 * event idempotent, so a batch replayed after a crash changes nothing.
 */
public final class LedgerHandler implements OutboxConsumer.Handler {
  private final LifecycleCosts costs;
  private final UsageMeter usage;

  public LedgerHandler(LifecycleCosts costs, UsageMeter usage) {
    this.costs = costs;
    this.usage = usage;
  }

  /**
   * Events of one sandbox apply in order; different sandboxes proceed concurrently on the batch's
   * connection (their statements are pipelined), which is where the ledger's throughput comes from.
   */
  @Override
  public Future<Void> handle(SqlConnection conn, List<OutboxConsumer.Event> batch) {
    java.util.Map<String, List<OutboxConsumer.Event>> bySandbox = new java.util.LinkedHashMap<>();
    for (OutboxConsumer.Event e : batch) {
      bySandbox.computeIfAbsent(e.sandboxId(), k -> new java.util.ArrayList<>()).add(e);
    }
    List<Future<Void>> all = new java.util.ArrayList<>(bySandbox.size());
    for (List<OutboxConsumer.Event> events : bySandbox.values()) {
      Promise<Void> done = Promise.promise();
      next(conn, events.iterator(), done);
      all.add(done.future());
    }
    return Future.all(all).mapEmpty();
  }

  /** One event after the other, driven by callbacks rather than a deep compose chain. */
  private void next(SqlConnection conn, Iterator<OutboxConsumer.Event> events, Promise<Void> done) {
    if (!events.hasNext()) {
      done.complete();
      return;
    }
    apply(conn, events.next()).onComplete(ar -> {
      if (ar.failed()) {
        done.fail(ar.cause());
      } else {
        next(conn, events, done);
      }
    });
  }

  /** The observation id of a failure: a failed create, a failed termination, or a resource gone missing. */
  static String failureObservation(OutboxConsumer.Event e) {
    return switch (String.valueOf(e.data().getString("op"))) {
      case "create" -> "create:" + e.sandboxId();
      case "reconcile" -> "missing:" + e.sandboxId() + ":" + e.data().getString("observation_id");
      default -> "terminate-failed:" + e.sandboxId();
    };
  }

  Future<?> apply(SqlConnection conn, OutboxConsumer.Event e) {
    String sandbox = e.sandboxId();
    return switch (e.type()) {
      case "sandbox.destroyed" -> costs.record(conn, sandbox, "terminate:" + sandbox, e.occurredAt(), null);
      case "sandbox.failed" -> costs.record(conn, sandbox, failureObservation(e), e.occurredAt(), null);
      case "sandbox.observed" -> costs.record(conn, sandbox, e.data().getString("observation_id"), e.occurredAt(),
          e.data().getString("provider_cost_usd") == null ? null
              : new java.math.BigDecimal(e.data().getString("provider_cost_usd")));
      case "execution.completed", "execution.timed_out", "execution.cancelled", "execution.failed" ->
          usage.meter(conn, e.executionId(), e.occurredAt());
      default -> Future.succeededFuture();
    };
  }
}
