package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.ExecutionRecord;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Executions, unique per (organization, sandbox, request id). Each write is a single statement that also
 * appends its lifecycle event, so the hot path costs one round trip per state change.
 */
public final class ExecutionRepository {
  private final Pool pool;

  public ExecutionRepository(Pool pool) {
    this.pool = pool;
  }

  /** The sandbox as seen when an execution starts. */
  public record Target(String sandboxId, String status, String backend, String nodeId, String providerResourceId,
      Integer timeoutSecs, BigDecimal hourlyRateUsd) {}

  /**
   * The result of {@link #start}: {@code started} when a new running row was inserted; otherwise
   * {@code existing} holds the earlier execution with the same request id and body, if any (whatever the
   * sandbox's status now, so a finished request replays after the sandbox ended).
   */
  public record Start(Target target, boolean started, Optional<ExecutionRecord> existing) {}

  private static final String START = """
      WITH s AS (
        SELECT id, status, backend, node_id, provider_resource_id, (config->>'timeout_secs')::int AS timeout_secs,
               hourly_rate_usd
        FROM sandboxes WHERE id = $1 AND organization_id = $2),
      ins AS (
        INSERT INTO executions (id, organization_id, sandbox_id, request_id, api_key_id, status, created_at,
          node_id, stdin_open, request_fingerprint)
        SELECT $3, $2, s.id, $4, $5, 'running', $6,
               CASE WHEN s.backend = ANY($8::text[]) THEN s.node_id ELSE $9 END, $10, $11
        FROM s WHERE s.status = 'running'
        ON CONFLICT (organization_id, sandbox_id, request_id) DO NOTHING
        RETURNING id),
      ev AS (
        INSERT INTO lifecycle_events (id, organization_id, sandbox_id, execution_id, type, status, occurred_at)
        SELECT $7, $2, $1, ins.id, 'execution.started', 'running', $6 FROM ins)
      SELECT s.*, (SELECT count(*) FROM ins) AS inserted FROM s""";

  /**
   * Looks up the sandbox and, if it is running, inserts the running execution, in one statement. The
   * execution runs on the sandbox's node for {@code nodeBoundBackends}, else on {@code nodeId}. An earlier
   * execution with the same request id but another {@code fingerprint} is a 409.
   */
  public Future<Start> start(String orgId, String sandboxId, String executionId, String requestId, String keyId,
      OffsetDateTime now, String[] nodeBoundBackends, String nodeId, boolean stdinOpen, String fingerprint) {
    return pool.preparedQuery(START)
        .execute(Tuple.of(sandboxId, orgId, executionId, requestId, keyId, now, Ids.newId("evt"))
            .addArrayOfString(nodeBoundBackends).addString(nodeId).addBoolean(stdinOpen).addString(fingerprint))
        .compose(rows -> {
          Row r = ApiKeyRepository.first(rows).orElseThrow(() -> ApiException.notFound("sandbox not found"));
          Target t = new Target(r.getString("id"), r.getString("status"), r.getString("backend"),
              r.getString("node_id"), r.getString("provider_resource_id"), r.getInteger("timeout_secs"),
              r.getBigDecimal("hourly_rate_usd"));
          if (r.getLong("inserted") == 1) {
            return Future.succeededFuture(new Start(t, true, Optional.empty()));
          }
          return sameRequest(orgId, sandboxId, requestId, fingerprint).map(e -> new Start(t, false, e));
        });
  }

  /** The execution of this request id, unless it was made with another body (409); rows without one replay. */
  private Future<Optional<ExecutionRecord>> sameRequest(String orgId, String sandboxId, String requestId,
      String fingerprint) {
    return pool.preparedQuery("SELECT " + ExecutionRecord.COLUMNS + ", request_fingerprint IS NOT NULL"
            + " AND request_fingerprint <> $4 AS differs"
            + " FROM executions WHERE organization_id = $1 AND sandbox_id = $2 AND request_id = $3")
        .execute(Tuple.of(orgId, sandboxId, requestId, fingerprint))
        .map(rows -> ApiKeyRepository.first(rows).map(row -> {
          if (row.getBoolean("differs")) {
            throw ApiException.conflict("idempotency key was already used with a different request");
          }
          return ExecutionRecord.from(row);
        }));
  }

