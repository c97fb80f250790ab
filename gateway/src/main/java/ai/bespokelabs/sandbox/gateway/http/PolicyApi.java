package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.Policy;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.math.BigDecimal;
import java.time.Clock;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

/** Organization guardrails: {@code GET/PUT /v1/policies/current} and {@code GET /v1/policy-summary}. */
public final class PolicyApi implements Endpoints {
  static final int SUMMARY_DENIALS = 20;

  private final PolicyRepository policies;
  private final CostLedger ledger;
  private final Backends backends;
  private final Clock clock;
  private final PolicyHints hints;

  public PolicyApi(PolicyRepository policies, CostLedger ledger, Backends backends, PolicyHints hints, Clock clock) {
    this.hints = hints;
    this.policies = policies;
    this.ledger = ledger;
    this.backends = backends;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/policies/current", Scopes.POLICIES_READ, this::get);
    api.authed(HttpMethod.PUT, "/v1/policies/current", Scopes.POLICIES_WRITE, this::put);
    api.authed(HttpMethod.GET, "/v1/policy-summary", Scopes.POLICIES_READ, this::summary);
  }

  static JsonObject json(Policy p) {
    return new JsonObject()
        .put("max_concurrent_sandboxes", p.maxConcurrentSandboxes())
        .put("hourly_spend_limit_usd", Wire.decimal(p.hourlySpendLimitUsd()))
        .put("daily_spend_limit_usd", Wire.decimal(p.dailySpendLimitUsd()))
        .put("allowed_backends", p.allowedBackends() == null ? null : new JsonArray(p.allowedBackends()))
        .put("allowed_gpu_types", p.allowedGpuTypes() == null ? null : new JsonArray(p.allowedGpuTypes()))
        .put("max_sandbox_lifetime_secs", p.maxSandboxLifetimeSecs())
        .put("version", p.version())
        .put("updated_at", Wire.ts(p.updatedAt()))
        .put("updated_by_api_key_id", p.updatedByApiKeyId())
        .put("include_llm_cost", p.includeLlmCost())
        .put("default_backend", p.defaultBackend());
  }

  private Future<Reply> get(RoutingContext ctx, Principal p) {
    return policies.current(p.organizationId()).map(policy -> Reply.ok(json(policy)));
  }

  /** Full replace: omitted fields become null (not enforced). Nothing changes when any field is invalid. */
  private Future<Reply> put(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    Integer concurrent = body.integer("max_concurrent_sandboxes", null, 0);
    BigDecimal hourly = body.decimal("hourly_spend_limit_usd");
    BigDecimal daily = body.decimal("daily_spend_limit_usd");
    List<String> backends = body.stringList("allowed_backends");
    List<String> gpus = body.stringList("allowed_gpu_types");
    Integer lifetime = body.integer("max_sandbox_lifetime_secs", 0, null);
    Boolean includeLlm = body.bool("include_llm_cost");
    String defaultBackend = body.string("default_backend", false, 1, 64);
    body.check();
    List<String> allowedBackends = null;
    if (backends != null) {
      TreeSet<String> set = new TreeSet<>();
      for (String b : backends) {
        String name = b.trim().toLowerCase(Locale.ROOT);
        if (!this.backends.isEnabled(name)) {
          throw ApiException.invalid("backend is not enabled: " + name);
        }
        set.add(name);
      }
      allowedBackends = List.copyOf(set);
    }
    List<String> allowedGpus = null;
    if (gpus != null) {
      TreeSet<String> set = new TreeSet<>();
      for (String g : gpus) {
        if (g.trim().isEmpty()) {
          throw ApiException.invalid("allowed GPU types must not be empty strings");
        }
        set.add(g.trim());
      }
      allowedGpus = List.copyOf(set);
    }
    if (defaultBackend != null) {
      defaultBackend = defaultBackend.trim().toLowerCase(Locale.ROOT);
      if (!defaultBackend.equals("auto") && !this.backends.isEnabled(defaultBackend)) {
        throw ApiException.invalid("default_backend must be auto or an enabled backend: " + defaultBackend);
      }
      if (!defaultBackend.equals("auto") && allowedBackends != null && !allowedBackends.contains(defaultBackend)) {
        throw ApiException.invalid("default_backend must be one of allowed_backends");
      }
    }
    Policy next = new Policy(concurrent, hourly, daily, allowedBackends, allowedGpus, lifetime, 0, null, null,
        Boolean.TRUE.equals(includeLlm), defaultBackend);
    return policies.replace(p.organizationId(), next, p.keyId(), Times.now(clock)).map(saved -> {
      hints.forget(p.organizationId()); // here at once; PostgreSQL tells the other nodes
      return Reply.ok(json(saved));
    });
  }

  private Future<Reply> summary(RoutingContext ctx, Principal p) {
    p.require(Scopes.USAGE_READ);
    java.time.OffsetDateTime now = Times.now(clock);
    return ledger.accrue(p.organizationId(), now).compose(v -> Future.all(
            policies.current(p.organizationId()), policies.activeSandboxes(p.organizationId()),
            policies.recentDenials(p.organizationId(), SUMMARY_DENIALS), ledger.hourAndDay(p.organizationId(), now)))
        .map(all -> Reply.ok(new JsonObject()
            .put("policy", json(all.resultAt(0)))
            .put("usage", new JsonObject()
                .put("active_sandboxes", all.<Long>resultAt(1))
                .put("hourly_spend_usd", CostLedger.plain(all.<BigDecimal[]>resultAt(3)[0]))
                .put("daily_spend_usd", CostLedger.plain(all.<BigDecimal[]>resultAt(3)[1])))
            .put("denials", new JsonArray(all.<List<JsonObject>>resultAt(2)))));
  }
}
