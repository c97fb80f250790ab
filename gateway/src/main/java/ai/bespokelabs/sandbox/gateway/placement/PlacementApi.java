package ai.bespokelabs.sandbox.gateway.placement;

import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.http.Api;
import ai.bespokelabs.sandbox.gateway.http.Endpoints;
import ai.bespokelabs.sandbox.gateway.http.Reply;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/** {@code GET /v1/placement}: what {@code backend: "auto"} would choose now for these requirements, and why. */
public final class PlacementApi implements Endpoints {
  private final Placements placements;

  public PlacementApi(Placements placements) {
    this.placements = placements;
  }

  @Override
  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/placement", Scopes.SANDBOXES_READ, this::get);
  }

  private Future<Reply> get(RoutingContext ctx, Principal p) {
    Placement.Requirements req = requirements(ctx.queryParams());
    return placements.plan(p.organizationId(), req).map(plan -> {
      String chosen = plan.isEmpty() || !Placement.Candidate.NOT_TRIED.equals(plan.get(0).status()) ? null
          : plan.get(0).backend();
      return Reply.ok(Placement.record(chosen, plan));
    });
  }

  /** The requirements of a placement query: the create body's fields, {@code prefer}/{@code exclude} comma lists. */
  static Placement.Requirements requirements(MultiMap q) {
    Double cpu = number(q, "cpu");
    Integer memory = positive(q, "memory_mb");
    Integer timeout = positive(q, "timeout_secs");
    String allow = q.get("allow_internet");
    if (allow != null && !allow.equals("true") && !allow.equals("false")) {
      throw ApiException.invalid("allow_internet must be true or false");
    }
    String isolation = q.get("isolation");
    Isolation level = isolation == null ? null : Isolation.of(isolation).orElseThrow(() ->
        ApiException.invalid("isolation must be one of process, namespace, container, vm"));
    BigDecimal max = null;
    if (q.get("max_hourly_usd") != null) {
      try {
        max = new BigDecimal(q.get("max_hourly_usd").trim());
      } catch (NumberFormatException e) {
        throw ApiException.invalid("max_hourly_usd must be a number");
      }
      if (max.signum() < 0) {
        throw ApiException.invalid("max_hourly_usd must not be negative");
      }
    }
    return new Placement.Requirements(cpu, memory, blankToNull(q.get("gpu")), blankToNull(q.get("image")),
        blankToNull(q.get("template")), allow == null ? null : Boolean.valueOf(allow), timeout, level, max,
        list(q, "prefer"), list(q, "exclude"));
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }

  private static List<String> list(MultiMap q, String name) {
    List<String> out = new ArrayList<>();
    for (String v : q.getAll(name)) {
      for (String part : v.split(",")) {
        if (!part.isBlank()) {
          out.add(part.trim().toLowerCase(java.util.Locale.ROOT));
        }
      }
    }
    return out;
  }

  private static Double number(MultiMap q, String name) {
    String v = q.get(name);
    if (v == null) {
      return null;
    }
    try {
      double d = Double.parseDouble(v.trim());
      if (!(d > 0) || Double.isInfinite(d)) {
        throw ApiException.invalid(name + " must be a positive number");
      }
      return d;
    } catch (NumberFormatException e) {
      throw ApiException.invalid(name + " must be a positive number");
    }
  }

  private static Integer positive(MultiMap q, String name) {
    String v = q.get(name);
    if (v == null) {
      return null;
    }
    try {
      int i = Integer.parseInt(v.trim());
      if (i <= 0) {
        throw ApiException.invalid(name + " must be a positive integer");
      }
      return i;
    } catch (NumberFormatException e) {
      throw ApiException.invalid(name + " must be a positive integer");
    }
  }
}