  public Future<Optional<ExecutionRecord>> find(String orgId, String sandboxId, String requestId) {
    return pool.preparedQuery("SELECT " + ExecutionRecord.COLUMNS
            + " FROM executions WHERE organization_id = $1 AND sandbox_id = $2 AND request_id = $3")
        .execute(Tuple.of(orgId, sandboxId, requestId))
        .map(rows -> ApiKeyRepository.first(rows).map(ExecutionRecord::from));
  }

  private static final String FINISH = """
      WITH e AS (
        UPDATE executions SET status = $2, response = convert_from($3, 'UTF8'), error = $4, exit_code = $5,
          duration_ms = $6, completed_at = $7
        WHERE id = $1 AND status = 'running'
        RETURNING id, organization_id, sandbox_id)
      INSERT INTO lifecycle_events (id, organization_id, sandbox_id, execution_id, type, status, occurred_at, data)
      SELECT $8, e.organization_id, e.sandbox_id, e.id, $9, $2, $7, $10 FROM e""";

  /**
   * Stores the response of an execution that ran to its end ({@code completed}, {@code timed_out},
   * {@code cancelled}). It travels as UTF-8 bytes (it holds up to the output caps of text), encoded once.
   */
  public Future<Void> complete(String executionId, String status, JsonObject response, int exitCode, long durationMs,
      OffsetDateTime now) {
    return pool.preparedQuery(FINISH)
        .execute(Tuple.of(executionId, status, response.toBuffer(), null, exitCode, durationMs, now, Ids.newId("evt"),
            "execution." + status, new JsonObject().put("exit_code", exitCode).put("duration_ms", durationMs)))
        .mapEmpty();
  }

  /** What the recorder of an asynchronous execution needs to build its stored response. */
  public record Pending(String requestId, String sandboxId, BigDecimal hourlyRateUsd) {}

  public Future<Optional<Pending>> pending(String executionId) {
    return pool.preparedQuery("SELECT e.request_id, e.sandbox_id, s.hourly_rate_usd FROM executions e"
            + " JOIN sandboxes s ON s.id = e.sandbox_id WHERE e.id = $1")
        .execute(Tuple.of(executionId))
        .map(rows -> ApiKeyRepository.first(rows).map(r -> new Pending(r.getString(0), r.getString(1),
            r.getBigDecimal(2))));
  }

  /** One execution of one sandbox of the organization. */
  public Future<Optional<ExecutionRecord>> findById(String orgId, String sandboxId, String executionId) {
    return pool.preparedQuery("SELECT " + ExecutionRecord.COLUMNS
            + " FROM executions WHERE organization_id = $1 AND sandbox_id = $2 AND id = $3")
        .execute(Tuple.of(orgId, sandboxId, executionId))
        .map(rows -> ApiKeyRepository.first(rows).map(ExecutionRecord::from));
  }


  /** Stores the error payload of a failed execution. */
  public Future<Void> fail(String executionId, JsonObject error, long durationMs, OffsetDateTime now) {
    return pool.preparedQuery(FINISH)
        .execute(Tuple.of(executionId, "failed", null, error, null, durationMs, now, Ids.newId("evt"),
            "execution.failed", new JsonObject().put("code", error.getString("code"))))
        .mapEmpty();
  }

  /** The stored error of an execution that ended without a result: it may have done part of its work. */
  public static JsonObject strandedError(String message) {
    return new JsonObject().put("message", message).put("code", "execution_failed").put("op", "execute")
        .put("retryable", false).put("outcome", "unknown");
  }

  /**
   * Ends the running executions that {@code ended} (a CTE of {@code id} and end time {@code at}, parameters
   * from {@code $3}) selects as failed with {@code $1} as their error, runtime up to their end, and their
   * {@code execution.failed} event (data {@code $2}), so the ledger meters them as any other end.
   */
  private static String endAll(String ended) {
    return """
        WITH ended AS (%s),
        e AS (
          UPDATE executions x SET status = 'failed', error = $1, completed_at = ended.at,
            duration_ms = (extract(epoch FROM ended.at - x.created_at) * 1000)::bigint
          FROM ended WHERE x.id = ended.id AND x.status = 'running'
          RETURNING x.id, x.organization_id, x.sandbox_id, x.completed_at)
        INSERT INTO lifecycle_events (id, organization_id, sandbox_id, execution_id, type, status, occurred_at, data)
        SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), e.organization_id, e.sandbox_id, e.id,
               'execution.failed', 'failed', e.completed_at, $2
        FROM e""".formatted(ended);
  }

