package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * What reconciliation reads and writes: the sandboxes a provider listing is compared with, the observations and
 * failures it records (with their lifecycle events), and the durable claims on orphaned resources.
 */
public final class ReconciliationRepository {
  /** A sandbox a listing is judged against. */
  public record Candidate(String id, String status, String providerResourceId) {}

  /** What a listing showed about one sandbox. */
  public sealed interface Change permits Observed, Missing {}

  /** The provider still has the sandbox's resource, in {@code status}. */
  public record Observed(String sandboxId, String observationId, String resourceId, String status,
      BigDecimal providerCostUsd) implements Change {}

  /** The provider no longer has the live sandbox's resource: the sandbox fails with {@code error}. */
  public record Missing(String sandboxId, String observationId, String resourceId, ProviderError error)
      implements Change {}

  private final Pool pool;

  public ReconciliationRepository(Pool pool) {
    this.pool = pool;
  }

  /** The organizations with live sandboxes of {@code backend} on {@code nodeId} (null: any node) that a provider holds. */
  public Future<List<String>> organizationsWithLiveSandboxes(String backend, String nodeId) {
    return pool.preparedQuery("SELECT DISTINCT organization_id FROM sandboxes"
            + " WHERE backend = $1 AND ($2::text IS NULL OR node_id = $2) AND status IN ('creating', 'running', 'stopping')"
            + " AND provider_resource_id IS NOT NULL")
        .execute(Tuple.of(backend, nodeId))
        .map(rows -> {
          List<String> out = new ArrayList<>();
          rows.forEach(r -> out.add(r.getString(0)));
          return out;
        });
  }

  /** The resource ids of the live sandboxes of {@code backend} on {@code nodeId} (null: any node). */
  public Future<List<String>> liveResourceIds(String backend, String nodeId) {
    return pool.preparedQuery("SELECT provider_resource_id FROM sandboxes"
            + " WHERE backend = $1 AND ($2::text IS NULL OR node_id = $2) AND status IN ('creating', 'running', 'stopping')"
            + " AND provider_resource_id IS NOT NULL")
        .execute(Tuple.of(backend, nodeId))
        .map(rows -> {
          List<String> out = new ArrayList<>();
          rows.forEach(r -> out.add(r.getString(0)));
          return out;
        });
  }

  /**
   * In one transaction: locks the organization's sandboxes of {@code backend} on {@code nodeId} (null: any node)
   * that were running before {@code runningBefore} (live ones, and ended ones whose resource is known), asks
   * {@code decide} what the listing showed about them, and records each change at {@code now}.
   */
  public Future<Void> record(String orgId, String backend, String nodeId, OffsetDateTime runningBefore,
      OffsetDateTime now, Function<List<Candidate>, List<Change>> decide) {
    return pool.withTransaction(conn -> conn.preparedQuery("""
            SELECT id, status, provider_resource_id FROM sandboxes
            WHERE organization_id = $1 AND backend = $2 AND ($3::text IS NULL OR node_id = $3)
              AND (status IN ('creating', 'running', 'stopping')
                   OR (status IN ('destroyed', 'failed') AND provider_resource_id IS NOT NULL))
              AND COALESCE(running_at, created_at) < $4
            FOR UPDATE""")
        .execute(Tuple.of(orgId, backend, nodeId, runningBefore))
        .compose(rows -> {
          List<Candidate> candidates = new ArrayList<>();
          for (Row r : rows) {
            candidates.add(new Candidate(r.getString("id"), r.getString("status"), r.getString("provider_resource_id")));
          }
          Future<Void> chain = Future.succeededFuture();
          for (Change c : decide.apply(candidates)) {
            chain = chain.compose(v -> switch (c) {
              case Observed o -> observe(conn, orgId, o, now);
              case Missing m -> missing(conn, orgId, m, now);
            });
          }
          return chain;
        }));
  }

