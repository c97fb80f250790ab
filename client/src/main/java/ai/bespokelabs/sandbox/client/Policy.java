package ai.bespokelabs.sandbox.client;

import java.math.BigDecimal;
import java.util.List;

/**
 * The organization's guardrails; a null field is not enforced. {@link SandboxClient#setPolicy} replaces all of
 * them (version, updatedAt and updatedByApiKeyId are the gateway's and not sent).
 */
public record Policy(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd,
    BigDecimal dailySpendLimitUsd, List<String> allowedBackends, List<String> allowedGpuTypes,
    Integer maxSandboxLifetimeSecs, Long version, String updatedAt, String updatedByApiKeyId) {

  /** A policy to set, from its six guardrails. */
  public static Policy of(Integer maxConcurrentSandboxes, BigDecimal hourlySpendLimitUsd,
      BigDecimal dailySpendLimitUsd, List<String> allowedBackends, List<String> allowedGpuTypes,
      Integer maxSandboxLifetimeSecs) {
    return new Policy(maxConcurrentSandboxes, hourlySpendLimitUsd, dailySpendLimitUsd, allowedBackends,
        allowedGpuTypes, maxSandboxLifetimeSecs, null, null, null);
  }
}
