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
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Prices sandboxes' provider-billable windows (provisioning to each observation) into their lifecycle cost and
 * an idempotent delta ledger. Each observation id is applied at most once; billable seconds never decrease (a
 * clock going backwards adds nothing); a provider-reported cost replaces the estimate and is never overwritten
 * by a later estimate; deltas are split at UTC midnight.
 *
 * <p>Set-based: a whole batch of observations costs five statements on the caller's connection, inside its
 * transaction: lock the sandboxes (in id order) with their totals, claim the observation ids, then insert all
 * ledger rows, upsert all totals and set the cost states. The arithmetic runs here, observation by
 * observation in order, per sandbox.
 */
public final class LifecycleCosts {
  static final MathContext MONEY = MathContext.DECIMAL128;
  private static final BigDecimal HOUR = BigDecimal.valueOf(3600);

  /** One observation of a sandbox at {@code at}; {@code providerCost} when the provider reported its total. */
  public record Observation(String sandboxId, String observationId, OffsetDateTime at, BigDecimal providerCost) {}

  private static final String LOCK = """
      SELECT s.id, s.organization_id, COALESCE(s.provisioning_at, s.created_at) AS started, s.hourly_rate_usd,
             s.currency, s.pricing_source, c.billable_seconds, c.effective_cost_usd, c.customer_cost_usd,
             c.provider_reported_cost_usd, c.cost_state
      FROM sandboxes s LEFT JOIN lifecycle_costs c ON c.sandbox_id = s.id
      WHERE s.id = ANY($1) ORDER BY s.id FOR UPDATE OF s""";
  private static final String CLAIM = """
      INSERT INTO lifecycle_observations (sandbox_id, observation_id)
      SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING
      RETURNING sandbox_id, observation_id""";
  private static final String ENTRIES = """
      INSERT INTO lifecycle_ledger_entries (id, organization_id, sandbox_id, observation_id, billable_seconds_delta,
        provider_delta_usd, customer_delta_usd, cost_state, created_at)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::numeric[],
        $7::numeric[], $8::text[], $9::timestamptz[])""";
  private static final String TOTALS = """
      INSERT INTO lifecycle_costs (sandbox_id, organization_id, billable_seconds, estimated_cost_usd,
        provider_reported_cost_usd, effective_cost_usd, customer_cost_usd, currency, pricing_source, cost_state,
        updated_at)
      SELECT id, org, secs, est, rep::numeric, eff, cust, cur, src, st, upd
      FROM unnest($1::text[], $2::text[], $3::numeric[], $4::numeric[], $5::text[], $6::numeric[],
        $7::numeric[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])
        AS x(id, org, secs, est, rep, eff, cust, cur, src, st, upd)
      ON CONFLICT (sandbox_id) DO UPDATE SET billable_seconds = EXCLUDED.billable_seconds,
        estimated_cost_usd = EXCLUDED.estimated_cost_usd,
        provider_reported_cost_usd = EXCLUDED.provider_reported_cost_usd,
        effective_cost_usd = EXCLUDED.effective_cost_usd, customer_cost_usd = EXCLUDED.customer_cost_usd,
        cost_state = EXCLUDED.cost_state, updated_at = EXCLUDED.updated_at""";
  private static final String STATES = """
      UPDATE sandboxes s SET cost_state = x.state FROM unnest($1::text[], $2::text[]) AS x(id, state)
      WHERE s.id = x.id""";

  private final BigDecimal markup;

  public LifecycleCosts(BigDecimal markup) {
    this.markup = markup;
  }

  /** Applies one observation; completes with false when nothing was written. */
  public Future<Boolean> record(SqlClient conn, String sandboxId, String observationId, OffsetDateTime at,
      BigDecimal providerCost) {
    return recordAll(conn, List.of(new Observation(sandboxId, observationId, at, providerCost))).map(n -> n > 0);
  }

