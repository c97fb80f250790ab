package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.SandboxHistoryRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import ai.bespokelabs.sandbox.ledger.Exports;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Set;

/** Costs grouped by sandbox, backend or UTC day; the reconciliation summary; CSV exports. */
public final class CostApi implements Endpoints {
  static final Set<String> GROUPS = Set.of("sandbox", "backend", "day");

  private final CostLedger ledger;
  private final Exports exports;
  private final SandboxHistoryRepository history;
  private final Clock clock;

  public CostApi(CostLedger ledger, Exports exports, SandboxHistoryRepository history, Clock clock) {
    this.ledger = ledger;
    this.exports = exports;
    this.history = history;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/costs", Scopes.USAGE_READ, this::costs);
    api.authed(HttpMethod.GET, "/v1/reconciliation", Scopes.SANDBOXES_READ,
        (ctx, p) -> history.reconciliationSummary(p.organizationId()).map(r -> Reply.ok(Wire.reconciliation(r))));
    api.authed(HttpMethod.GET, "/v1/exports/{kind}.csv", Scopes.EXPORTS_READ, this::export);
  }

  /**
   * One CSV page: {@code limit} 1..1000 (default 500), an opaque {@code cursor}; {@code X-Next-Cursor} is
   * empty on the last page (treat empty as absent).
   */
  private Future<Reply> export(RoutingContext ctx, Principal p) {
    String kind = ctx.pathParam("kind");
    if (!Exports.isKind(kind)) {
      throw ApiException.invalid("unsupported export kind");
    }
    int limit = Paging.limit(ctx.queryParams().get("limit"), 500, 1000);
    long offset = Paging.offset(ctx.queryParams().get("cursor"));
    return ledger.accrue(p.organizationId(), Times.now(clock))
        .compose(v -> exports.page(p.organizationId(), kind, offset, limit))
        .map(page -> {
          ctx.response().putHeader("Content-Type", "text/csv; charset=utf-8")
              .putHeader("Content-Disposition", "attachment; filename=\"bespoke-" + kind + ".csv\"")
              .putHeader("X-Next-Cursor", page.more() ? Paging.cursor(offset + limit) : "")
              .end(page.csv());
          return Reply.HANDLED;
        });
  }

  private Future<Reply> costs(RoutingContext ctx, Principal p) {
    String groupBy = ctx.queryParams().get("group_by");
    if (groupBy == null) {
      groupBy = "sandbox";
    }
    if (!GROUPS.contains(groupBy)) {
      throw Body.patternMismatch("group_by", groupBy, "^(sandbox|backend|day)$");
    }
    OffsetDateTime start = instant(ctx, "start");
    OffsetDateTime end = instant(ctx, "end");
    if (start != null && end != null && !start.isBefore(end)) {
      throw ApiException.invalid("start must be before end");
    }
    String group = groupBy;
    return ledger.accrue(p.organizationId(), Times.now(clock))
        .compose(v -> ledger.summary(p.organizationId(), group, start, end))
        .map(items -> {
          JsonArray out = new JsonArray();
          items.forEach(i -> out.add(new JsonObject()
              .put("key", i.key())
              .put("runtime_seconds", CostLedger.plain(i.runtimeSeconds()))
              .put("provider_cost_usd", CostLedger.plain(i.providerCostUsd()))
              .put("customer_cost_usd", CostLedger.plain(i.customerCostUsd()))
              .put("llm_cost_usd", CostLedger.plain(i.llmCostUsd()))));
          return Reply.ok(new JsonObject().put("group_by", group).put("items", out));
        });
  }

  /** An ISO-8601 instant that names its offset ({@code Z} accepted). */
  static OffsetDateTime instant(RoutingContext ctx, String name) {
    String raw = ctx.queryParams().get(name);
    if (raw == null || raw.isEmpty()) {
      return null;
    }
    try {
      return OffsetDateTime.parse(raw);
    } catch (DateTimeParseException e) {
      throw ApiException.invalid(name + " must be an ISO-8601 datetime with a timezone");
    }
  }
}
