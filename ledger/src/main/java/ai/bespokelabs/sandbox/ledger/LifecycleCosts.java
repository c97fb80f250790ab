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
import java.util.ArrayList;
import java.util.List;

/**
 * Prices a sandbox's provider-billable window (provisioning to the observation time) into its lifecycle cost
 * and an idempotent delta ledger. Each observation id is applied at most once; billable seconds never
 * decrease (a clock going backwards adds nothing); a provider-reported cost replaces the estimate and is
 * never overwritten by a later estimate; deltas are split at UTC midnight. Runs on a connection inside the
 * caller's transaction, in two statements: the first locks the sandbox row (so observations of one sandbox
 * apply one after the other), claims the observation id and reads the stored totals; the second writes the
 * ledger rows, the totals and the sandbox's cost state.
 */
public final class LifecycleCosts {
  static final MathContext MONEY = MathContext.DECIMAL128;
  private static final BigDecimal HOUR = BigDecimal.valueOf(3600);

  private static final String READ = """
      WITH s AS (
        SELECT id, organization_id, COALESCE(provisioning_at, created_at) AS started, hourly_rate_usd, currency,
               pricing_source
        FROM sandboxes WHERE id = $1 FOR UPDATE),
      obs AS (
        INSERT INTO lifecycle_observations (sandbox_id, observation_id)
        SELECT s.id, $2 FROM s WHERE s.hourly_rate_usd > 0 OR $3
        ON CONFLICT DO NOTHING
        RETURNING sandbox_id)
      SELECT s.organization_id, s.started, s.hourly_rate_usd, s.currency, s.pricing_source,
             (SELECT count(*) FROM obs) AS fresh, c.billable_seconds, c.effective_cost_usd, c.customer_cost_usd,
             c.provider_reported_cost_usd, c.cost_state
      FROM s LEFT JOIN lifecycle_costs c ON c.sandbox_id = s.id""";

  private static final String WRITE = """
      WITH entries AS (
        INSERT INTO lifecycle_ledger_entries (id, organization_id, sandbox_id, observation_id, billable_seconds_delta,
          provider_delta_usd, customer_delta_usd, cost_state, created_at)
        SELECT e.id, $2, $1, e.obs, e.secs, e.prov, e.cust, $10, e.at
        FROM unnest($12::text[], $13::text[], $14::numeric[], $15::numeric[], $16::numeric[], $17::timestamptz[])
          AS e(id, obs, secs, prov, cust, at)
        RETURNING 1),
      totals AS (
        INSERT INTO lifecycle_costs (sandbox_id, organization_id, billable_seconds, estimated_cost_usd,
          provider_reported_cost_usd, effective_cost_usd, customer_cost_usd, currency, pricing_source, cost_state,
          updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (sandbox_id) DO UPDATE SET billable_seconds = EXCLUDED.billable_seconds,
          estimated_cost_usd = EXCLUDED.estimated_cost_usd,
          provider_reported_cost_usd = EXCLUDED.provider_reported_cost_usd,
          effective_cost_usd = EXCLUDED.effective_cost_usd, customer_cost_usd = EXCLUDED.customer_cost_usd,
          cost_state = EXCLUDED.cost_state, updated_at = EXCLUDED.updated_at
        RETURNING 1)
      UPDATE sandboxes SET cost_state = $10 WHERE id = $1""";

  private final BigDecimal markup;

  public LifecycleCosts(BigDecimal markup) {
    this.markup = markup;
  }

