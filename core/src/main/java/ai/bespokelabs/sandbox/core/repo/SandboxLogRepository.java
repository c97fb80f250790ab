package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/** A sandbox's log: its lifecycle events (and its executions' outcomes), oldest first. */
public final class SandboxLogRepository {
  private final Pool pool;

  public SandboxLogRepository(Pool pool) {
    this.pool = pool;
  }

  /**
   * One lifecycle event; {@code durationMs} and {@code exitCode} come from the execution row when the event
   * belongs to one.
   */
  public record Event(long seq, OffsetDateTime at, String type, String status, String executionId, JsonObject data,
      Long durationMs, Integer exitCode) {}

  private static final String PAGE = """
      SELECT le.seq, le.occurred_at, le.type, le.status, le.execution_id, le.data, e.duration_ms, e.exit_code
      FROM lifecycle_events le LEFT JOIN executions e ON e.id = le.execution_id
      WHERE le.sandbox_id = $1
        AND ($2::timestamptz IS NULL OR le.occurred_at > $2)
        AND ($3::timestamptz IS NULL OR (le.occurred_at, le.seq) > ($3::timestamptz, $4::bigint))
      ORDER BY le.occurred_at, le.seq
      LIMIT $5""";

  /**
   * Up to {@code limit} events of the sandbox after {@code since} (exclusive) and after the position
   * ({@code afterAt}, {@code afterSeq}) of a previous page's last event; either may be null.
   */
  public Future<List<Event>> page(String sandboxId, OffsetDateTime since, OffsetDateTime afterAt, Long afterSeq,
      int limit) {
    return pool.preparedQuery(PAGE).execute(Tuple.of(sandboxId, since, afterAt, afterSeq, limit)).map(rows -> {
      List<Event> out = new ArrayList<>(rows.size());
      for (Row r : rows) {
        Object data = r.getValue("data");
        out.add(new Event(r.getLong("seq"), r.getOffsetDateTime("occurred_at"), r.getString("type"),
            r.getString("status"), r.getString("execution_id"),
            data instanceof JsonObject j ? j : new JsonObject(), r.getLong("duration_ms"), r.getInteger("exit_code")));
      }
      return out;
    });
  }
}
