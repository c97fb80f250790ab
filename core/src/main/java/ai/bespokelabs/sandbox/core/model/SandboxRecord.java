package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import java.math.BigDecimal;
import java.time.OffsetDateTime;

/**
 * One row of {@code sandboxes}, with the names of the keys that created and terminated it; {@code config} is
 * the stored configuration (env var names, never their values); {@code placement} the decision of a
 * {@code backend: "auto"} create, null for a named backend.
 */
public record SandboxRecord(
    String id,
    String organizationId,
    String backend,
    String status,
    SandboxConfig config,
    OffsetDateTime createdAt,
    OffsetDateTime destroyedAt,
    String error,
    String idempotencyKey,
    String requestFingerprint,
    String createToken,
    String nodeId,
    String providerResourceId,
    JsonObject latestError,
    String retryStatus,
    String cleanupStatus,
    OffsetDateTime requestedAt,
    OffsetDateTime provisioningAt,
    OffsetDateTime runningAt,
    OffsetDateTime stoppingAt,
    OffsetDateTime terminatedAt,
    OffsetDateTime failedAt,
    OffsetDateTime lastProviderObservedAt,
    BigDecimal hourlyRateUsd,
    String currency,
    String pricingSource,
    String costState,
    boolean providerMissing,
    String creatorApiKeyId,
    String creatorApiKeyName,
    int version,
    OffsetDateTime expiresAt,
    String terminatedByApiKeyId,
    String terminatedByApiKeyName,
    String terminationReason,
    JsonObject placement) {

  public static final String ACTIVE_STATUSES = "('creating','running','stopping')";

  /** Columns for {@link #from(Row)}; expects {@code sandboxes s} and the two key-name subselects. */
  public static final String COLUMNS = """
      s.id, s.organization_id, s.backend, s.status, s.config, s.created_at, s.destroyed_at, s.error,
      s.idempotency_key, s.request_fingerprint, s.create_token, s.node_id, s.provider_resource_id,
      s.latest_error, s.retry_status, s.cleanup_status, s.requested_at, s.provisioning_at, s.running_at,
      s.stopping_at, s.terminated_at, s.failed_at, s.last_provider_observed_at, s.hourly_rate_usd,
      s.currency, s.pricing_source, s.cost_state, s.provider_missing, s.creator_api_key_id,
      (SELECT k.name FROM api_keys k WHERE k.id = s.creator_api_key_id) AS creator_api_key_name,
      s.version, s.expires_at, s.terminated_by_api_key_id,
      (SELECT k.name FROM api_keys k WHERE k.id = s.terminated_by_api_key_id) AS terminated_by_api_key_name,
      s.termination_reason, s.placement""";

  public static SandboxRecord from(Row r) {
    return new SandboxRecord(
        r.getString("id"), r.getString("organization_id"), r.getString("backend"), r.getString("status"),
        SandboxConfig.fromStoredJson((JsonObject) r.getValue("config")), r.getOffsetDateTime("created_at"),
        r.getOffsetDateTime("destroyed_at"), r.getString("error"), r.getString("idempotency_key"),
        r.getString("request_fingerprint"), r.getString("create_token"), r.getString("node_id"),
        r.getString("provider_resource_id"), (JsonObject) r.getValue("latest_error"),
        r.getString("retry_status"), r.getString("cleanup_status"), r.getOffsetDateTime("requested_at"),
        r.getOffsetDateTime("provisioning_at"), r.getOffsetDateTime("running_at"),
        r.getOffsetDateTime("stopping_at"), r.getOffsetDateTime("terminated_at"),
        r.getOffsetDateTime("failed_at"), r.getOffsetDateTime("last_provider_observed_at"),
        r.getBigDecimal("hourly_rate_usd"), r.getString("currency"), r.getString("pricing_source"),
        r.getString("cost_state"), r.getBoolean("provider_missing"), r.getString("creator_api_key_id"),
        r.getString("creator_api_key_name"), r.getInteger("version"), r.getOffsetDateTime("expires_at"),
        r.getString("terminated_by_api_key_id"), r.getString("terminated_by_api_key_name"),
        r.getString("termination_reason"), (JsonObject) r.getValue("placement"));
  }

  public boolean isActive() {
    return "creating".equals(status) || "running".equals(status) || "stopping".equals(status);
  }
}
