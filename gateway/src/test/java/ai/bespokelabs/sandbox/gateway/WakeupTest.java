package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ledger and the supervisor are woken by PostgreSQL itself: a state change written by another client (here a
 * separate Vert.x instance with its own pool, as another node would) reaches them with no event-bus message.
 */
class WakeupTest {
  static TestGateway gw;
  static Vertx other;
  static Pool pool;

  @BeforeAll
  static void start() {
    gw = new TestGateway(); // supervision every 30 s: only a wake-up acts sooner
    other = Vertx.vertx();
    pool = PgBuilder.pool().connectingTo(PgConnectOptions.fromUri(gw.databaseUrl.replaceFirst("^jdbc:", "")))
        .using(other).build();
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close().await(10, TimeUnit.SECONDS);
    other.close().await(10, TimeUnit.SECONDS);
    gw.close();
  }

  static <T> T await(Future<T> f) throws Exception {
    return f.await(10, TimeUnit.SECONDS);
  }

  @Test
  void another_clients_events_are_metered_at_once_and_its_deadline_is_enforced() throws Exception {
    String key = gw.bootstrap("Woken");
    JsonObject sbx = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")).json();
    String id = sbx.getString("id");
    assertThat(sbx.getString("status")).isEqualTo("running");
    String org = await(pool.preparedQuery("SELECT organization_id FROM sandboxes WHERE id = $1").execute(Tuple.of(id)))
        .iterator().next().getString(0);
    SandboxRepository sandboxes = new SandboxRepository(pool);

    // four events in a row, each metered within 1.5 s: the ledger's 5 s backstop alone could not do it
    for (int i = 1; i <= 4; i++) {
      OffsetDateTime now = Times.now(gw.clock);
      assertThat(await(sandboxes.setDeadline(org, id, now.plusHours(i), now))).isPresent();
      long seq = await(pool.preparedQuery("SELECT max(seq) FROM lifecycle_events WHERE sandbox_id = $1")
          .execute(Tuple.of(id))).iterator().next().getLong(0);
      long until = System.nanoTime() + Duration.ofMillis(1500).toNanos();
      long offset;
      do {
        Thread.sleep(10);
        offset = await(pool.query("SELECT last_seq FROM outbox_offsets WHERE consumer = 'ledger'").execute())
            .iterator().next().getLong(0);
      } while (offset < seq && System.nanoTime() < until);
      assertThat(offset).as("event %d metered promptly", i).isGreaterThanOrEqualTo(seq);
    }

    // a deadline moved closer by another client: the supervisor re-arms for it long before its 30 s sweep
    OffsetDateTime now = Times.now(gw.clock);
    await(sandboxes.setDeadline(org, id, now.plusSeconds(1), now));
    JsonObject ended = SupervisorTest.awaitStatus(gw, key, id, "destroyed");
    assertThat(ended.getString("termination_reason")).isEqualTo("ttl_expired");
  }
}
