package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;

/** The gateway nodes sharing the database: when each started and when it was last seen alive. */
public final class NodeRepository {
  private final Pool pool;

  public NodeRepository(Pool pool) {
    this.pool = pool;
  }

  /** Records that {@code nodeId} started (again) at {@code now}. */
  public Future<Void> started(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ($1, $2, $2)"
            + " ON CONFLICT (node_id) DO UPDATE SET started_at = $2, heartbeat_at = $2")
        .execute(Tuple.of(nodeId, now))
        .mapEmpty();
  }

  /** Records that {@code nodeId} is alive at {@code now}. */
  public Future<Void> heartbeat(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE gateway_nodes SET heartbeat_at = $2 WHERE node_id = $1")
        .execute(Tuple.of(nodeId, now))
        .mapEmpty();
  }
}
