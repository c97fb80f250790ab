package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The ledger's read side and on-demand accrual: cost summaries grouped by sandbox, backend or UTC day,
 * the lifecycle cost of one sandbox, and customer spend in a window (for spend policies).
 */
public final class CostLedger {
  /** One summary line; money as exact decimals. */
  /** One group's costs; {@code llmCostUsd} is what the group's agent runs reported for their LLM use. */
  public record Item(String key, BigDecimal runtimeSeconds, BigDecimal providerCostUsd, BigDecimal customerCostUsd,
      BigDecimal llmCostUsd) {
    public Item(String key, BigDecimal runtimeSeconds, BigDecimal providerCostUsd, BigDecimal customerCostUsd) {
      this(key, runtimeSeconds, providerCostUsd, customerCostUsd, BigDecimal.ZERO);
    }
  }

  private final Pool pool;
  private final LifecycleCosts costs;

  public CostLedger(Pool pool, LifecycleCosts costs) {
    this.pool = pool;
    this.costs = costs;
  }

  /** Accrues the estimate of every active priced sandbox of the organization up to {@code now}. */
  public Future<Void> accrue(String orgId, OffsetDateTime now) {
    return accrue(ACTIVE_PRICED, orgId, now);
  }

  /**
   * As {@link #accrue}, only when the organization's policy limits spend: what a create needs before the
   * policy is evaluated. Without a spend limit the estimates would change no decision, and every read of
   * costs accrues anyway, so creates do not write one estimate per running sandbox.
   */
  public Future<Void> accrueForSpendLimits(String orgId, OffsetDateTime now) {
    return accrue(ACTIVE_PRICED + " AND EXISTS (SELECT 1 FROM organization_policies p WHERE p.organization_id = $1"
        + " AND (p.hourly_spend_limit_usd IS NOT NULL OR p.daily_spend_limit_usd IS NOT NULL))", orgId, now);
  }

  private static final String ACTIVE_PRICED = "SELECT id FROM sandboxes WHERE organization_id = $1"
      + " AND hourly_rate_usd > 0 AND status IN ('creating', 'running', 'stopping')";

  private Future<Void> accrue(String activeSql, String orgId, OffsetDateTime now) {
    return pool.preparedQuery(activeSql)
        .execute(Tuple.of(orgId))
        .compose(rows -> {
          List<Future<?>> all = new ArrayList<>();
          for (Row r : rows) {
            String id = r.getString(0);
            all.add(pool.withTransaction(conn -> costs.record(conn, id, "estimate:" + id + ":" + Times.iso(now), now,
                null)));
          }
          return Future.all(all).mapEmpty();
        });
  }

  /** Customer spend recorded in {@code [from, to]}: lifecycle deltas plus usage of sandboxes without one. */
  public static Future<BigDecimal> spend(SqlClient conn, String orgId, OffsetDateTime from, OffsetDateTime to) {
    return conn.preparedQuery("""
            SELECT COALESCE((SELECT SUM(customer_delta_usd) FROM lifecycle_ledger_entries
                             WHERE organization_id = $1 AND created_at >= $2 AND created_at <= $3), 0)
                 + COALESCE((SELECT SUM(u.customer_cost_usd) FROM usage_events u
                             WHERE u.organization_id = $1 AND u.created_at >= $2 AND u.created_at <= $3
                               AND NOT EXISTS (SELECT 1 FROM lifecycle_costs c WHERE c.sandbox_id = u.sandbox_id)), 0)""")
        .execute(Tuple.of(orgId, from, to))
        .map(rows -> rows.iterator().next().getBigDecimal(0));
  }

  /** Rolling-hour and UTC-day customer spend at {@code now}. */
  public Future<BigDecimal[]> hourAndDay(String orgId, OffsetDateTime now) {
    OffsetDateTime midnight = now.withOffsetSameInstant(ZoneOffset.UTC).toLocalDate().atStartOfDay()
        .atOffset(ZoneOffset.UTC);
    return spend(pool, orgId, now.minusHours(1), now)
        .compose(hour -> spend(pool, orgId, midnight, now).map(day -> new BigDecimal[] {hour, day}));
  }

