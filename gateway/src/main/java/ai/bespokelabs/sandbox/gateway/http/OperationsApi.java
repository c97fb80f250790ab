package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import ai.bespokelabs.sandbox.supervisor.AlertEvaluator;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;

/** Alerts (configuration and events), the audit trail, and retention. */
public final class OperationsApi implements Endpoints {
  private final OperationsRepository operations;
  private final AlertEvaluator alerts;
  private final CostLedger ledger;
  private final Clock clock;

  public OperationsApi(OperationsRepository operations, AlertEvaluator alerts, CostLedger ledger, Clock clock) {
    this.operations = operations;
    this.alerts = alerts;
    this.ledger = ledger;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/alerts/configuration", Scopes.ALERTS_READ,
        (ctx, p) -> operations.alertConfiguration(p.organizationId()).map(Reply::ok));
    api.authed(HttpMethod.PUT, "/v1/alerts/configuration", Scopes.ALERTS_WRITE, this::configureAlerts);
    api.authed(HttpMethod.GET, "/v1/alerts", Scopes.ALERTS_READ, this::alerts);
    api.authed(HttpMethod.GET, "/v1/audit", Scopes.AUDIT_READ, (ctx, p) -> page(ctx,
        (offset, limit) -> operations.auditPage(p.organizationId(), offset, limit)));
    api.authed(HttpMethod.GET, "/v1/retention/current", Scopes.RETENTION_READ,
        (ctx, p) -> operations.retention(p.organizationId()).map(Reply::ok));
    api.authed(HttpMethod.PUT, "/v1/retention/current", Scopes.RETENTION_WRITE, this::configureRetention);
    api.authed(HttpMethod.POST, "/v1/retention/apply", Scopes.RETENTION_WRITE,
        (ctx, p) -> operations.applyRetention(p.organizationId(), Times.now(clock)).map(Reply::ok));
  }

  /** Full replace; an empty body resets every rule to its default. */
  private Future<Reply> configureAlerts(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx)).nonNull("repeated_failures_window_minutes", "provider_degradation_enabled",
        "failed_cleanup_enabled");
    Integer budget = body.integer("budget_threshold_percent", null, 1, 100);
    Integer failures = body.integer("repeated_failures_count", null, 1);
    Integer window = body.integer("repeated_failures_window_minutes", null, 1, 10080);
    Boolean degradation = body.bool("provider_degradation_enabled");
    Integer longRunning = body.integer("long_running_secs", null, 1);
    Boolean cleanup = body.bool("failed_cleanup_enabled");
    body.check();
    JsonObject c = new JsonObject().put("budget_threshold_percent", budget).put("repeated_failures_count", failures)
        .put("repeated_failures_window_minutes", window == null ? 60 : window)
        .put("provider_degradation_enabled", degradation == null || degradation).put("long_running_secs", longRunning)
        .put("failed_cleanup_enabled", cleanup == null || cleanup);
    return operations.replaceAlertConfiguration(p.organizationId(), c, p.keyId(), Times.now(clock)).map(Reply::ok);
  }

  /** Alerts are evaluated on every read as well as by the supervisor. */
  private Future<Reply> alerts(RoutingContext ctx, Principal p) {
    return ledger.accrue(p.organizationId(), Times.now(clock))
        .compose(v -> alerts.evaluate(p.organizationId(), Times.now(clock)))
        .compose(v -> page(ctx, (offset, limit) -> operations.alertsPage(p.organizationId(), offset, limit)));
  }

  private Future<Reply> configureRetention(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx)).nonNull("operational_days", "audit_days");
    Integer operational = body.integer("operational_days", null, 1, 3650);
    Integer audit = body.integer("audit_days", null, 1, 3650);
    body.check();
    int op = operational == null ? 90 : operational;
    int au = audit == null ? 365 : audit;
    return operations.replaceRetention(p.organizationId(), op, au, p.keyId(), Times.now(clock)).map(Reply::ok);
  }

  @FunctionalInterface
  private interface PageQuery {
    Future<OperationsRepository.Page> fetch(long offset, int limit);
  }

  private static Future<Reply> page(RoutingContext ctx, PageQuery query) {
    int limit = Paging.limit(ctx.queryParams().get("limit"), 50, 200);
    long offset = Paging.offset(ctx.queryParams().get("cursor"));
    return query.fetch(offset, limit).map(page -> Reply.ok(new JsonObject()
        .put("items", new JsonArray(page.items()))
        .put("next_cursor", page.more() ? Paging.cursor(offset + limit) : null)));
  }
}
