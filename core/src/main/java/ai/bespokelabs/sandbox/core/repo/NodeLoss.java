package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Taking over from a lost node, exactly once whichever nodes try: in one transaction the node is marked lost
 * (only the first attempt finds it unmarked), its node-hosted sandboxes fail with reason {@link #NODE_LOST}
 * ending at its last heartbeat (so their cost ends there), the executions it ran end as failed, its
 * supervisor's claims are released for the next sweep, and {@link #CHANNEL} tells every node, whose watchers
 * of those executions then end. A node that returns finds its lost sandboxes in {@link #pendingCleanup}.
 */
public final class NodeLoss {
  public static final String NODE_LOST = "node_lost";
  /** The PostgreSQL notification channel; the payload is the lost node's id. */
  public static final String CHANNEL = "node_lost";
  public static final String MESSAGE = "the gateway node hosting this sandbox was lost";

  /** A node taken over: when it was last known alive, and the sandboxes that failed with it. */
  public record Lost(String nodeId, OffsetDateTime lastAlive, List<String> sandboxIds, int executions) {}

  /** A sandbox of a lost node whose remains its node (back again) must still kill. */
  public record Remains(String id, String backend, String providerResourceId) {}

  // $1 node, $2 now, $3 stale-before (null: its membership ended), $4 its node-hosted backends
  private static final String MARK = """
      UPDATE gateway_nodes SET lost_at = $2
      WHERE node_id = $1 AND lost_at IS NULL AND ($3::timestamptz IS NULL OR heartbeat_at < $3::timestamptz)
      RETURNING LEAST(heartbeat_at, $2) AS last_alive""";

  // $1 node, $2 last alive, $3 backends, $4 error, $5 event data
  private static final String FAIL_SANDBOXES = """
      WITH f AS (
        UPDATE sandboxes s SET status = 'failed',
          failed_at = GREATEST(COALESCE(s.running_at, s.provisioning_at, s.created_at), $2),
          termination_reason = 'node_lost', latest_error = jsonb_set($4::jsonb, '{backend}', to_jsonb(s.backend)),
          retry_status = 'not_retryable',
          cleanup_status = 'pending', error = 'Sandbox node was lost.', version = s.version + 1
        WHERE s.node_id = $1 AND s.backend = ANY($3) AND s.status IN ('creating', 'running', 'stopping')
        RETURNING s.id, s.organization_id, s.failed_at),
      ev AS (
        INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
        SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), f.organization_id, f.id, 'sandbox.failed',
               'failed', f.failed_at, $5
        FROM f)
      SELECT id FROM f""";

  // $1 the lost node's supervisor owner prefix: its claims become stale at once
  private static final String RELEASE_CLAIMS = """
      UPDATE sandboxes SET supervision_claimed_at = '-infinity'
      WHERE status = 'stopping' AND supervision_owner LIKE $1""";

  private final Pool pool;

  public NodeLoss(Pool pool) {
    this.pool = pool;
  }

  /**
   * Takes over {@code nodeId} if no other node did: when {@code staleBefore} is set, only if its heartbeat is
   * older. Empty when there was nothing to take over.
   */
  public Future<Optional<Lost>> takeOver(String nodeId, OffsetDateTime now, OffsetDateTime staleBefore,
      Collection<String> nodeHosted) {
    return pool.withTransaction(conn -> conn.preparedQuery(MARK).execute(Tuple.of(nodeId, now, staleBefore))
        .compose(rows -> {
          if (rows.rowCount() == 0) {
            return Future.succeededFuture(Optional.<Lost>empty());
          }
          OffsetDateTime lastAlive = rows.iterator().next().getOffsetDateTime("last_alive");
          return failAll(conn, nodeId, lastAlive, nodeHosted).map(Optional::of);
        }));
  }

  private static Future<Lost> failAll(SqlConnection conn, String nodeId, OffsetDateTime lastAlive,
      Collection<String> nodeHosted) {
    // the contract's provider error: the node that hosted the sandbox (its provider) is gone; which backend is
    // filled in per sandbox
    JsonObject error = ProviderError.of(ErrorCode.CONNECTION, "", NODE_LOST, false, ProviderError.Outcome.UNKNOWN)
        .withContext("provider_code", NODE_LOST).toJson();
    JsonObject data = new JsonObject().put("reason", NODE_LOST).put("op", NODE_LOST).put("code", NODE_LOST)
        .put("node_id", nodeId);
    List<String> failed = new ArrayList<>();
    return conn.preparedQuery(FAIL_SANDBOXES)
        .execute(Tuple.tuple().addString(nodeId).addValue(lastAlive)
            .addArrayOfString(nodeHosted.toArray(String[]::new)).addValue(error).addValue(data))
        .compose(rows -> {
          rows.forEach(r -> failed.add(r.getString("id")));
          return ExecutionRepository.endOfNode(conn, nodeId, lastAlive,
              "the gateway node running this execution was lost");
        })
        .compose(executions -> conn.preparedQuery(RELEASE_CLAIMS).execute(Tuple.of("supervisor-" + nodeId + "-%"))
            .compose(v -> conn.preparedQuery("SELECT pg_notify($1, $2)").execute(Tuple.of(CHANNEL, nodeId)))
            .map(v -> new Lost(nodeId, lastAlive, List.copyOf(failed), executions)));
  }

  /**
   * Hands over the terminations a supervisor claimed and did not finish (it stops): the next sweep of any node
   * takes them at once instead of after the stale period.
   */
  public Future<Void> releaseClaims(String owner) {
    return pool.preparedQuery(RELEASE_CLAIMS).execute(Tuple.of(owner)).mapEmpty();
  }

  /** The sandboxes of {@code backends} that failed with node {@code nodeId} and whose remains are not cleaned up. */
  public Future<List<Remains>> pendingCleanup(String nodeId, Collection<String> backends) {
    return pool.preparedQuery("SELECT id, backend, provider_resource_id FROM sandboxes WHERE node_id = $1"
            + " AND backend = ANY($2) AND status = 'failed' AND termination_reason = 'node_lost'"
            + " AND cleanup_status = 'pending' ORDER BY id")
        .execute(Tuple.tuple().addString(nodeId).addArrayOfString(backends.toArray(String[]::new)))
        .map(rows -> {
          List<Remains> out = new ArrayList<>();
          for (Row r : rows) {
            out.add(new Remains(r.getString("id"), r.getString("backend"), r.getString("provider_resource_id")));
          }
          return out;
        });
  }

  /** Records that a lost sandbox's remains were killed and removed. */
  public Future<Void> cleanedUp(String sandboxId) {
    return pool.preparedQuery("UPDATE sandboxes SET cleanup_status = 'done' WHERE id = $1 AND cleanup_status = 'pending'")
        .execute(Tuple.of(sandboxId)).mapEmpty();
  }
}