  /**
   * Applies observations in order; completes with how many were applied (replays, unknown sandboxes and
   * zero-rate sandboxes without a provider cost write nothing).
   */
  public Future<Integer> recordAll(SqlClient conn, List<Observation> observations) {
    if (observations.isEmpty()) {
      return Future.succeededFuture(0);
    }
    Set<String> ids = new HashSet<>();
    observations.forEach(o -> ids.add(o.sandboxId()));
    return conn.preparedQuery(LOCK).execute(Tuple.tuple().addArrayOfString(ids.toArray(String[]::new)))
        .compose(rows -> {
      Map<String, State> states = new HashMap<>();
      for (Row r : rows) {
        states.put(r.getString("id"), new State(r));
      }
      List<Observation> priced = observations.stream()
          .filter(o -> states.containsKey(o.sandboxId())
              && (states.get(o.sandboxId()).rate.signum() > 0 || o.providerCost() != null))
          .toList();
      if (priced.isEmpty()) {
        return Future.succeededFuture(0);
      }
      return conn.preparedQuery(CLAIM)
          .execute(Tuple.tuple()
              .addArrayOfString(priced.stream().map(Observation::sandboxId).toArray(String[]::new))
              .addArrayOfString(priced.stream().map(Observation::observationId).toArray(String[]::new)))
          .compose(claimed -> {
            Set<String> fresh = new HashSet<>();
            claimed.forEach(r -> fresh.add(r.getString(0) + "\n" + r.getString(1)));
            Rows ledger = new Rows();
            Map<String, State> touched = new LinkedHashMap<>();
            int applied = 0;
            for (Observation o : priced) {
              if (fresh.remove(o.sandboxId() + "\n" + o.observationId())) {
                State s = states.get(o.sandboxId());
                s.apply(o, markup, ledger);
                touched.put(o.sandboxId(), s);
                applied++;
              }
            }
            if (applied == 0) {
              return Future.succeededFuture(0);
            }
            int count = applied;
            return write(conn, ledger, touched.values()).map(count);
          });
    });
  }

