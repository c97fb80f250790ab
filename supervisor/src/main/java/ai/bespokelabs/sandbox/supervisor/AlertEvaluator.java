package ai.bespokelabs.sandbox.supervisor;

import ai.bespokelabs.sandbox.core.model.Policy;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * Evaluates an organization's alert rules and raises each alert once (deduplicated by key): spend reaching
 * the budget threshold of a spend limit, repeated failed sandboxes within a window, sandboxes running longer
 * than allowed, and terminations that failed. Provider degradation is raised where checks run.
 */
public final class AlertEvaluator {
  private static final DateTimeFormatter HOUR = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH");
  private static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("uuuu-MM-dd");

  private final OperationsRepository ops;
  private final PolicyRepository policies;
  private final BiFunction<String, OffsetDateTime, Future<BigDecimal[]>> spend;

  /** @param spend rolling-hour and UTC-day customer spend of an organization (from the cost ledger) */
  public AlertEvaluator(OperationsRepository ops, PolicyRepository policies,
      BiFunction<String, OffsetDateTime, Future<BigDecimal[]>> spend) {
    this.ops = ops;
    this.policies = policies;
    this.spend = spend;
  }

  /** Evaluates every organization that configured alerts. */
  public Future<Void> evaluateAll(OffsetDateTime now) {
    return ops.organizationsWithAlerts().compose(orgs -> {
      Future<Void> chain = Future.succeededFuture();
      for (String org : orgs) {
        chain = chain.compose(v -> evaluate(org, now));
      }
      return chain;
    });
  }

  public Future<Void> evaluate(String orgId, OffsetDateTime now) {
    OffsetDateTime utc = now.withOffsetSameInstant(ZoneOffset.UTC);
    return ops.alertConfiguration(orgId).compose(c -> budget(orgId, c, utc)
        .compose(v -> failures(orgId, c, utc))
        .compose(v -> longRunning(orgId, c, utc))
        .compose(v -> failedCleanup(orgId, c, utc)));
  }

  private Future<Void> budget(String orgId, JsonObject c, OffsetDateTime now) {
    Integer pct = c.getInteger("budget_threshold_percent");
    if (pct == null) {
      return Future.succeededFuture();
    }
    return policies.current(orgId).compose(p -> {
      if (!limitsSpend(p)) {
        return Future.succeededFuture();
      }
      return spend.apply(orgId, now).compose(s -> {
        List<Future<Void>> raised = new ArrayList<>();
        if (reached(s[0], p.hourlySpendLimitUsd(), pct)) {
          raised.add(ops.raise(orgId, "budget_threshold", "warning", "Hourly spend reached " + pct
              + "% of the limit.", "policy", "hourly_spend_limit_usd", "budget:hourly:" + HOUR.format(now), now));
        }
        if (reached(s[1], p.dailySpendLimitUsd(), pct)) {
          raised.add(ops.raise(orgId, "budget_threshold", "warning", "Daily spend reached " + pct
              + "% of the limit.", "policy", "daily_spend_limit_usd", "budget:daily:" + DAY.format(now), now));
        }
        return Future.all(raised).mapEmpty();
      });
    });
  }

  static boolean reached(BigDecimal spent, BigDecimal limit, int pct) {
    return limit != null && spent.multiply(BigDecimal.valueOf(100)).compareTo(limit.multiply(BigDecimal.valueOf(pct))) >= 0;
  }

  private Future<Void> failures(String orgId, JsonObject c, OffsetDateTime now) {
    Integer count = c.getInteger("repeated_failures_count");
    if (count == null) {
      return Future.succeededFuture();
    }
    int window = c.getInteger("repeated_failures_window_minutes");
    return ops.failedSince(orgId, now.minusMinutes(window))
        .compose(failed -> failed < count ? Future.succeededFuture()
            : ops.raise(orgId, "repeated_failures", "critical", "At least " + count + " sandboxes failed in the last "
                + window + " minutes.", "organization", orgId, "failures:" + HOUR.format(now) + ":" + count, now));
  }

  private Future<Void> longRunning(String orgId, JsonObject c, OffsetDateTime now) {
    Integer secs = c.getInteger("long_running_secs");
    if (secs == null) {
      return Future.succeededFuture();
    }
    return ops.liveCreatedBefore(orgId, now.minusSeconds(secs))
        .compose(ids -> {
          List<Future<Void>> raised = new ArrayList<>();
          for (String id : ids) {
            raised.add(ops.raise(orgId, "long_running", "warning", "Sandbox has been running for more than " + secs
                + " seconds.", "sandbox", id, "long_running:" + id, now));
          }
          return Future.all(raised).mapEmpty();
        });
  }

  private Future<Void> failedCleanup(String orgId, JsonObject c, OffsetDateTime now) {
    if (!c.getBoolean("failed_cleanup_enabled")) {
      return Future.succeededFuture();
    }
    return ops.failedTerminations(orgId)
        .compose(failed -> {
          List<Future<Void>> raised = new ArrayList<>();
          for (OperationsRepository.FailedTermination f : failed) {
            String id = f.sandboxId();
            raised.add(ops.raise(orgId, "failed_cleanup", "critical", "Sandbox termination failed; its resources may"
                + " still exist.", "sandbox", id, "failed_cleanup:sandbox:" + id + ":"
                + f.failedAt().toInstant(), now));
          }
          return Future.all(raised).mapEmpty();
        });
  }

  /** Raises provider degradation for every organization that wants it (call on the transition only). */
  public Future<Void> providerDegraded(String backend, OffsetDateTime checkedAt) {
    return ops.organizationsAlertedOnDegradation().compose(orgs -> {
      List<Future<Void>> raised = new ArrayList<>();
      for (String org : orgs) {
        raised.add(ops.raise(org, "provider_degradation", "critical", "Provider " + backend + " is degraded.",
            "provider", backend, "provider_degradation:" + backend + ":" + checkedAt.toInstant(), checkedAt));
      }
      return Future.all(raised).mapEmpty();
    });
  }

  static boolean limitsSpend(Policy p) {
    return p.hourlySpendLimitUsd() != null || p.dailySpendLimitUsd() != null;
  }
}
