package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.repo.SandboxHistoryRepository;
import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import ai.bespokelabs.sandbox.core.model.AttemptRecord;
import ai.bespokelabs.sandbox.core.model.ExecutionRecord;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.List;

/** JSON representations of the wire contract (field names and formats of the seed's API). */
public final class Wire {
  static final String GENERIC_SANDBOX_ERROR = "Sandbox operation failed.";

  private Wire() {}

  /** ISO-8601 in UTC with {@code +00:00}, microsecond precision (what PostgreSQL stores). */
  public static String ts(OffsetDateTime t) {
    return ai.bespokelabs.sandbox.core.Times.iso(t);
  }

  /** Money and other decimals as plain decimal strings. */
  public static String decimal(BigDecimal d) {
    return d == null ? null : d.toPlainString();
  }

  public static JsonObject sandbox(SandboxRecord s) {
    JsonObject out = new JsonObject()
        .put("id", s.id())
        .put("backend", s.backend())
        .put("status", s.status())
        .put("config", s.config().toStoredJson())
        .put("created_at", ts(s.createdAt()))
        .put("destroyed_at", ts(s.destroyedAt()))
        .put("error", s.error() == null || s.error().isEmpty() ? null : GENERIC_SANDBOX_ERROR)
        .put("attempt_count", attempts(s.placement()))
        .put("latest_error", s.latestError())
        .put("retry_status", s.retryStatus())
        .put("cleanup_status", cleanupStatus(s.cleanupStatus()))
        .put("provider_resource_id", s.providerResourceId())
        .put("requested_at", ts(s.requestedAt()))
        .put("provisioning_at", ts(s.provisioningAt()))
        .put("running_at", ts(s.runningAt()))
        .put("stopping_at", ts(s.stoppingAt()))
        .put("terminated_at", ts(s.terminatedAt()))
        .put("failed_at", ts(s.failedAt()))
        .put("last_provider_observed_at", ts(s.lastProviderObservedAt()))
        .put("hourly_rate_usd", decimal(s.hourlyRateUsd()))
        .put("currency", s.currency())
        .put("pricing_source", s.pricingSource())
        .put("cost_state", s.costState())
        .put("provider_missing", s.providerMissing())
        .put("creator_api_key_id", s.creatorApiKeyId())
        .put("creator_api_key_name", s.creatorApiKeyName())
        .put("version", s.version())
        .put("expires_at", ts(s.expiresAt()))
        .put("terminated_by_api_key_id", s.terminatedByApiKeyId())
        .put("terminated_by_api_key_name", s.terminatedByApiKeyName())
        .put("termination_reason", s.terminationReason());
    if (s.placement() != null) {
      out.put("placement", s.placement());
    }
    return out;
  }

  /** How many backends a create tried: one, or for {@code backend: "auto"} those its placement failed or chose. */
  static int attempts(JsonObject placement) {
    if (placement == null || placement.getJsonArray("candidates") == null) {
      return 1;
    }
    int n = 0;
    for (Object o : placement.getJsonArray("candidates")) {
      if (o instanceof JsonObject c && ("failed".equals(c.getString("status")) || "chosen".equals(c.getString("status")))) {
        n++;
      }
    }
    return Math.max(1, n);
  }

  public static JsonArray sandboxes(List<SandboxRecord> list) {
    JsonArray a = new JsonArray();
    list.forEach(s -> a.add(sandbox(s)));
    return a;
  }

  public static JsonObject observation(SandboxHistoryRepository.Observation o) {
    return new JsonObject().put("observation_id", o.observationId())
        .put("provider_resource_id", o.providerResourceId()).put("status", o.status())
        .put("observed_at", Times.iso(o.observedAt()))
        .put("provider_cost_usd", o.providerCostUsd() == null ? null : o.providerCostUsd().toPlainString())
        .put("currency", o.currency()).put("missing", o.missing());
  }

  public static JsonObject reconciliation(SandboxHistoryRepository.ReconciliationSummary r) {
    return new JsonObject().put("total", r.total()).put("unreconciled", r.unreconciled())
        .put("provider_reported", r.providerReported()).put("reconciled", r.reconciled())
        .put("missing", r.missing()).put("last_provider_observed_at", Times.iso(r.lastProviderObservedAt()));
  }

  public static JsonObject attempt(AttemptRecord a) {
    return new JsonObject()
        .put("attempt_number", a.attemptNumber())
        .put("backend", a.backend())
        .put("status", a.status())
        .put("retry_status", a.retryStatus())
        .put("cleanup_status", a.cleanupStatus())
        .put("provider_resource_id", a.providerResourceId())
        .put("started_at", ts(a.startedAt()))
        .put("completed_at", ts(a.completedAt()))
        .put("error", a.error());
  }

  public static JsonObject execution(ExecutionRecord e) {
    return new JsonObject()
        .put("id", e.id())
        .put("request_id", e.requestId())
        .put("status", e.status())
        .put("created_at", ts(e.createdAt()))
        .put("completed_at", ts(e.completedAt()))
        .put("response", e.response())
        .put("error", e.error());
  }

  /** A key as listed: never the secret or its digest. */
  public static JsonObject apiKey(ApiKeyRecord k) {
    return new JsonObject()
        .put("id", k.id())
        .put("name", k.name())
        .put("prefix", k.prefix())
        .put("scopes", new JsonArray(k.scopes()))
        .put("created_at", ts(k.createdAt()))
        .put("last_used_at", ts(k.lastUsedAt()))
        .put("expires_at", ts(k.expiresAt()))
        .put("revoked_at", ts(k.revokedAt()));
  }

  /** A key as issued: the only response that ever carries the secret. */
  public static JsonObject issuedKey(ApiKeyRecord k, String secret) {
    return new JsonObject()
        .put("id", k.id())
        .put("name", k.name())
        .put("prefix", k.prefix())
        .put("scopes", new JsonArray(k.scopes()))
        .put("secret", secret)
        .put("created_at", ts(k.createdAt()))
        .put("expires_at", ts(k.expiresAt()));
  }

  /**
   * The contract's cleanup status: a lost node's sandbox waits for its node to return ({@code pending}: not yet
   * known to be gone) and is then reaped ({@code done}).
   */
  static String cleanupStatus(String stored) {
    return stored == null ? null : switch (stored) {
      case "pending" -> "unknown";
      case "done" -> "deleted";
      default -> stored;
    };
  }
}
