package ai.bespokelabs.sandbox.gateway.ops;

import ai.bespokelabs.sandbox.core.outbox.OutboxConsumer;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The ledger's handler with metrics around it: the ledger sees every lifecycle event exactly once across
 * nodes, so the series counted here (events priced and their lag, executions and sandboxes by backend and
 * outcome) add up over the cluster's nodes without double counting. They are recorded only once the ledger's
 * transaction committed. Provider failures are not counted here but where an adapter answers them (a failed
 * create or execution would otherwise count twice).
 */
public final class MeteredLedger implements OutboxConsumer.Handler {
  private static final String BACKENDS = "SELECT id, backend, expires_at FROM sandboxes WHERE id = ANY($1)";

  private final OutboxConsumer.Handler ledger;
  private final GatewayMetrics metrics;
  private final Clock clock;
  /** The batch handled in the open transaction and its sandboxes' backends (one pass at a time). */
  private List<OutboxConsumer.Event> pendingBatch;
  private Map<String, String> pendingBackends = Map.of();
  private Map<String, java.time.OffsetDateTime> pendingDeadlines = Map.of();

  public MeteredLedger(OutboxConsumer.Handler ledger, GatewayMetrics metrics, Clock clock) {
    this.ledger = ledger;
    this.metrics = metrics;
    this.clock = clock;
  }

  @Override
  public Future<Void> handle(SqlConnection conn, List<OutboxConsumer.Event> batch) {
    pendingBatch = null;
    String[] ids = batch.stream().map(OutboxConsumer.Event::sandboxId).filter(id -> id != null).distinct()
        .toArray(String[]::new);
    return ledger.handle(conn, batch)
        .compose(v -> conn.preparedQuery(BACKENDS).execute(Tuple.of(ids)))
        .map(rows -> {
          Map<String, String> backends = new HashMap<>();
          Map<String, java.time.OffsetDateTime> deadlines = new HashMap<>();
          for (Row r : rows) {
            backends.put(r.getString("id"), r.getString("backend"));
            if (r.getOffsetDateTime("expires_at") != null) {
              deadlines.put(r.getString("id"), r.getOffsetDateTime("expires_at"));
            }
          }
          pendingBatch = batch;
          pendingBackends = backends;
          pendingDeadlines = deadlines;
          return null;
        });
  }

  @Override
  public void committed(List<OutboxConsumer.Event> batch) {
    ledger.committed(batch);
    if (batch != pendingBatch) {
      return;
    }
    Map<String, String> backends = pendingBackends;
    Map<String, java.time.OffsetDateTime> deadlines = pendingDeadlines;
    pendingBatch = null;
    pendingBackends = Map.of();
    pendingDeadlines = Map.of();
    java.time.Instant now = clock.instant();
    for (OutboxConsumer.Event e : batch) {
      metrics.priced(e.type(), Duration.between(e.occurredAt().toInstant(), now));
      String backend = backends.getOrDefault(e.sandboxId(), "unknown");
      JsonObject data = e.data() == null ? new JsonObject() : e.data();
      switch (e.type()) {
        case "execution.started" -> metrics.executionStarted(backend);
        case "execution.completed", "execution.failed", "execution.timed_out", "execution.cancelled" ->
          metrics.executionEnded(backend, e.type().substring("execution.".length()),
              data.getValue("duration_ms") instanceof Number n ? n.longValue() : -1);
        case "sandbox.running" -> metrics.sandboxStarted(backend);
        case "sandbox.failed" -> metrics.sandboxEnded(backend, "failed");
        case "sandbox.destroyed" -> {
          String reason = data.getValue("reason") instanceof String r ? r : "unknown";
          metrics.sandboxEnded(backend, reason);
          if ("ttl_expired".equals(reason) && deadlines.containsKey(e.sandboxId())) {
            metrics.deadlineLateness(Duration.between(deadlines.get(e.sandboxId()).toInstant(),
                e.occurredAt().toInstant()));
          }
        }
        default -> { }
      }
    }
  }
}
