package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.Services;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Set;

/** {@code GET /v1/costs}: the organization's costs grouped by sandbox, backend or UTC day. */
public final class CostApi {
  static final Set<String> GROUPS = Set.of("sandbox", "backend", "day");

  private final Services s;

  public CostApi(Services services) {
    this.s = services;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/costs", Scopes.USAGE_READ, this::costs);
  }

  private Future<Reply> costs(RoutingContext ctx, Principal p) {
    String groupBy = ctx.queryParams().get("group_by");
    if (groupBy == null) {
      groupBy = "sandbox";
    }
    if (!GROUPS.contains(groupBy)) {
      throw ApiException.invalid("group_by must be one of sandbox, backend, day");
    }
    OffsetDateTime start = instant(ctx, "start");
    OffsetDateTime end = instant(ctx, "end");
    if (start != null && end != null && !start.isBefore(end)) {
      throw ApiException.invalid("start must be before end");
    }
    String group = groupBy;
    return s.ledger().accrue(p.organizationId(), s.now())
        .compose(v -> s.ledger().summary(p.organizationId(), group, start, end))
        .map(items -> {
          JsonArray out = new JsonArray();
          items.forEach(i -> out.add(new JsonObject()
              .put("key", i.key())
              .put("runtime_seconds", CostLedger.plain(i.runtimeSeconds()))
              .put("provider_cost_usd", CostLedger.plain(i.providerCostUsd()))
              .put("customer_cost_usd", CostLedger.plain(i.customerCostUsd()))));
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
