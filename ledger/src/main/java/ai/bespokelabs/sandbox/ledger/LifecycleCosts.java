package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.Ids;
import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.math.MathContext;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;

/**
 * Prices a sandbox's provider-billable window (provisioning to the observation time) into its lifecycle cost
 * and an idempotent delta ledger. Each observation id is applied at most once; billable seconds never
 * decrease (a clock going backwards adds nothing); a provider-reported cost replaces the estimate and is
 * never overwritten by a later estimate; deltas are split at UTC midnight. Every method runs on a
 * connection inside the caller's transaction; the sandbox row is locked so concurrent observations of one
 * sandbox apply one after the other.
 */
public final class LifecycleCosts {
  static final MathContext MONEY = MathContext.DECIMAL128;
  private static final BigDecimal HOUR = BigDecimal.valueOf(3600);

  private final BigDecimal markup;

  public LifecycleCosts(BigDecimal markup) {
    this.markup = markup;
  }

  /**
   * Applies one observation of {@code sandboxId} at {@code at}; {@code providerCost} is the provider's own
   * total when it reported one. Completes with false when nothing was written (replay, or a zero-rate
   * sandbox without a provider cost).
   */
  public Future<Boolean> record(SqlClient conn, String sandboxId, String observationId, OffsetDateTime at,
      BigDecimal providerCost) {
    return conn.preparedQuery("""
            SELECT s.organization_id, COALESCE(s.provisioning_at, s.created_at) AS started, s.hourly_rate_usd,
                   s.currency, s.pricing_source
            FROM sandboxes s WHERE s.id = $1 FOR UPDATE""")
        .execute(Tuple.of(sandboxId))
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.succeededFuture(false);
          }
          Row s = rows.iterator().next();
          BigDecimal rate = s.getBigDecimal("hourly_rate_usd");
          if (rate.signum() == 0 && providerCost == null) {
            return Future.succeededFuture(false);
          }
          Sandbox sbx = new Sandbox(sandboxId, s.getString("organization_id"), s.getOffsetDateTime("started"), rate,
              s.getString("currency"), s.getString("pricing_source"));
          return conn.preparedQuery("INSERT INTO lifecycle_observations (sandbox_id, observation_id) VALUES ($1, $2)"
                  + " ON CONFLICT DO NOTHING")
              .execute(Tuple.of(sandboxId, observationId))
              .compose(ins -> ins.rowCount() == 0 ? Future.succeededFuture(false)
                  : apply(conn, sbx, observationId, at, providerCost).map(true));
        });
  }

  private record Sandbox(String id, String orgId, OffsetDateTime started, BigDecimal rate, String currency,
      String pricingSource) {}

  /** The stored totals (zero before the first observation). */
  private record Totals(BigDecimal seconds, BigDecimal effective, BigDecimal customer, BigDecimal reported,
      String state) {
    static final Totals NONE = new Totals(BigDecimal.ZERO, BigDecimal.ZERO, BigDecimal.ZERO, null, "estimated");
  }

  private Future<Void> apply(SqlClient conn, Sandbox sbx, String obs, OffsetDateTime at, BigDecimal providerCost) {
    return conn.preparedQuery("SELECT billable_seconds, effective_cost_usd, customer_cost_usd,"
            + " provider_reported_cost_usd, cost_state FROM lifecycle_costs WHERE sandbox_id = $1 FOR UPDATE")
        .execute(Tuple.of(sbx.id()))
        .compose(rows -> {
          Totals before = rows.size() == 0 ? Totals.NONE : totals(rows.iterator().next());
          BigDecimal elapsed = BigDecimal.valueOf(Math.max(0, Duration.between(sbx.started(), at).toNanos()), 9);
          BigDecimal seconds = elapsed.max(before.seconds());
          BigDecimal estimate = seconds.multiply(sbx.rate()).divide(HOUR, MONEY);
          String state;
          BigDecimal effective;
          BigDecimal reported;
          if (providerCost != null) {
            state = "reconciled";
            effective = providerCost;
            reported = providerCost;
          } else if ("reconciled".equals(before.state())) {
            state = "reconciled";
            effective = before.effective();
            reported = before.reported();
          } else {
            state = "estimated";
            effective = estimate;
            reported = null;
          }
          BigDecimal customer = effective.multiply(markup, MONEY);
          BigDecimal dSeconds = seconds.subtract(before.seconds());
          BigDecimal dProvider = effective.subtract(before.effective());
          BigDecimal dCustomer = customer.subtract(before.customer());
          return writeDeltas(conn, sbx, obs, at, state, dSeconds, dProvider, dCustomer)
              .compose(v -> conn.preparedQuery("""
                  INSERT INTO lifecycle_costs (sandbox_id, organization_id, billable_seconds, estimated_cost_usd,
                    provider_reported_cost_usd, effective_cost_usd, customer_cost_usd, currency, pricing_source,
                    cost_state, updated_at)
                  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                  ON CONFLICT (sandbox_id) DO UPDATE SET billable_seconds = EXCLUDED.billable_seconds,
                    estimated_cost_usd = EXCLUDED.estimated_cost_usd,
                    provider_reported_cost_usd = EXCLUDED.provider_reported_cost_usd,
                    effective_cost_usd = EXCLUDED.effective_cost_usd, customer_cost_usd = EXCLUDED.customer_cost_usd,
                    cost_state = EXCLUDED.cost_state, updated_at = EXCLUDED.updated_at""")
                  .execute(Tuple.of(sbx.id(), sbx.orgId(), seconds, estimate, reported, effective)
                      .addValue(customer).addValue(sbx.currency()).addValue(sbx.pricingSource()).addValue(state)
                      .addValue(at)))
              .compose(r -> conn.preparedQuery("UPDATE sandboxes SET cost_state = $2 WHERE id = $1")
                  .execute(Tuple.of(sbx.id(), state)))
              .mapEmpty();
        });
  }

  private static Totals totals(Row r) {
    return new Totals(r.getBigDecimal("billable_seconds"), r.getBigDecimal("effective_cost_usd"),
        r.getBigDecimal("customer_cost_usd"), r.getBigDecimal("provider_reported_cost_usd"), r.getString("cost_state"));
  }

  /**
   * One row per UTC-day segment of the new seconds (money shared pro rata while estimated, none once
   * reconciled), then an adjustment row at {@code at} for any money left (or when there was no time row).
   */
  private static Future<Void> writeDeltas(SqlClient conn, Sandbox sbx, String obs, OffsetDateTime at, String state,
      BigDecimal dSeconds, BigDecimal dProvider, BigDecimal dCustomer) {
    List<DaySplit.Segment> segments = DaySplit.split(at, dSeconds);
    List<Tuple> rows = new java.util.ArrayList<>();
    BigDecimal provLeft = dProvider;
    BigDecimal custLeft = dCustomer;
    boolean estimated = "estimated".equals(state);
    for (int i = 0; i < segments.size(); i++) {
      DaySplit.Segment seg = segments.get(i);
      BigDecimal prov = BigDecimal.ZERO;
      BigDecimal cust = BigDecimal.ZERO;
      if (estimated) {
        boolean last = i == segments.size() - 1;
        BigDecimal share = seg.seconds().divide(dSeconds, MONEY);
        prov = last ? provLeft : dProvider.multiply(share, MONEY);
        cust = last ? custLeft : dCustomer.multiply(share, MONEY);
      }
      provLeft = provLeft.subtract(prov);
      custLeft = custLeft.subtract(cust);
      rows.add(entry(sbx, obs + ":time:" + i, seg.seconds(), prov, cust, state, seg.start()));
    }
    if (rows.isEmpty() || provLeft.signum() != 0 || custLeft.signum() != 0) {
      rows.add(entry(sbx, obs + ":adjustment", BigDecimal.ZERO, provLeft, custLeft, state, at));
    }
    return conn.preparedQuery("""
            INSERT INTO lifecycle_ledger_entries (id, organization_id, sandbox_id, observation_id,
              billable_seconds_delta, provider_delta_usd, customer_delta_usd, cost_state, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""")
        .executeBatch(rows)
        .mapEmpty();
  }

  private static Tuple entry(Sandbox sbx, String obs, BigDecimal seconds, BigDecimal prov, BigDecimal cust,
      String state, OffsetDateTime at) {
    return Tuple.of(Ids.newId("lcl"), sbx.orgId(), sbx.id(), obs, seconds, prov).addValue(cust).addValue(state)
        .addValue(at);
  }
}
