package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.supervisor.SupervisorVerticle;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Deadlines are enforced with nobody watching, exactly once, and unfinished terminations are finished. */
class SupervisorTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of("BESPOKE_SUPERVISION_INTERVAL_SECS", "1"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() throws Exception {
    key = gw.bootstrap("Ttl");
    // a second supervisor on the same database competes for every claim
    io.vertx.sqlclient.Pool pool = gw.gateway.pool();
    gw.gateway.vertx().deployVerticle(new SupervisorVerticle(new ai.bespokelabs.sandbox.core.repo.NodeRepository(pool),
            new ai.bespokelabs.sandbox.core.repo.TerminationClaims(pool),
            new ai.bespokelabs.sandbox.core.repo.ExecutionRepository(pool), gw.gateway.wiring().wakeups(),
            gw.gateway.config().node().requireId(), Clock.systemUTC(), 1, gw.gateway.wiring().terminations, java.util.List.of(),
            new ai.bespokelabs.sandbox.supervisor.Reconciler(gw.gateway.vertx(),
                new ai.bespokelabs.sandbox.core.repo.ReconciliationRepository(pool), gw.gateway.wiring().runtime,
                gw.gateway.wiring().terminations),
            new ai.bespokelabs.sandbox.supervisor.AlertEvaluator(
                new ai.bespokelabs.sandbox.core.repo.OperationsRepository(pool),
                new ai.bespokelabs.sandbox.core.repo.PolicyRepository(pool),
                (org, now) -> io.vertx.core.Future.succeededFuture(new java.math.BigDecimal[] {
                    java.math.BigDecimal.ZERO, java.math.BigDecimal.ZERO}))))
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  static JsonObject awaitStatus(String id, String status) throws InterruptedException {
    return awaitStatus(gw, key, id, status);
  }

  /** The sandbox once it has {@code status}; fails after 15 seconds. */
  static JsonObject awaitStatus(TestGateway gw, String key, String id, String status) {
    return Waits.upTo(15).alias(id + " became " + status).until(() -> gw.get("/v1/sandboxes/" + id, key).json(),
        s -> status.equals(s.getString("status")));
  }

  static long count(String sql, Object... args) throws Exception {
    return gw.gateway.pool().preparedQuery(sql).execute(Tuple.wrap(args)).toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS).iterator().next().getLong(0);
  }

  @Test
  void sandboxes_die_at_their_deadline_exactly_once_with_nobody_connected() throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(gw.sandbox(key, new JsonObject().put("timeout_secs", 1 + i % 2)).getString("id"));
    }
    for (String id : ids) {
      JsonObject s = awaitStatus(id, "destroyed");
      assertThat(s.getString("termination_reason")).isEqualTo("ttl_expired");
      long lateMs = Duration.between(OffsetDateTime.parse(s.getString("expires_at")),
          OffsetDateTime.parse(s.getString("terminated_at"))).toMillis();
      assertThat(lateMs).as("terminated promptly after its deadline (the benchmark measures it)").isBetween(0L, 2500L);
      assertThat(count("SELECT count(*) FROM lifecycle_events WHERE sandbox_id = $1 AND type = 'sandbox.destroyed'",
          id)).isEqualTo(1L);
      assertThat(count("SELECT count(*) FROM lifecycle_events WHERE sandbox_id = $1 AND type = 'sandbox.stopping'",
          id)).isEqualTo(1L);
    }
  }

  @Test
  void a_new_deadline_is_set_from_now_and_bounded_by_policy() throws Exception {
    String org = gw.bootstrap("Extend");
    JsonObject sbx = gw.sandbox(org, new JsonObject().put("timeout_secs", 300));
    String id = sbx.getString("id");
    gw.send("PUT", "/v1/policies/current", org, new JsonObject().put("max_sandbox_lifetime_secs", 600).encode());
    TestGateway.Resp tooLong = gw.post("/v1/sandboxes/" + id + "/timeout", org, new JsonObject().put("timeout_secs", 601));
    assertThat(tooLong.status()).isEqualTo(403);
    assertThat(tooLong.json().getJsonObject("detail").getString("code")).isEqualTo("policy_denied");
    TestGateway.Resp shorter = gw.post("/v1/sandboxes/" + id + "/timeout", org, new JsonObject().put("timeout_secs", 1));
    assertThat(shorter.status()).isEqualTo(200);
    assertThat(shorter.json().getInteger("version")).isEqualTo(sbx.getInteger("version") + 1);
    key = org;
    JsonObject done = awaitStatus(id, "destroyed");
    assertThat(done.getString("termination_reason")).isEqualTo("ttl_expired");
    TestGateway.Resp late = gw.post("/v1/sandboxes/" + id + "/timeout", org, new JsonObject().put("timeout_secs", 10));
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.detail()).isEqualTo("sandbox is destroyed");
    assertThat(gw.post("/v1/sandboxes/" + id + "/timeout", org, new JsonObject()).status()).isEqualTo(422);
  }

  @Test
  void a_stale_claim_and_an_interrupted_delete_are_finished() throws Exception {
    String org = gw.bootstrap("Stale");
    key = org;
    String claimedByDeadNode = gw.sandbox(org, new JsonObject().put("timeout_secs", 3600)).getString("id");
    String interruptedDelete = gw.sandbox(org, null).getString("id");
    OffsetDateTime longAgo = OffsetDateTime.now().minusMinutes(5);
    gw.gateway.pool().preparedQuery("UPDATE sandboxes SET status = 'stopping', stopping_at = $2, expires_at = $2,"
            + " supervision_owner = 'supervisor-dead', supervision_claimed_at = $2 WHERE id = $1")
        .execute(Tuple.of(claimedByDeadNode, longAgo)).toCompletionStage().toCompletableFuture().get();
    gw.gateway.pool().preparedQuery("UPDATE sandboxes SET status = 'stopping', stopping_at = $2 WHERE id = $1")
        .execute(Tuple.of(interruptedDelete, longAgo)).toCompletionStage().toCompletableFuture().get();
    assertThat(awaitStatus(claimedByDeadNode, "destroyed").getString("termination_reason")).isEqualTo("ttl_expired");
    assertThat(awaitStatus(interruptedDelete, "destroyed").getString("termination_reason")).isEqualTo("operator");
  }
}
