package ai.bespokelabs.sandbox.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.db.Database;
import ai.bespokelabs.sandbox.core.outbox.OutboxConsumer;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.junit5.VertxExtension;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The lifecycle-cost algorithm and the ledger's exactly-once consumption, on a real PostgreSQL. */
@ExtendWith(VertxExtension.class)
class LifecycleCostsTest {
  static Vertx vertx;
  static Database db;
  static Pool pool;
  static final LifecycleCosts COSTS = new LifecycleCosts(new BigDecimal("1.5"));
  static final OffsetDateTime T0 = OffsetDateTime.parse("2026-03-28T10:00:00Z");
  static int counter;

  @BeforeAll
  static void start(Vertx v) throws Exception {
    vertx = v; // closed by VertxExtension after the class
    db = Database.open(Optional.of(new Secret(TestDatabase.newDatabaseUrl())), Path.of("/nonexistent"));
    pool = db.pool(vertx, 8);
    await(pool.query("INSERT INTO organizations (id, name, created_at) VALUES ('org_t', 't', now())").execute());
  }

  @AfterAll
  static void stop() throws Exception {
    db.close();
  }

  static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** A sandbox provisioned at {@code start} at the daytona 1 vCPU / 1 GiB rate. */
  static String sandbox(OffsetDateTime start) throws Exception {
    String id = "sbx_" + String.format("%032x", ++counter);
    await(pool.preparedQuery("INSERT INTO sandboxes (id, organization_id, backend, status, config, created_at,"
            + " create_token, node_id, provisioning_at, hourly_rate_usd, pricing_source)"
            + " VALUES ($1, 'org_t', 'daytona', 'running', '{}'::jsonb, $2, 'ctk', 'n', $2, 0.054, '2026-03-28')")
        .execute(Tuple.of(id, start)));
    return id;
  }

  static boolean record(String id, String obs, OffsetDateTime at, BigDecimal provider) throws Exception {
    return await(pool.withTransaction(conn -> COSTS.record(conn, id, obs, at, provider)));
  }

  static Row cost(String id) throws Exception {
    return await(pool.preparedQuery("SELECT * FROM lifecycle_costs WHERE sandbox_id = $1").execute(Tuple.of(id)))
        .iterator().next();
  }

  static List<Row> ledger(String id) throws Exception {
    List<Row> out = new ArrayList<>();
    await(pool.preparedQuery("SELECT * FROM lifecycle_ledger_entries WHERE sandbox_id = $1 ORDER BY created_at")
        .execute(Tuple.of(id))).forEach(out::add);
    return out;
  }

  @Test
  void half_an_hour_at_0_054_per_hour_costs_0_027() throws Exception {
    String id = sandbox(T0);
    assertThat(record(id, "terminate:" + id, T0.plusSeconds(1800), null)).isTrue();
    Row c = cost(id);
    assertThat(c.getBigDecimal("billable_seconds")).isEqualByComparingTo("1800");
    assertThat(c.getBigDecimal("estimated_cost_usd")).isEqualByComparingTo("0.027000");
    assertThat(c.getBigDecimal("customer_cost_usd")).isEqualByComparingTo("0.0405");
    assertThat(c.getString("pricing_source")).isEqualTo("2026-03-28");
    assertThat(ledger(id)).hasSize(1);
    assertThat(record(id, "terminate:" + id, T0.plusSeconds(1800), null)).as("a replay writes nothing").isFalse();
    assertThat(ledger(id)).hasSize(1);
  }