  /** The {@code cost} object of a sandbox's detail, or empty when it has no lifecycle cost. */
  public Future<Optional<JsonObject>> lifecycleCost(String sandboxId) {
    return pool.preparedQuery("SELECT billable_seconds, estimated_cost_usd, provider_reported_cost_usd,"
            + " effective_cost_usd, customer_cost_usd, currency, pricing_source, cost_state, updated_at"
            + " FROM lifecycle_costs WHERE sandbox_id = $1")
        .execute(Tuple.of(sandboxId))
        .map(rows -> {
          if (rows.size() == 0) {
            return Optional.empty();
          }
          Row r = rows.iterator().next();
          return Optional.of(new JsonObject()
              .put("billable_seconds", plain(r.getBigDecimal("billable_seconds")))
              .put("estimated_cost_usd", plain(r.getBigDecimal("estimated_cost_usd")))
              .put("provider_reported_cost_usd", plain(r.getBigDecimal("provider_reported_cost_usd")))
              .put("effective_cost_usd", plain(r.getBigDecimal("effective_cost_usd")))
              .put("customer_cost_usd", plain(r.getBigDecimal("customer_cost_usd")))
              .put("currency", r.getString("currency"))
              .put("pricing_source", r.getString("pricing_source"))
              .put("cost_state", r.getString("cost_state"))
              .put("updated_at", Times.iso(r.getOffsetDateTime("updated_at"))));
        });
  }

  /**
   * The cost summary of an organization, optionally bounded to {@code [start, end)}: lifecycle rows clipped
   * by their overlap with the window, plus per-execution usage of sandboxes without a lifecycle cost.
   * {@code groupBy}: {@code sandbox}, {@code backend} or {@code day} (UTC). Items sorted by key.
   */
  public Future<List<Item>> summary(String orgId, String groupBy, OffsetDateTime start, OffsetDateTime end) {
    Map<String, BigDecimal[]> groups = new TreeMap<>();
    Future<Void> lifecycle = pool.preparedQuery("""
            SELECT l.sandbox_id, s.backend, l.created_at, l.billable_seconds_delta, l.provider_delta_usd,
                   l.customer_delta_usd
            FROM lifecycle_ledger_entries l JOIN sandboxes s ON s.id = l.sandbox_id
            WHERE l.organization_id = $1 AND ($3::timestamptz IS NULL OR l.created_at < $3)
              AND ($2::timestamptz IS NULL
                   OR l.created_at + make_interval(secs => l.billable_seconds_delta::float8) > $2
                   OR l.created_at >= $2)""")
        .execute(Tuple.of(orgId, start, end))
        .map(rows -> {
          for (Row r : rows) {
            OffsetDateTime at = r.getOffsetDateTime("created_at");
            BigDecimal seconds = r.getBigDecimal("billable_seconds_delta");
            BigDecimal share = overlap(at, seconds, start, end);
            if (share.signum() == 0) {
              continue;
            }
            add(groups, key(groupBy, r.getString("sandbox_id"), r.getString("backend"), at),
                seconds.multiply(share, LifecycleCosts.MONEY),
                r.getBigDecimal("provider_delta_usd").multiply(share, LifecycleCosts.MONEY),
                r.getBigDecimal("customer_delta_usd").multiply(share, LifecycleCosts.MONEY));
          }
          return null;
        });
    Future<Void> usage = pool.preparedQuery("""
            SELECT u.sandbox_id, s.backend, u.created_at, u.quantity, u.provider_cost_usd, u.customer_cost_usd
            FROM usage_events u JOIN sandboxes s ON s.id = u.sandbox_id
            WHERE u.organization_id = $1 AND ($2::timestamptz IS NULL OR u.created_at >= $2)
              AND ($3::timestamptz IS NULL OR u.created_at < $3)
              AND NOT EXISTS (SELECT 1 FROM lifecycle_costs c WHERE c.sandbox_id = u.sandbox_id)""")
        .execute(Tuple.of(orgId, start, end))
        .map(rows -> {
          for (Row r : rows) {
            add(groups, key(groupBy, r.getString("sandbox_id"), r.getString("backend"), r.getOffsetDateTime("created_at")),
                r.getBigDecimal("quantity"), r.getBigDecimal("provider_cost_usd"), r.getBigDecimal("customer_cost_usd"));
          }
          return null;
        });
    Map<String, BigDecimal> llm = new TreeMap<>();
    Future<Void> agents = pool.preparedQuery("""
            SELECT a.sandbox_id, s.backend, a.created_at, a.llm_cost_usd
            FROM agent_runs a JOIN sandboxes s ON s.id = a.sandbox_id
            WHERE a.organization_id = $1 AND ($2::timestamptz IS NULL OR a.created_at >= $2)
              AND ($3::timestamptz IS NULL OR a.created_at < $3)""")
        .execute(Tuple.of(orgId, start, end))
        .map(rows -> {
          for (Row r : rows) {
            String k = key(groupBy, r.getString("sandbox_id"), r.getString("backend"),
                r.getOffsetDateTime("created_at"));
            add(groups, k, BigDecimal.ZERO, BigDecimal.ZERO, BigDecimal.ZERO);
            llm.merge(k, r.getBigDecimal("llm_cost_usd"), BigDecimal::add);
          }
          return null;
        });
    return lifecycle.compose(v -> usage).compose(v -> agents).map(v -> {
      List<Item> items = new ArrayList<>();
      groups.forEach((k, t) -> items.add(new Item(k, t[0], t[1], t[2], llm.getOrDefault(k, BigDecimal.ZERO))));
      return items;
    });
  }