  private static Future<Void> write(SqlClient conn, Rows ledger, java.util.Collection<State> touched) {
    List<State> t = new ArrayList<>(touched);
    return conn.preparedQuery(ENTRIES).execute(Tuple.tuple()
            .addArrayOfString(ledger.ids.toArray(String[]::new))
            .addArrayOfString(ledger.orgs.toArray(String[]::new))
            .addArrayOfString(ledger.sandboxes.toArray(String[]::new))
            .addArrayOfString(ledger.observations.toArray(String[]::new))
            .addArrayOfBigDecimal(ledger.seconds.toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(ledger.provider.toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(ledger.customer.toArray(BigDecimal[]::new))
            .addArrayOfString(ledger.states.toArray(String[]::new))
            .addArrayOfOffsetDateTime(ledger.at.toArray(OffsetDateTime[]::new)))
        .compose(r -> conn.preparedQuery(TOTALS).execute(Tuple.tuple()
            .addArrayOfString(t.stream().map(s -> s.id).toArray(String[]::new))
            .addArrayOfString(t.stream().map(s -> s.orgId).toArray(String[]::new))
            .addArrayOfBigDecimal(t.stream().map(s -> s.seconds).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(t.stream().map(s -> s.estimate).toArray(BigDecimal[]::new))
            // text, not numeric: the client cannot encode null elements of a numeric array
            .addArrayOfString(t.stream().map(s -> s.reported == null ? null : s.reported.toPlainString())
                .toArray(String[]::new))
            .addArrayOfBigDecimal(t.stream().map(s -> s.effective).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(t.stream().map(s -> s.customer).toArray(BigDecimal[]::new))
            .addArrayOfString(t.stream().map(s -> s.currency).toArray(String[]::new))
            .addArrayOfString(t.stream().map(s -> s.pricingSource).toArray(String[]::new))
            .addArrayOfString(t.stream().map(s -> s.state).toArray(String[]::new))
            .addArrayOfOffsetDateTime(t.stream().map(s -> s.updatedAt).toArray(OffsetDateTime[]::new))))
        .compose(r -> conn.preparedQuery(STATES).execute(Tuple.tuple()
            .addArrayOfString(t.stream().map(s -> s.id).toArray(String[]::new))
            .addArrayOfString(t.stream().map(s -> s.state).toArray(String[]::new))))
        .mapEmpty();
  }

  /** A sandbox's running totals while a batch is applied. */
  private static final class State {
    final String id;
    final String orgId;
    final OffsetDateTime started;
    final BigDecimal rate;
    final String currency;
    final String pricingSource;
    BigDecimal seconds;
    BigDecimal estimate = BigDecimal.ZERO;
    BigDecimal effective;
    BigDecimal customer;
    BigDecimal reported;
    String state;
    OffsetDateTime updatedAt;

    State(Row r) {
      id = r.getString("id");
      orgId = r.getString("organization_id");
      started = r.getOffsetDateTime("started");
      rate = r.getBigDecimal("hourly_rate_usd");
      currency = r.getString("currency");
      pricingSource = r.getString("pricing_source");
      seconds = orZero(r.getBigDecimal("billable_seconds"));
      effective = orZero(r.getBigDecimal("effective_cost_usd"));
      customer = orZero(r.getBigDecimal("customer_cost_usd"));
      reported = r.getBigDecimal("provider_reported_cost_usd");
      state = r.getString("cost_state") == null ? "estimated" : r.getString("cost_state");
    }

    /** Moves the totals to observation {@code o} and adds its ledger rows. */
    void apply(Observation o, BigDecimal markup, Rows ledger) {
      BigDecimal elapsed = BigDecimal.valueOf(Math.max(0, Duration.between(started, o.at()).toNanos()), 9);
      BigDecimal newSeconds = elapsed.max(seconds);
      BigDecimal newEstimate = newSeconds.multiply(rate).divide(HOUR, MONEY);
      String newState;
      BigDecimal newEffective;
      BigDecimal newReported;
      if (o.providerCost() != null) {
        newState = "reconciled";
        newEffective = o.providerCost();
        newReported = o.providerCost();
      } else if ("reconciled".equals(state)) {
        newState = "reconciled";
        newEffective = effective;
        newReported = reported;
      } else {
        newState = "estimated";
        newEffective = newEstimate;
        newReported = null;
      }
      BigDecimal newCustomer = newEffective.multiply(markup, MONEY);
      ledger.deltas(this, o.observationId(), o.at(), newState, newSeconds.subtract(seconds),
          newEffective.subtract(effective), newCustomer.subtract(customer));
      seconds = newSeconds;
      estimate = newEstimate;
      effective = newEffective;
      customer = newCustomer;
      reported = newReported;
      state = newState;
      updatedAt = o.at();
    }
  }

  private static BigDecimal orZero(BigDecimal d) {
    return d == null ? BigDecimal.ZERO : d;
  }

  /** Ledger rows of a batch, column by column. */
  private static final class Rows {
    final List<String> ids = new ArrayList<>();
    final List<String> orgs = new ArrayList<>();
    final List<String> sandboxes = new ArrayList<>();
    final List<String> observations = new ArrayList<>();
    final List<BigDecimal> seconds = new ArrayList<>();
    final List<BigDecimal> provider = new ArrayList<>();
    final List<BigDecimal> customer = new ArrayList<>();
    final List<String> states = new ArrayList<>();
    final List<OffsetDateTime> at = new ArrayList<>();

    private void add(State s, String obs, BigDecimal secs, BigDecimal prov, BigDecimal cust, String state,
        OffsetDateTime when) {
      ids.add(Ids.newId("lcl"));
      orgs.add(s.orgId);
      sandboxes.add(s.id);
      observations.add(obs);
      seconds.add(secs);
      provider.add(prov);
      customer.add(cust);
      states.add(state);
      at.add(when);
    }

    /**
     * One row per UTC-day segment of the new seconds (money shared pro rata while estimated, none once
     * reconciled), then an adjustment row at {@code at} for any money left (or when there was no time row).
     */
    void deltas(State s, String observation, OffsetDateTime at, String state, BigDecimal dSeconds,
        BigDecimal dProvider, BigDecimal dCustomer) {
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
        add(s, observation + ":time:" + i, seg.seconds(), prov, cust, state, seg.start());
      }
      if (segments.isEmpty() || provLeft.signum() != 0 || custLeft.signum() != 0) {
        add(s, observation + ":adjustment", BigDecimal.ZERO, provLeft, custLeft, state, at);
      }
    }
  }
}