  @Test
  void a_window_across_midnight_is_split_per_utc_day() throws Exception {
    OffsetDateTime start = OffsetDateTime.parse("2026-03-28T23:30:00Z");
    String id = sandbox(start);
    record(id, "terminate:" + id, start.plusSeconds(5400), null);
    List<Row> rows = ledger(id);
    assertThat(rows).hasSize(2);
    assertThat(rows.get(0).getBigDecimal("billable_seconds_delta")).isEqualByComparingTo("1800");
    assertThat(rows.get(1).getBigDecimal("billable_seconds_delta")).isEqualByComparingTo("3600");
    assertThat(rows.get(0).getBigDecimal("provider_delta_usd")).isEqualByComparingTo("0.027");
    assertThat(rows.get(1).getBigDecimal("provider_delta_usd")).isEqualByComparingTo("0.054");
    CostLedger ledger = new CostLedger(pool, COSTS);
    List<CostLedger.Item> byDay = await(ledger.summary("org_t", "day", OffsetDateTime.parse("2026-03-28T00:00:00Z"),
        OffsetDateTime.parse("2026-03-29T00:00:00Z")));
    assertThat(byDay).extracting(CostLedger.Item::key).contains("2026-03-28");
    assertThat(byDay.stream().filter(i -> i.key().equals("2026-03-28")).findFirst().orElseThrow().providerCostUsd())
        .isGreaterThanOrEqualTo(new BigDecimal("0.027"));
  }

  @Test
  void a_provider_cost_replaces_the_estimate_and_later_estimates_do_not_overwrite_it() throws Exception {
    String id = sandbox(T0);
    record(id, "estimate:1", T0.plusSeconds(600), null);
    assertThat(cost(id).getBigDecimal("effective_cost_usd")).isEqualByComparingTo("0.009");
    record(id, "provider:1", T0.plusSeconds(1200), new BigDecimal("0.125"));
    record(id, "estimate:2", T0.plusSeconds(3600), null);
    Row c = cost(id);
    assertThat(c.getString("cost_state")).isEqualTo("reconciled");
    assertThat(c.getBigDecimal("effective_cost_usd")).isEqualByComparingTo("0.125");
    assertThat(c.getBigDecimal("provider_reported_cost_usd")).isEqualByComparingTo("0.125");
    assertThat(c.getBigDecimal("billable_seconds")).isEqualByComparingTo("3600");
    BigDecimal total = ledger(id).stream().map(r -> r.getBigDecimal("provider_delta_usd"))
        .reduce(BigDecimal.ZERO, BigDecimal::add);
    assertThat(total).as("no double counting").isEqualByComparingTo("0.125");
  }

  @Test
  void a_clock_going_backwards_adds_nothing() throws Exception {
    String id = sandbox(T0);
    record(id, "estimate:a", T0.plusSeconds(1000), null);
    record(id, "estimate:b", T0.plusSeconds(500), null);
    assertThat(cost(id).getBigDecimal("billable_seconds")).isEqualByComparingTo("1000");
    BigDecimal seconds = ledger(id).stream().map(r -> r.getBigDecimal("billable_seconds_delta"))
        .reduce(BigDecimal.ZERO, BigDecimal::add);
    assertThat(seconds).isEqualByComparingTo("1000");
  }

  @Test
  void two_consumers_on_one_database_price_every_event_exactly_once() throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      String id = sandbox(T0);
      ids.add(id);
      await(pool.preparedQuery("INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status,"
              + " occurred_at, data) VALUES ($1, 'org_t', $2, 'sandbox.destroyed', 'destroyed', $3, '{}'::jsonb)")
          .execute(Tuple.of("evt_" + id, id, T0.plusSeconds(3600))));
    }
    LedgerHandler handler = new LedgerHandler(COSTS, new UsageMeter(BigDecimal.ONE));
    OutboxConsumer a = new OutboxConsumer(pool, "ledger-test", 7, handler);
    OutboxConsumer b = new OutboxConsumer(pool, "ledger-test", 7, handler);
    await(a.register());
    int handled = 0;
    while (true) {
      List<Integer> passes = List.of(await(a.pollOnce()), await(b.pollOnce()));
      Future<Integer> fa = a.pollOnce();
      Future<Integer> fb = b.pollOnce();
      int n = passes.get(0) + passes.get(1) + await(fa) + await(fb);
      handled += n;
      if (n == 0) {
        break;
      }
    }
    assertThat(handled).isEqualTo(40);
    for (String id : ids) {
      assertThat(ledger(id)).hasSize(1);
      assertThat(cost(id).getBigDecimal("estimated_cost_usd")).isEqualByComparingTo("0.054");
    }
  }
}
