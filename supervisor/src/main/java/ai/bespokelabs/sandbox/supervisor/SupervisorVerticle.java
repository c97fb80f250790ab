package ai.bespokelabs.sandbox.supervisor;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Per-node supervision. Today it keeps this node's heartbeat in {@code gateway_nodes}, which lets other nodes
 * tell a live node from a dead one when taking over its claims. TTL enforcement, reconciliation and provider
 * health build on this loop.
 */
public final class SupervisorVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(SupervisorVerticle.class);

  private final Pool pool;
  private final String nodeId;
  private final Clock clock;
  private final long intervalMs;
  private long timer = -1;

  public SupervisorVerticle(Pool pool, String nodeId, Clock clock, int intervalSecs) {
    this.pool = pool;
    this.nodeId = nodeId;
    this.clock = clock;
    this.intervalMs = intervalSecs * 1000L;
  }

  @Override
  public Future<?> start() {
    OffsetDateTime now = OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC);
    return pool.preparedQuery("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ($1, $2, $2)"
            + " ON CONFLICT (node_id) DO UPDATE SET started_at = $2, heartbeat_at = $2")
        .execute(Tuple.of(nodeId, now))
        .onSuccess(r -> {
          if (intervalMs > 0) {
            timer = vertx.setPeriodic(intervalMs, t -> heartbeat());
          }
        });
  }

  @Override
  public Future<?> stop() {
    if (timer >= 0) {
      vertx.cancelTimer(timer);
    }
    return Future.succeededFuture();
  }

  Future<Void> heartbeat() {
    OffsetDateTime now = OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC);
    return pool.preparedQuery("UPDATE gateway_nodes SET heartbeat_at = $2 WHERE node_id = $1")
        .execute(Tuple.of(nodeId, now))
        .<Void>mapEmpty()
        .onFailure(e -> LOG.warn("Supervisor heartbeat failed: {}", e.toString()));
  }
}
