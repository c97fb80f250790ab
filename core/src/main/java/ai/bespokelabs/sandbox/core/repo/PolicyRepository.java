package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.model.Policy;
import ai.bespokelabs.sandbox.core.policy.PolicyDecision;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/** Organization policies and the denials they produced. */
public final class PolicyRepository {
  private final Pool pool;

  public PolicyRepository(Pool pool) {
    this.pool = pool;
  }

  public Future<Policy> current(String orgId) {
    return pool.preparedQuery("SELECT " + Policy.COLUMNS + " FROM organization_policies WHERE organization_id = $1")
        .execute(Tuple.of(orgId))
        .map(rows -> ApiKeyRepository.first(rows).map(Policy::from).orElse(Policy.DEFAULT));
  }

  /** Full replace; the version goes up by one (the first update makes it 2). */
  public Future<Policy> replace(String orgId, Policy p, String keyId, OffsetDateTime now) {
    return pool.preparedQuery("""
            INSERT INTO organization_policies (organization_id, max_concurrent_sandboxes, hourly_spend_limit_usd,
              daily_spend_limit_usd, allowed_backends, allowed_gpu_types, max_sandbox_lifetime_secs, version,
              updated_at, updated_by_api_key_id, include_llm_cost, default_backend)
            VALUES ($1, $2, $3, $4, $5, $6, $7, 2, $8, $9, $10, $11)
            ON CONFLICT (organization_id) DO UPDATE SET
              max_concurrent_sandboxes = EXCLUDED.max_concurrent_sandboxes,
              hourly_spend_limit_usd = EXCLUDED.hourly_spend_limit_usd,
              daily_spend_limit_usd = EXCLUDED.daily_spend_limit_usd,
              allowed_backends = EXCLUDED.allowed_backends, allowed_gpu_types = EXCLUDED.allowed_gpu_types,
              max_sandbox_lifetime_secs = EXCLUDED.max_sandbox_lifetime_secs,
              version = organization_policies.version + 1, updated_at = EXCLUDED.updated_at,
              updated_by_api_key_id = EXCLUDED.updated_by_api_key_id, include_llm_cost = EXCLUDED.include_llm_cost,
              default_backend = EXCLUDED.default_backend
            RETURNING """ + " " + Policy.COLUMNS)
        .execute(Tuple.of(orgId, p.maxConcurrentSandboxes(), p.hourlySpendLimitUsd(), p.dailySpendLimitUsd(),
                p.allowedBackends() == null ? null : p.allowedBackends().toArray(String[]::new),
                p.allowedGpuTypes() == null ? null : p.allowedGpuTypes().toArray(String[]::new))
            .addValue(p.maxSandboxLifetimeSecs()).addValue(now).addValue(keyId).addValue(p.includeLlmCost())
            .addValue(p.defaultBackend()))
        .map(rows -> Policy.from(rows.iterator().next()));
  }

  /** Locks the policy row for the rest of the transaction, serializing this organization's creates. */
  static Future<Policy> lockCurrent(SqlClient conn, String orgId) {
    return conn.preparedQuery("SELECT " + Policy.COLUMNS
            + " FROM organization_policies WHERE organization_id = $1 FOR UPDATE")
        .execute(Tuple.of(orgId))
        .map(rows -> ApiKeyRepository.first(rows).map(Policy::from).orElse(Policy.DEFAULT));
  }

  static Future<Long> activeSandboxes(SqlClient conn, String orgId) {
    return conn.preparedQuery("SELECT count(*) FROM sandboxes WHERE organization_id = $1"
            + " AND status IN ('creating', 'running', 'stopping')")
        .execute(Tuple.of(orgId))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  public Future<Long> activeSandboxes(String orgId) {
    return activeSandboxes(pool, orgId);
  }

  static Future<Void> recordDenial(SqlClient conn, String orgId, String keyId, PolicyDecision.Request r,
      PolicyDecision.Denial d, OffsetDateTime now) {
    return conn.preparedQuery("INSERT INTO policy_denials (id, organization_id, api_key_id, policy, message, backend,"
            + " gpu, requested_timeout_secs, current_value, limit_value, created_at)"
            + " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .execute(Tuple.of(Ids.newId("deny"), orgId, keyId, d.policy(), d.message(), r.backend(), r.gpu())
            .addValue(r.timeoutSecs()).addValue(d.current() == null ? null : String.valueOf(d.current()))
            .addValue(String.valueOf(d.limit())).addValue(now))
        .mapEmpty();
  }

  /** Records a denial outside a create (a deadline moved past the lifetime limit). */
  public Future<Void> recordDenial(String orgId, String keyId, PolicyDecision.Request r, PolicyDecision.Denial d,
      OffsetDateTime now) {
    return recordDenial(pool, orgId, keyId, r, d, now);
  }

  /** The organization's most recent denials, newest first, with the name of the key that asked. */
  public Future<List<JsonObject>> recentDenials(String orgId, int limit) {
    return pool.preparedQuery("""
            SELECT d.policy, d.message, d.backend, d.gpu, d.requested_timeout_secs, d.current_value, d.limit_value,
                   d.created_at, d.api_key_id, k.name AS api_key_name
            FROM policy_denials d LEFT JOIN api_keys k ON k.id = d.api_key_id
            WHERE d.organization_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2""")
        .execute(Tuple.of(orgId, limit))
        .map(rows -> {
          List<JsonObject> out = new ArrayList<>();
          for (Row r : rows) {
            out.add(new JsonObject().put("policy", r.getString("policy")).put("message", r.getString("message"))
                .put("backend", r.getString("backend")).put("gpu", r.getString("gpu"))
                .put("requested_timeout_secs", r.getInteger("requested_timeout_secs"))
                .put("current_value", r.getString("current_value")).put("limit_value", r.getString("limit_value"))
                .put("created_at", ai.bespokelabs.sandbox.core.Times.iso(r.getOffsetDateTime("created_at")))
                .put("api_key_id", r.getString("api_key_id")).put("api_key_name", r.getString("api_key_name")));
          }
          return out;
        });
  }
}