  private static Future<Void> observe(SqlConnection conn, String orgId, Observed o, OffsetDateTime now) {
    return conn.preparedQuery("INSERT INTO provider_observations (id, organization_id, sandbox_id, observation_id,"
            + " provider_resource_id, status, observed_at, provider_cost_usd) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            + " ON CONFLICT DO NOTHING")
        .execute(Tuple.of(Ids.newId("obs"), orgId, o.sandboxId(), o.observationId(), o.resourceId(), o.status())
            .addValue(now).addValue(o.providerCostUsd()))
        .compose(r -> conn.preparedQuery("UPDATE sandboxes SET last_provider_observed_at = $2, version = version + 1"
                + " WHERE id = $1").execute(Tuple.of(o.sandboxId(), now)))
        .compose(r -> LifecycleEvents.append(conn, orgId, o.sandboxId(), null, "sandbox.observed", o.status(), now,
            new JsonObject().put("observation_id", o.observationId()).put("provider_cost_usd",
                o.providerCostUsd() == null ? null : o.providerCostUsd().toPlainString())));
  }

  private static Future<Void> missing(SqlConnection conn, String orgId, Missing m, OffsetDateTime now) {
    return conn.preparedQuery("INSERT INTO provider_observations (id, organization_id, sandbox_id, observation_id,"
            + " provider_resource_id, status, observed_at, missing) VALUES ($1, $2, $3, $4, $5, 'failed', $6, true)"
            + " ON CONFLICT DO NOTHING")
        .execute(Tuple.of(Ids.newId("obs"), orgId, m.sandboxId(), m.observationId(), m.resourceId(), now))
        .compose(r -> conn.preparedQuery("""
                UPDATE sandboxes SET status = 'failed', failed_at = $2, provider_missing = true,
                  last_provider_observed_at = $2, latest_error = $3, retry_status = 'not_retryable',
                  error = 'Sandbox operation failed.', version = version + 1
                WHERE id = $1""").execute(Tuple.of(m.sandboxId(), now, m.error().toJson())))
        .compose(r -> LifecycleEvents.append(conn, orgId, m.sandboxId(), null, "sandbox.failed", "failed", now,
            new JsonObject().put("code", m.error().code().wire()).put("op", m.error().op())
                .put("observation_id", m.observationId())));
  }

  /** Which of {@code sandboxIds} are live (creating, running or stopping). */
  public Future<Set<String>> live(List<String> sandboxIds) {
    return pool.preparedQuery("SELECT id FROM sandboxes WHERE id = ANY($1) AND status IN ('creating', 'running',"
            + " 'stopping')")
        .execute(Tuple.tuple().addArrayOfString(sandboxIds.toArray(String[]::new)))
        .map(rows -> {
          Set<String> live = new HashSet<>();
          rows.forEach(r -> live.add(r.getString(0)));
          return live;
        });
  }

  /**
   * Claims the deletion of an orphaned resource for {@code node}: true unless another claim holds it (a claim
   * older than {@code staleBefore}, a failed attempt or a deleted resource seen again is taken over).
   */
  public Future<Boolean> claimOrphan(String backend, String resourceId, String node, OffsetDateTime now,
      OffsetDateTime staleBefore) {
    return pool.preparedQuery("""
            INSERT INTO orphan_cleanups (backend, provider_resource_id, node_id, status, observed_at, claimed_at)
            VALUES ($1, $2, $3, 'claimed', $4, $4)
            ON CONFLICT (backend, provider_resource_id) DO UPDATE SET status = 'claimed', claimed_at = $4
            WHERE orphan_cleanups.status = 'failed'
               OR (orphan_cleanups.status = 'claimed' AND orphan_cleanups.claimed_at < $5)
               OR orphan_cleanups.status = 'deleted'
            RETURNING provider_resource_id""")
        .execute(Tuple.of(backend, resourceId, node, now, staleBefore))
        .map(claimed -> claimed.size() > 0);
  }

  /** Records how the deletion of a claimed orphan ended. */
  public Future<Void> orphanCleaned(String backend, String resourceId, boolean deleted, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE orphan_cleanups SET status = $3, completed_at = $4"
            + " WHERE backend = $1 AND provider_resource_id = $2")
        .execute(Tuple.of(backend, resourceId, deleted ? "deleted" : "failed", now))
        .mapEmpty();
  }
}
