package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/** The gateway nodes sharing the database: when each started and when it was last seen alive. */
public final class NodeRepository {
  private final Pool pool;

  public NodeRepository(Pool pool) {
    this.pool = pool;
  }

  /** Records that {@code nodeId} started (again) at {@code now}. */
  public Future<Void> started(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ($1, $2, $2)"
            + " ON CONFLICT (node_id) DO UPDATE SET started_at = $2, heartbeat_at = $2, lost_at = NULL")
        .execute(Tuple.of(nodeId, now))
        .mapEmpty();
  }

  /** Records that {@code nodeId} is alive at {@code now}. */
  public Future<Void> heartbeat(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE gateway_nodes SET heartbeat_at = $2 WHERE node_id = $1")
        .execute(Tuple.of(nodeId, now))
        .mapEmpty();
  }

  /**
   * Records that {@code nodeId} is alive at {@code now}, unless another node took it over meanwhile (it was
   * marked lost): false then.
   */
  public Future<Boolean> renew(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE gateway_nodes SET heartbeat_at = $2 WHERE node_id = $1 AND lost_at IS NULL")
        .execute(Tuple.of(nodeId, now))
        .map(rows -> rows.rowCount() == 1);
  }

  /** The nodes not marked lost whose last heartbeat is older than {@code before}, other than {@code self}. */
  /** Which of {@code nodeIds} another node has taken over (marked lost). */
  public Future<List<String>> lostAmong(java.util.Collection<String> nodeIds) {
    return pool.preparedQuery("SELECT node_id FROM gateway_nodes WHERE node_id = ANY($1) AND lost_at IS NOT NULL")
        .execute(io.vertx.sqlclient.Tuple.of(nodeIds.toArray(String[]::new)))
        .map(rows -> {
          List<String> lost = new java.util.ArrayList<>();
          rows.forEach(r -> lost.add(r.getString("node_id")));
          return lost;
        });
  }

  public Future<List<String>> stale(String self, OffsetDateTime before) {
    return pool.preparedQuery("SELECT node_id FROM gateway_nodes WHERE lost_at IS NULL AND heartbeat_at < $2"
            + " AND node_id <> $1 ORDER BY node_id")
        .execute(Tuple.of(self, before))
        .map(rows -> {
          List<String> out = new ArrayList<>();
          rows.forEach(r -> out.add(r.getString(0)));
          return out;
        });
  }
}
