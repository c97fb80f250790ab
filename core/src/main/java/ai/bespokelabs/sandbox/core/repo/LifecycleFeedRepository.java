package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * An organization's sandbox lifecycle events (the outbox, {@code lifecycle_events}) for live feeds. Events are
 * read in (txid, seq) order and only from transactions older than the oldest one still running, as the outbox's
 * consumers read them, so a reader that follows its cursor misses none that commit late.
 */
public final class LifecycleFeedRepository {
  /** A position in the outbox: after the event ({@code txid}, {@code seq}). */
  public record Cursor(String txid, long seq) {
    public static final Cursor START = new Cursor("0", 0);
  }

  /** One sandbox lifecycle event. */
  public record Change(Cursor at, String sandboxId, String type, String status, OffsetDateTime occurredAt) {}

  private final Pool pool;

  public LifecycleFeedRepository(Pool pool) {
    this.pool = pool;
  }

  /** Where a reader starts that wants only what happens from now on. */
  public Future<Cursor> head() {
    return pool.query("SELECT txid::text AS txid, seq FROM lifecycle_events"
            + " WHERE txid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY txid DESC, seq DESC LIMIT 1")
        .execute()
        .map(rows -> ApiKeyRepository.first(rows).map(r -> new Cursor(r.getString("txid"), r.getLong("seq")))
            .orElse(Cursor.START));
  }

  /** The organization's sandbox events after {@code from}, at most {@code limit}. */
  public Future<List<Change>> after(String organizationId, Cursor from, int limit) {
    return pool.preparedQuery("SELECT txid::text AS txid, seq, sandbox_id, type, status, occurred_at"
            + " FROM lifecycle_events WHERE txid < pg_snapshot_xmin(pg_current_snapshot())"
            + " AND (txid, seq) > ($2::text::xid8, $3) AND organization_id = $1 AND execution_id IS NULL"
            + " ORDER BY txid, seq LIMIT $4")
        .execute(Tuple.of(organizationId, from.txid(), from.seq(), limit))
        .map(rows -> {
          List<Change> out = new ArrayList<>();
          rows.forEach(r -> out.add(new Change(new Cursor(r.getString("txid"), r.getLong("seq")),
              r.getString("sandbox_id"), r.getString("type"), r.getString("status"),
              r.getOffsetDateTime("occurred_at"))));
          return out;
        });
  }

  public static JsonObject json(Change c) {
    return new JsonObject().put("sandbox_id", c.sandboxId()).put("type", c.type()).put("status", c.status())
        .put("occurred_at", ai.bespokelabs.sandbox.core.Times.iso(c.occurredAt()));
  }
}