  /** The fraction of a row's interval inside the window; a zero-second row counts wholly when its instant is. */
  static BigDecimal overlap(OffsetDateTime at, BigDecimal seconds, OffsetDateTime start, OffsetDateTime end) {
    if (seconds.signum() == 0) {
      boolean inside = (start == null || !at.isBefore(start)) && (end == null || at.isBefore(end));
      return inside ? BigDecimal.ONE : BigDecimal.ZERO;
    }
    long nanos = seconds.movePointRight(9).longValue();
    OffsetDateTime rowEnd = at.plusNanos(nanos);
    OffsetDateTime from = start == null || at.isAfter(start) ? at : start;
    OffsetDateTime to = end == null || rowEnd.isBefore(end) ? rowEnd : end;
    if (!to.isAfter(from)) {
      return BigDecimal.ZERO;
    }
    return BigDecimal.valueOf(Duration.between(from, to).toNanos())
        .divide(BigDecimal.valueOf(nanos), LifecycleCosts.MONEY);
  }

  private static String key(String groupBy, String sandboxId, String backend, OffsetDateTime at) {
    return switch (groupBy) {
      case "backend" -> backend;
      case "day" -> at.withOffsetSameInstant(ZoneOffset.UTC).toLocalDate().toString();
      default -> sandboxId;
    };
  }

  private static void add(Map<String, BigDecimal[]> groups, String key, BigDecimal seconds, BigDecimal provider,
      BigDecimal customer) {
    BigDecimal[] t = groups.computeIfAbsent(key, k -> new BigDecimal[] {BigDecimal.ZERO, BigDecimal.ZERO,
        BigDecimal.ZERO});
    t[0] = t[0].add(seconds);
    t[1] = t[1].add(provider);
    t[2] = t[2].add(customer);
  }

  /** Decimals as plain strings without an exponent. */
  public static String plain(BigDecimal d) {
    return d == null ? null : d.stripTrailingZeros().toPlainString();
  }
}
