package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.outbox.OutboxConsumer;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlConnection;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns lifecycle events into money, inside the outbox batch's transaction: a destroyed or failed sandbox
 * gets its lifecycle cost at that moment, a provider observation its reported cost, a finished execution its
 * usage. Observation ids make every event idempotent, so a batch replayed after a crash changes nothing.
 * A batch costs a handful of set-based statements whatever its size.
 */
public final class LedgerHandler implements OutboxConsumer.Handler {
  private final LifecycleCosts costs;
  private final UsageMeter usage;

  public LedgerHandler(LifecycleCosts costs, UsageMeter usage) {
    this.costs = costs;
    this.usage = usage;
  }

  @Override
  public Future<Void> handle(SqlConnection conn, List<OutboxConsumer.Event> batch) {
    List<LifecycleCosts.Observation> observations = new ArrayList<>();
    List<String> executions = new ArrayList<>();
    for (OutboxConsumer.Event e : batch) {
      String sandbox = e.sandboxId();
      switch (e.type()) {
        case "sandbox.destroyed" -> observations.add(
            new LifecycleCosts.Observation(sandbox, "terminate:" + sandbox, e.occurredAt(), null));
        case "sandbox.failed" -> observations.add(
            new LifecycleCosts.Observation(sandbox, failureObservation(e), e.occurredAt(), null));
        case "sandbox.observed" -> {
          String cost = e.data().getString("provider_cost_usd");
          observations.add(new LifecycleCosts.Observation(sandbox, e.data().getString("observation_id"),
              e.occurredAt(), cost == null ? null : new BigDecimal(cost)));
        }
        case "execution.completed", "execution.timed_out", "execution.cancelled", "execution.failed" ->
            executions.add(e.executionId());
        default -> { }
      }
    }
    return usage.meter(conn, executions).compose(v -> costs.recordAll(conn, observations)).mapEmpty();
  }

  /** The observation id of a failure: a failed create, a failed termination, or a resource gone missing. */
  static String failureObservation(OutboxConsumer.Event e) {
    return switch (String.valueOf(e.data().getString("op"))) {
      case "create" -> "create:" + e.sandboxId();
      case "reconcile" -> "missing:" + e.sandboxId() + ":" + e.data().getString("observation_id");
      default -> "terminate-failed:" + e.sandboxId();
    };
  }
}
