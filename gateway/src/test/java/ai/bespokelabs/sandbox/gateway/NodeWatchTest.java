package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.repo.NodeLoss;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.supervisor.NodeWatchVerticle;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The node watch without cluster membership: a node whose heartbeat row went stale is taken over by the
 * watch of another node (once), and a node that finds itself taken over cleans up and registers again.
 */
class NodeWatchTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of("BESPOKE_SUPERVISION_INTERVAL_SECS", "1"));
  static TestGateway gw;

  static void sql(String statement, Object... args) throws Exception {
    gw.gateway.pool().preparedQuery(statement).execute(Tuple.wrap(args)).toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  static NodeWatchVerticle watch(String nodeId, Runnable afterTakeOver, AtomicInteger declaredLost) {
    Pool pool = gw.gateway.pool();
    return new NodeWatchVerticle(new NodeRepository(pool), new NodeLoss(pool), nodeId, List.of("local"),
        Clock.systemUTC(), afterTakeOver, () -> {
          declaredLost.incrementAndGet();
          return Future.succeededFuture();
        });
  }

  @Test
  void a_node_whose_heartbeat_went_stale_is_taken_over_once() throws Exception {
    String key = gw.bootstrap("Stale node");
    String sbx = gw.sandbox(key, new JsonObject().put("backend", "local")).getString("id");
    // the sandbox now belongs to a node that stopped beating 30 s ago
    OffsetDateTime lastBeat = OffsetDateTime.now().minusSeconds(30);
    sql("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ('ghost', $1, $1)", lastBeat);
    sql("UPDATE sandboxes SET node_id = 'ghost', created_at = created_at - interval '1 minute',"
        + " provisioning_at = provisioning_at - interval '1 minute', running_at = running_at - interval '1 minute'"
        + " WHERE id = $1", sbx);
    AtomicInteger lost = new AtomicInteger();
    for (String watcher : new String[] {"watcher-1", "watcher-2"}) {
      sql("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ($1, now(), now())", watcher);
      gw.gateway.vertx().deployVerticle(watch(watcher, () -> { }, lost))
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
    JsonObject failed = Waits.upTo(10).alias("the stale node was taken over").until(
        () -> gw.get("/v1/sandboxes/" + sbx, key).json(), s -> "failed".equals(s.getString("status")));
    assertThat(failed.getString("termination_reason")).isEqualTo("node_lost");
    JsonObject error = failed.getJsonObject("latest_error");
    assertThat(error.getString("code")).as("the contract's code").isEqualTo("connection");
    assertThat(error.getString("backend")).isEqualTo("local");
    assertThat(error.getJsonObject("context").getString("provider_code")).isEqualTo("node_lost");
    assertThat(failed.getString("cleanup_status")).as("not known to be gone until its node returns")
        .isEqualTo("unknown");
    assertThat(OffsetDateTime.parse(failed.getString("failed_at"))).as("it ended at the last heartbeat")
        .isEqualTo(lastBeat.withOffsetSameInstant(java.time.ZoneOffset.UTC).truncatedTo(java.time.temporal.ChronoUnit.MICROS));
    Thread.sleep(3000); // more passes of every watch
    long failures = gw.gateway.pool().preparedQuery("SELECT count(*) FROM lifecycle_events WHERE sandbox_id = $1"
        + " AND type = 'sandbox.failed'").execute(Tuple.of(sbx)).await().iterator().next().getLong(0);
    assertThat(failures).as("taken over once, whichever watch got there first").isEqualTo(1);
    assertThat(lost.get()).as("neither watcher was itself lost").isZero();
  }

  /** A termination the lost node's supervisor had claimed is finished by another node at once, not once stale. */
  @Test
  void the_terminations_a_lost_node_claimed_are_taken_over_at_once() throws Exception {
    String key = gw.bootstrap("Claims of a lost node");
    String sbx = gw.sandbox(key, null).getString("id");
    sql("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES ('gone', now() - interval '1 minute',"
        + " now() - interval '1 minute')");
    sql("UPDATE sandboxes SET status = 'stopping', stopping_at = now(), supervision_owner = 'supervisor-gone-0a1b2c3d4e5f',"
        + " supervision_claimed_at = now() WHERE id = $1", sbx);
    gw.gateway.vertx().deployVerticle(watch("claims-watcher", () -> { }, new AtomicInteger()))
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    JsonObject done = Waits.upTo(15).alias("the claim was taken over well before it went stale (60 s)").until(
        () -> gw.get("/v1/sandboxes/" + sbx, key).json(), s -> "destroyed".equals(s.getString("status")));
    assertThat(done.getString("termination_reason")).isEqualTo("operator");
  }

  @Test
  void a_node_that_was_taken_over_cleans_up_and_registers_again() throws Exception {
    AtomicInteger lost = new AtomicInteger();
    sql("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at, lost_at) VALUES ('comeback', now(), now(),"
        + " now())");
    gw.gateway.vertx().deployVerticle(watch("comeback", () -> { }, lost))
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    Waits.upTo(10).alias("it noticed and cleaned up").until(lost::get, n -> n == 1);
    Waits.upTo(10).alias("it registered again").until(() -> gw.gateway.pool()
        .preparedQuery("SELECT lost_at IS NULL FROM gateway_nodes WHERE node_id = 'comeback'").execute().await()
        .iterator().next().getBoolean(0), Boolean::booleanValue);
  }
}