  private static final String END_OF_NODE = endAll("""
      SELECT x.id, GREATEST(x.created_at, LEAST($4, COALESCE(n.heartbeat_at, $4))) AS at
      FROM executions x LEFT JOIN gateway_nodes n ON n.node_id = x.node_id
      WHERE x.node_id = $3 AND x.status = 'running'""");

  private static final String END_OF_SANDBOXES = endAll("""
      SELECT x.id, GREATEST(x.created_at, COALESCE(s.terminated_at, s.failed_at, x.created_at)) AS at
      FROM executions x JOIN sandboxes s ON s.id = x.sandbox_id
      -- a sandbox whose destroy failed may still run them: only one that is gone is certain
      WHERE x.status = 'running' AND (s.status = 'destroyed' OR s.status = 'failed' AND s.provider_missing)
        AND COALESCE(s.terminated_at, s.failed_at, x.created_at) < $3
      LIMIT 1000""");

  /**
   * At start, before this node runs anything: the executions it ran before (a crash, a kill) can no longer
   * end, since their adapter and its handles died with the process. Each ends as failed, its runtime counted
   * up to the node's last heartbeat (the crash's latest known moment). Returns how many.
   */
  public Future<Integer> endLeftByNode(String nodeId, OffsetDateTime now) {
    return pool.preparedQuery(END_OF_NODE)
        .execute(Tuple.of(strandedError("the gateway restarted while the execution ran"),
            new JsonObject().put("code", "execution_failed"), nodeId, now))
        .map(r -> r.rowCount());
  }

  /**
   * In the caller's transaction: the executions a lost node ran end as failed with {@code message}, their
   * runtime counted up to {@code lastAlive}. Returns how many.
   */
  public static Future<Integer> endOfNode(io.vertx.sqlclient.SqlClient conn, String nodeId, OffsetDateTime lastAlive,
      String message) {
    return conn.preparedQuery(END_OF_NODE)
        .execute(Tuple.of(strandedError(message).put("context", new JsonObject().put("provider_code", "node_lost")),
            new JsonObject().put("code", "node_lost"), nodeId, lastAlive))
        .map(r -> r.rowCount());
  }

  /**
   * Ends the executions still running in sandboxes that ended (destroyed or failed) before
   * {@code endedBefore}, a grace that lets results reported as the sandbox ended be stored first; their
   * runtime counts up to the sandbox's end. Returns how many (at most 1,000 a call).
   */
  public Future<Integer> endWithSandboxes(OffsetDateTime endedBefore) {
    return pool.preparedQuery(END_OF_SANDBOXES)
        .execute(Tuple.of(strandedError("the sandbox ended while the execution ran"),
            new JsonObject().put("code", "execution_failed"), endedBefore))
        .map(r -> r.rowCount());
  }

  /** How many executions node {@code nodeId} runs now. */
  public Future<Integer> runningOn(String nodeId) {
    return pool.preparedQuery("SELECT count(*) FROM executions WHERE node_id = $1 AND status = 'running'")
        .execute(Tuple.of(nodeId))
        .map(rows -> rows.iterator().next().getInteger(0));
  }

  /** The sandbox's executions, newest first. */
  public Future<List<ExecutionRecord>> list(String sandboxId, int limit) {
    return pool.preparedQuery("SELECT " + ExecutionRecord.COLUMNS
            + " FROM executions WHERE sandbox_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2")
        .execute(Tuple.of(sandboxId, limit))
        .map(rows -> {
          List<ExecutionRecord> out = new ArrayList<>(rows.size());
          rows.forEach(r -> out.add(ExecutionRecord.from(r)));
          return out;
        });
  }
}
