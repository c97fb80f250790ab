package ai.bespokelabs.sandbox.core.model;

import io.vertx.sqlclient.Row;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.List;

/**
 * An organization's guardrails; null fields are not enforced. Before the first update every field is null
 * and the version is 1.
 */
public record Policy(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd, BigDecimal dailySpendLimitUsd,
    List<String> allowedBackends, List<String> allowedGpuTypes, Integer maxSandboxLifetimeSecs, int version,
    OffsetDateTime updatedAt, String updatedByApiKeyId, boolean includeLlmCost, String defaultBackend) {

  /** A policy whose spend limits count sandbox costs only, without a default backend. */
  public Policy(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd, BigDecimal dailySpendLimitUsd,
      List<String> allowedBackends, List<String> allowedGpuTypes, Integer maxSandboxLifetimeSecs, int version,
      OffsetDateTime updatedAt, String updatedByApiKeyId) {
    this(maxConcurrentSandboxes, hourlySpendLimitUsd, dailySpendLimitUsd, allowedBackends, allowedGpuTypes,
        maxSandboxLifetimeSecs, version, updatedAt, updatedByApiKeyId, false, null);
  }

  public static final Policy DEFAULT = new Policy(null, null, null, null, null, null, 1, null, null);

  public static final String COLUMNS = "max_concurrent_sandboxes, hourly_spend_limit_usd, daily_spend_limit_usd,"
      + " allowed_backends, allowed_gpu_types, max_sandbox_lifetime_secs, version, updated_at, updated_by_api_key_id,"
      + " include_llm_cost, default_backend";

  public static Policy from(Row r) {
    String[] backends = r.getArrayOfStrings("allowed_backends");
    String[] gpus = r.getArrayOfStrings("allowed_gpu_types");
    return new Policy(r.getInteger("max_concurrent_sandboxes"), r.getBigDecimal("hourly_spend_limit_usd"),
        r.getBigDecimal("daily_spend_limit_usd"), backends == null ? null : List.of(backends),
        gpus == null ? null : List.of(gpus), r.getInteger("max_sandbox_lifetime_secs"), r.getInteger("version"),
        r.getOffsetDateTime("updated_at"), r.getString("updated_by_api_key_id"),
        Boolean.TRUE.equals(r.getBoolean("include_llm_cost")), r.getString("default_backend"));
  }
}
