package ai.bespokelabs.sandbox.client;

import java.math.BigDecimal;
import java.util.List;

/**
 * The organization's guardrails; a null field is not enforced. {@link SandboxClient#setPolicy} replaces all of
 * them (version, updatedAt and updatedByApiKeyId are the gateway's and not sent; includeLlmCost and
 * defaultBackend left null are false and none).
 */
public record Policy(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd,
    BigDecimal dailySpendLimitUsd, List<String> allowedBackends, List<String> allowedGpuTypes,
    Integer maxSandboxLifetimeSecs, Long version, String updatedAt, String updatedByApiKeyId, Boolean includeLlmCost,
    String defaultBackend) {

  /** A policy to set, from its six guardrails. */
  public static Policy of(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd,
      BigDecimal dailySpendLimitUsd, List<String> allowedBackends, List<String> allowedGpuTypes,
      Integer maxSandboxLifetimeSecs) {
    return new Policy(maxConcurrentSandboxes, hourlySpendLimitUsd, dailySpendLimitUsd, allowedBackends,
        allowedGpuTypes, maxSandboxLifetimeSecs, null, null, null, null, null);
  }

  /** This policy counting agent runs' LLM cost against the spend limits, or not. */
  public Policy withIncludeLlmCost(Boolean value) {
    return new Policy(maxConcurrentSandboxes, hourlySpendLimitUsd, dailySpendLimitUsd, allowedBackends,
        allowedGpuTypes, maxSandboxLifetimeSecs, version, updatedAt, updatedByApiKeyId, value, defaultBackend);
  }

  /** This policy with the backend of creates that name none: {@code auto} or a backend name. */
  public Policy withDefaultBackend(String value) {
    return new Policy(maxConcurrentSandboxes, hourlySpendLimitUsd, dailySpendLimitUsd, allowedBackends,
        allowedGpuTypes, maxSandboxLifetimeSecs, version, updatedAt, updatedByApiKeyId, includeLlmCost, value);
  }
}
