package ai.bespokelabs.sandbox.core.outbox;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the {@code lifecycle_events} outbox for one named consumer. Each batch is handled in one transaction
 * that also advances the consumer's offset, so every event is processed exactly once even across crashes
 * and with several nodes (the offset row is locked while a batch runs).
 *
 * <p>Events are read in (txid, seq) order and only from transactions older than the oldest one still in
 * progress, so an event whose transaction commits late is never skipped.
 */
public final class OutboxConsumer {
  /** One outbox row. */
  public record Event(long seq, String id, String organizationId, String sandboxId, String executionId, String type,
      String status, OffsetDateTime occurredAt, JsonObject data) {}

  /** Handles a batch inside the consumer's transaction; must use {@code conn}, never the pool. */
  @FunctionalInterface
  public interface Handler {
    Future<Void> handle(SqlConnection conn, List<Event> batch);

    /** Called once the batch's transaction committed (the consumer's position moved past it). */
    default void committed(List<Event> batch) {}
  }

  private static final String REGISTER = "INSERT INTO outbox_offsets (consumer, updated_at) VALUES ($1, now())"
      + " ON CONFLICT (consumer) DO NOTHING";
  private static final String LOCK =
      "SELECT last_txid::text, last_seq FROM outbox_offsets WHERE consumer = $1 FOR UPDATE";
  private static final String READ = """
      SELECT seq, id, organization_id, sandbox_id, execution_id, type, status, occurred_at, data, txid::text AS txid
      FROM lifecycle_events
      WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
        AND (txid, seq) > ($1::text::xid8, $2)
      ORDER BY txid, seq
      LIMIT $3""";
  private static final String ADVANCE =
      "UPDATE outbox_offsets SET last_txid = $2::text::xid8, last_seq = $3, updated_at = now() WHERE consumer = $1";

  private final Pool pool;
  private final String name;
  private final int batchSize;
  private final Handler handler;

  public OutboxConsumer(Pool pool, String name, int batchSize, Handler handler) {
    this.pool = pool;
    this.name = name;
    this.batchSize = batchSize;
    this.handler = handler;
  }

  /** Creates the consumer's offset row if needed; call once before polling. */
  public Future<Void> register() {
    return pool.preparedQuery(REGISTER).execute(Tuple.of(name)).mapEmpty();
  }

  /**
   * Processes one batch; completes with the number of events handled (0 when caught up). A pass that finds
   * nothing writes nothing.
   */
  public Future<Integer> pollOnce() {
    List<List<Event>> handled = new ArrayList<>(1);
    return pool.withTransaction(conn -> conn.preparedQuery(LOCK).execute(Tuple.of(name)).compose(offset -> {
      Row o = offset.iterator().next();
      return conn.preparedQuery(READ)
          .execute(Tuple.of(o.getString(0), o.getLong(1), batchSize))
          .compose(rows -> {
            if (rows.size() == 0) {
              return Future.succeededFuture(0);
            }
            List<Event> batch = new ArrayList<>(rows.size());
            String lastTxid = null;
            long lastSeq = 0;
            for (Row r : rows) {
              batch.add(new Event(r.getLong("seq"), r.getString("id"), r.getString("organization_id"),
                  r.getString("sandbox_id"), r.getString("execution_id"), r.getString("type"), r.getString("status"),
                  r.getOffsetDateTime("occurred_at"), (JsonObject) r.getValue("data")));
              lastTxid = r.getString("txid");
              lastSeq = r.getLong("seq");
            }
            String txid = lastTxid;
            long seq = lastSeq;
            return handler.handle(conn, batch)
                .compose(v -> conn.preparedQuery(ADVANCE).execute(Tuple.of(name, txid, seq)))
                .map(r -> {
                  handled.add(batch);
                  return batch.size();
                });
          });
    })).onSuccess(n -> handled.forEach(handler::committed));
  }
}
