package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlConnection;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code GET /readyz}: the database, the ledger's lag and the supervisor's last pass, a failing one named. */
class ReadinessTest {

  @Test
  void a_lagging_ledger_makes_the_node_not_ready_and_says_why() throws Exception {
    try (TestGateway gw = new TestGateway()) {
      Waits.upTo(20).untilAsserted(() -> {
        Resp ready = gw.get("/readyz", null);
        assertThat(ready.status()).as(ready.body()).isEqualTo(200);
        JsonObject checks = ready.json().getJsonObject("checks");
        assertThat(checks.getJsonObject("database").getBoolean("ok")).isTrue();
        assertThat(checks.getJsonObject("ledger").getLong("lag_secs")).isZero();
        assertThat(checks.getJsonObject("supervisor").getBoolean("ok")).isTrue();
      });
      assertThat(gw.get("/healthz", null).status()).isEqualTo(200);

      // the ledger cannot take its position while another transaction holds it: its events wait
      SqlConnection holder = gw.gateway.pool().getConnection().await(10, TimeUnit.SECONDS);
      try {
        holder.begin().await(10, TimeUnit.SECONDS);
        holder.query("SELECT * FROM outbox_offsets WHERE consumer = 'ledger' FOR UPDATE").execute()
            .await(10, TimeUnit.SECONDS);
        String key = gw.bootstrap("Ready");
        gw.sandbox(key, null);
        gw.clock.advance(Duration.ofMinutes(2)); // two minutes without pricing
        Resp stale = gw.get("/readyz", null);
        assertThat(stale.status()).as(stale.body()).isEqualTo(503);
        assertThat(stale.json().getString("status")).isEqualTo("not_ready");
        JsonObject checks = stale.json().getJsonObject("checks");
        assertThat(checks.getJsonObject("database").getBoolean("ok")).isTrue();
        JsonObject ledger = checks.getJsonObject("ledger");
        assertThat(ledger.getBoolean("ok")).isFalse();
        assertThat(ledger.getLong("lag_secs")).isGreaterThanOrEqualTo(120);
        assertThat(ledger.getLong("waiting_events")).isPositive();
        assertThat(ledger.getString("problem")).contains("behind");
        assertThat(gw.get("/healthz", null).status()).as("liveness does not depend on it").isEqualTo(200);
      } finally {
        holder.close();
      }
      Waits.upTo(20).untilAsserted(() -> assertThat(gw.get("/readyz", null).json().getJsonObject("checks")
          .getJsonObject("ledger").getBoolean("ok")).as("priced once released").isTrue());
    }
  }
}
