package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.Ids;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
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
 * transaction ({@link LifecycleCostRepository}). The arithmetic runs here, observation by observation in
 * order, per sandbox.
 */
public final class LifecycleCosts {
  static final MathContext MONEY = MathContext.DECIMAL128;
  private static final BigDecimal HOUR = BigDecimal.valueOf(3600);

  /** One observation of a sandbox at {@code at}; {@code providerCost} when the provider reported its total. */
  public record Observation(String sandboxId, String observationId, OffsetDateTime at, BigDecimal providerCost) {}

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
    return LifecycleCostRepository.lock(conn, ids).compose(locked -> {
      Map<String, State> states = new HashMap<>();
      for (LifecycleCostRepository.Locked l : locked) {
        states.put(l.id(), new State(l));
      }
      List<Observation> priced = observations.stream()
          .filter(o -> states.containsKey(o.sandboxId())
              && (states.get(o.sandboxId()).rate.signum() > 0 || o.providerCost() != null))
          .toList();
      if (priced.isEmpty()) {
        return Future.succeededFuture(0);
      }
      return LifecycleCostRepository.claim(conn, priced.stream().map(Observation::sandboxId).toList(),
              priced.stream().map(Observation::observationId).toList())
          .compose(fresh -> {
            Rows ledger = new Rows();
            Map<String, State> touched = new LinkedHashMap<>();
            int applied = 0;
            for (Observation o : priced) {
              if (fresh.remove(LifecycleCostRepository.key(o.sandboxId(), o.observationId()))) {
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
            return LifecycleCostRepository.write(conn, ledger.entries,
                touched.values().stream().map(State::total).toList()).map(count);
          });
    });
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

    State(LifecycleCostRepository.Locked l) {
      id = l.id();
      orgId = l.orgId();
      started = l.started();
      rate = l.rate();
      currency = l.currency();
      pricingSource = l.pricingSource();
      seconds = orZero(l.seconds());
      effective = orZero(l.effective());
      customer = orZero(l.customer());
      reported = l.reported();
      state = l.costState() == null ? "estimated" : l.costState();
    }

    LifecycleCostRepository.Total total() {
      return new LifecycleCostRepository.Total(id, orgId, seconds, estimate, reported, effective, customer, currency,
          pricingSource, state, updatedAt);
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

  /** Ledger rows of a batch. */
  private static final class Rows {
    final List<LifecycleCostRepository.Entry> entries = new ArrayList<>();

    private void add(State s, String obs, BigDecimal secs, BigDecimal prov, BigDecimal cust, String state,
        OffsetDateTime when) {
      entries.add(new LifecycleCostRepository.Entry(Ids.newId("lcl"), s.orgId, s.id, obs, secs, prov, cust, state,
          when));
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