  /**
   * Applies one observation of {@code sandboxId} at {@code at}; {@code providerCost} is the provider's own
   * total when it reported one. Completes with false when nothing was written (replay, unknown sandbox, or
   * a zero-rate sandbox without a provider cost).
   */
  public Future<Boolean> record(SqlClient conn, String sandboxId, String observationId, OffsetDateTime at,
      BigDecimal providerCost) {
    return conn.preparedQuery(READ).execute(Tuple.of(sandboxId, observationId, providerCost != null))
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.succeededFuture(false);
          }
          Row r = rows.iterator().next();
          if (r.getLong("fresh") == 0) {
            return Future.succeededFuture(false);
          }
          return apply(conn, sandboxId, observationId, r, at, providerCost).map(true);
        });
  }

  private Future<Void> apply(SqlClient conn, String sandboxId, String observationId, Row r, OffsetDateTime at,
      BigDecimal providerCost) {
    BigDecimal storedSeconds = orZero(r.getBigDecimal("billable_seconds"));
    BigDecimal storedEffective = orZero(r.getBigDecimal("effective_cost_usd"));
    BigDecimal storedCustomer = orZero(r.getBigDecimal("customer_cost_usd"));
    String storedState = r.getString("cost_state");
    BigDecimal rate = r.getBigDecimal("hourly_rate_usd");
    OffsetDateTime started = r.getOffsetDateTime("started");

    BigDecimal elapsed = BigDecimal.valueOf(Math.max(0, Duration.between(started, at).toNanos()), 9);
    BigDecimal seconds = elapsed.max(storedSeconds);
    BigDecimal estimate = seconds.multiply(rate).divide(HOUR, MONEY);
    String state;
    BigDecimal effective;
    BigDecimal reported;
    if (providerCost != null) {
      state = "reconciled";
      effective = providerCost;
      reported = providerCost;
    } else if ("reconciled".equals(storedState)) {
      state = "reconciled";
      effective = storedEffective;
      reported = r.getBigDecimal("provider_reported_cost_usd");
    } else {
      state = "estimated";
      effective = estimate;
      reported = null;
    }
    BigDecimal customer = effective.multiply(markup, MONEY);
    Deltas d = deltas(observationId, at, state, seconds.subtract(storedSeconds),
        effective.subtract(storedEffective), customer.subtract(storedCustomer));
    return conn.preparedQuery(WRITE)
        .execute(Tuple.of(sandboxId, r.getString("organization_id"), seconds, estimate, reported, effective)
            .addValue(customer).addValue(r.getString("currency")).addValue(r.getString("pricing_source"))
            .addValue(state).addValue(at)
            .addArrayOfString(d.ids.toArray(String[]::new))
            .addArrayOfString(d.observations.toArray(String[]::new))
            .addArrayOfBigDecimal(d.seconds.toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(d.provider.toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(d.customer.toArray(BigDecimal[]::new))
            .addArrayOfOffsetDateTime(d.at.toArray(OffsetDateTime[]::new)))
        .mapEmpty();
  }

  private static BigDecimal orZero(BigDecimal d) {
    return d == null ? BigDecimal.ZERO : d;
  }

  /** The ledger rows of one observation, column by column. */
  private static final class Deltas {
    final List<String> ids = new ArrayList<>();
    final List<String> observations = new ArrayList<>();
    final List<BigDecimal> seconds = new ArrayList<>();
    final List<BigDecimal> provider = new ArrayList<>();
    final List<BigDecimal> customer = new ArrayList<>();
    final List<OffsetDateTime> at = new ArrayList<>();

    void add(String obs, BigDecimal secs, BigDecimal prov, BigDecimal cust, OffsetDateTime when) {
      ids.add(Ids.newId("lcl"));
      observations.add(obs);
      seconds.add(secs);
      provider.add(prov);
      customer.add(cust);
      at.add(when);
    }
  }

  /**
   * One row per UTC-day segment of the new seconds (money shared pro rata while estimated, none once
   * reconciled), then an adjustment row at {@code at} for any money left (or when there was no time row).
   */
  private static Deltas deltas(String observation, OffsetDateTime at, String state, BigDecimal dSeconds,
      BigDecimal dProvider, BigDecimal dCustomer) {
    Deltas d = new Deltas();
    List<DaySplit.Segment> segments = DaySplit.split(at, dSeconds);
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
      d.add(observation + ":time:" + i, seg.seconds(), prov, cust, seg.start());
    }
    if (d.ids.isEmpty() || provLeft.signum() != 0 || custLeft.signum() != 0) {
      d.add(observation + ":adjustment", BigDecimal.ZERO, provLeft, custLeft, at);
    }
    return d;
  }
}
