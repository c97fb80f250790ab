package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.Optional;

/** What readiness reads: the ledger's backlog and this node's supervisor heartbeat. */
public final class ReadinessRepository {
  /**
   * The oldest committed lifecycle event the ledger has not priced yet, and how many wait: also those it cannot
   * take yet because an older transaction is still open (it prices in commit order), which is lag all the same.
   */
  private static final String LEDGER_BACKLOG = """
      SELECT min(e.occurred_at) AS oldest, count(*) AS waiting
      FROM lifecycle_events e, outbox_offsets o
      WHERE o.consumer = $1 AND (e.txid, e.seq) > (o.last_txid, o.last_seq)""";

  private final Pool pool;

  public ReadinessRepository(Pool pool) {
    this.pool = pool;
  }

  /** What the ledger has still to price: the oldest such event's time (empty when caught up) and the count. */
  public record Backlog(Optional<OffsetDateTime> oldest, long waiting) {}

  public Future<Backlog> ledgerBacklog(String consumer) {
    return pool.preparedQuery(LEDGER_BACKLOG).execute(Tuple.of(consumer)).map(rows -> {
      if (rows.size() == 0) {
        return new Backlog(Optional.empty(), 0); // the consumer has not registered yet
      }
      Row r = rows.iterator().next();
      return new Backlog(Optional.ofNullable(r.getOffsetDateTime("oldest")), r.getLong("waiting"));
    });
  }

  /** When this node's supervisor last beat (empty before its first pass). */
  public Future<Optional<OffsetDateTime>> heartbeat(String nodeId) {
    return pool.preparedQuery("SELECT heartbeat_at FROM gateway_nodes WHERE node_id = $1").execute(Tuple.of(nodeId))
        .map(rows -> rows.size() == 0 ? Optional.empty()
            : Optional.ofNullable(rows.iterator().next().getOffsetDateTime("heartbeat_at")));
  }
}
