package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.ProviderHealthRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.supervisor.AlertEvaluator;
import ai.bespokelabs.sandbox.supervisor.Reconciler;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Provider health, deployment-scoped: which backends are enabled and how their last real check went. Only
 * the backend, configured state, status, check time and a fixed message are ever shown — never a
 * credential, its name, or a provider's own error text.
 */
public final class ProviderApi implements Endpoints {
  static final String HEALTHY = "Provider is healthy.";
  static final String DEGRADED = "Provider health check failed.";

  private final RuntimeClient runtime;
  private final Backends backends;
  private final ProviderHealthRepository health;
  private final Reconciler reconciler;
  private final AlertEvaluator alerts;
  private final Clock clock;

  public ProviderApi(RuntimeClient runtime, Backends backends, ProviderHealthRepository health, Reconciler reconciler,
      AlertEvaluator alerts, Clock clock) {
    this.runtime = runtime;
    this.backends = backends;
    this.health = health;
    this.reconciler = reconciler;
    this.alerts = alerts;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/providers", Scopes.PROVIDERS_READ, this::list);
    api.authed(HttpMethod.GET, "/v1/providers/{backend}", Scopes.PROVIDERS_READ, this::show);
    api.authed(HttpMethod.POST, "/v1/providers/{backend}/health-check", Scopes.PROVIDERS_WRITE, this::check);
    api.authed(HttpMethod.POST, "/v1/reconciliation/{backend}", Scopes.PROVIDERS_RECONCILE, this::reconcile);
  }

  /**
   * Reconciles the organization's sandboxes of one backend with what the provider lists (node-bound
   * backends: the sandboxes this node hosts).
   */
  private Future<Reply> reconcile(RoutingContext ctx, Principal p) {
    String backend = ctx.pathParam("backend").trim().toLowerCase(Locale.ROOT);
    if (!backends.isEnabled(backend)) {
      throw ApiException.invalid("reconciliation is not configured: " + backend);
    }
    String node = backends.isNodeBound(backend) ? backends.nodeId() : null;
    return reconciler.reconcile(p.organizationId(), backend, node, Times.now(clock))
        .map(r -> Reply.ok(r.toJson()));
  }

  private Future<Reply> list(RoutingContext ctx, Principal p) {
    return health.all().map(rows -> {
      JsonArray items = new JsonArray();
      for (String backend : backends.names()) {
        items.add(item(backend, backends.unavailable(backend), backends.capabilities(backend),
            rows.get(backend)));
      }
      return Reply.ok(new JsonObject().put("items", items));
    });
  }

  /**
   * One backend's entry of the list plus the public setup facts its adapter gives (runpod: the gateway's SSH
   * public key and its fingerprint), asked over the bus like the health check.
   */
  private Future<Reply> show(RoutingContext ctx, Principal p) {
    String backend = ctx.pathParam("backend").trim().toLowerCase(Locale.ROOT);
    if (!backends.isEnabled(backend)) {
      throw ApiException.notFound("provider not found");
    }
    Future<JsonObject> details = runtime.details(backend);
    return Future.all(health.all(), details).map(all -> {
      JsonObject row = all.<Map<String, JsonObject>>resultAt(0).get(backend);
      JsonObject item = item(backend, backends.unavailable(backend), backends.capabilities(backend), row);
      JsonObject extra = all.resultAt(1);
      if (extra != null) {
        extra.forEach(e -> item.getMap().putIfAbsent(e.getKey(), e.getValue())); // never over the entry's fields
      }
      return Reply.ok(item);
    });
  }

  private Future<Reply> check(RoutingContext ctx, Principal p) {
    String backend = ctx.pathParam("backend").trim().toLowerCase(Locale.ROOT);
    if (!backends.isEnabled(backend)) {
      throw ApiException.invalid("backend is not enabled: " + backend);
    }
    return runtime.health(backend)
        .transform(ar -> {
          String status = ar.succeeded() ? "healthy" : "degraded";
          java.time.OffsetDateTime now = Times.now(clock);
          return health.record(backend, status, ar.succeeded() ? HEALTHY : DEGRADED, p.keyId(), now)
              .compose(previous -> "degraded".equals(status) && !"degraded".equals(previous)
                  ? alerts.providerDegraded(backend, now) : Future.succeededFuture());
        })
        .compose(v -> health.all())
        .map(rows -> Reply.ok(item(backend, backends.unavailable(backend), backends.capabilities(backend),
            rows.get(backend))));
  }

  /**
   * {@code configured}: whether a create on this node would meet what it needs, not merely that it is enabled;
   * {@code capabilities}: what it offers beyond creating, destroying and running programs. A backend that is not
   * configured is {@code unconfigured}, its message saying why (what to install, which setting is wrong).
   */
  static JsonObject item(String backend, java.util.Optional<String> unavailable, List<String> capabilities,
      JsonObject row) {
    JsonObject item = new JsonObject()
        .put("backend", backend)
        .put("configured", unavailable.isEmpty())
        .put("capabilities", new JsonArray(capabilities));
    if (unavailable.isPresent()) {
      return item.put("status", "unconfigured")
          .put("checked_at", row == null ? null : row.getString("checked_at"))
          .put("message", unavailable.get());
    }
    return item
        .put("status", row == null ? "unknown" : row.getString("status"))
        .put("checked_at", row == null ? null : row.getString("checked_at"))
        .put("message", row == null ? "Not checked yet." : row.getString("message"));
  }
}
