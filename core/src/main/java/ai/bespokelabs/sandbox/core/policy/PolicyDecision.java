package ai.bespokelabs.sandbox.core.policy;

import ai.bespokelabs.sandbox.core.model.Policy;
import io.vertx.core.json.JsonObject;
import java.util.Optional;

/**
 * The create-time checks of an organization policy, in the reference's order: allowed backends, allowed GPU
 * types (only when a GPU is requested), lifetime, concurrency, rolling-hour spend, UTC-day spend (spend at
 * or above the limit denies). Pure; the caller supplies the active count and spend read under the policy
 * row's lock.
 */
public final class PolicyDecision {
  private PolicyDecision() {}

  /** A refused create: which policy, the public message, and the current value against the limit. */
  public record Denial(String policy, String message, Object current, Object limit) {
    /** The 403 detail: the non-retryable {@code policy_denied} body. */
    public JsonObject detail() {
      return new JsonObject().put("message", message).put("code", "policy_denied").put("policy", policy)
          .put("retryable", false).put("current", current).put("limit", limit);
    }
  }

  /** What a create asks for that policies constrain. */
  public record Request(String backend, String gpu, Integer timeoutSecs) {}

  /** Customer spend in the rolling hour and the UTC day, read by the cost ledger under the same lock. */
  public record Spend(java.math.BigDecimal hour, java.math.BigDecimal day) {
    public static final Spend NONE = new Spend(java.math.BigDecimal.ZERO, java.math.BigDecimal.ZERO);
  }

  /** Reads spend in a window on the claiming transaction's connection. */
  @FunctionalInterface
  public interface SpendReader {
    io.vertx.core.Future<java.math.BigDecimal> spend(io.vertx.sqlclient.SqlClient conn, String orgId,
        java.time.OffsetDateTime from, java.time.OffsetDateTime to);
  }

  public static boolean limitsSpend(Policy p) {
    return p.hourlySpendLimitUsd() != null || p.dailySpendLimitUsd() != null;
  }

  public static Optional<Denial> evaluate(Policy p, Request r, long activeSandboxes) {
    return evaluate(p, r, activeSandboxes, Spend.NONE);
  }

  public static Optional<Denial> evaluate(Policy p, Request r, long activeSandboxes, Spend spend) {
    if (p.allowedBackends() != null && !p.allowedBackends().contains(r.backend())) {
      return Optional.of(new Denial("allowed_backends", "Backend " + r.backend() + " is not allowed by organization policy.",
          r.backend(), String.join(",", p.allowedBackends())));
    }
    if (r.gpu() != null && p.allowedGpuTypes() != null && !p.allowedGpuTypes().contains(r.gpu().trim())) {
      return Optional.of(new Denial("allowed_gpu_types", "GPU type " + r.gpu() + " is not allowed by organization policy.",
          r.gpu(), String.join(",", p.allowedGpuTypes())));
    }
    if (p.maxSandboxLifetimeSecs() != null) {
      if (r.timeoutSecs() == null) {
        return Optional.of(new Denial("max_sandbox_lifetime_secs",
            "A sandbox lifetime is required by organization policy.", null, p.maxSandboxLifetimeSecs()));
      }
      if (r.timeoutSecs() > p.maxSandboxLifetimeSecs()) {
        return Optional.of(new Denial("max_sandbox_lifetime_secs",
            "Requested sandbox lifetime exceeds organization policy.", r.timeoutSecs(), p.maxSandboxLifetimeSecs()));
      }
    }
    if (p.maxConcurrentSandboxes() != null && activeSandboxes >= p.maxConcurrentSandboxes()) {
      return Optional.of(new Denial("max_concurrent_sandboxes", "Concurrent sandbox limit has been reached.",
          activeSandboxes, p.maxConcurrentSandboxes()));
    }
    if (p.hourlySpendLimitUsd() != null && spend.hour().compareTo(p.hourlySpendLimitUsd()) >= 0) {
      return Optional.of(new Denial("hourly_spend_limit_usd", "Hourly spend limit usd has been reached.",
          spend.hour().toPlainString(), p.hourlySpendLimitUsd().toPlainString()));
    }
    if (p.dailySpendLimitUsd() != null && spend.day().compareTo(p.dailySpendLimitUsd()) >= 0) {
      return Optional.of(new Denial("daily_spend_limit_usd", "Daily spend limit usd has been reached.",
          spend.day().toPlainString(), p.dailySpendLimitUsd().toPlainString()));
    }
    return Optional.empty();
  }
}
