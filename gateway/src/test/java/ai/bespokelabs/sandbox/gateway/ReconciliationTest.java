package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Reconciliation against what the local provider really has, and orphan cleanup by the supervisor. */
class ReconciliationTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of("BESPOKE_SUPERVISION_INTERVAL_SECS", "1"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Recon");
  }

  static void deleteTree(Path dir) throws Exception {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  @Test
  void vanished_resources_fail_as_missing_and_present_ones_are_observed() throws Exception {
    String org = gw.bootstrap("Vanish");
    JsonObject kept = gw.sandbox(org, null);
    JsonObject gone = gw.sandbox(org, null);
    deleteTree(Path.of(gone.getString("provider_resource_id")));
    Resp r = gw.post("/v1/reconciliation/local", org, null);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json()).isEqualTo(new JsonObject().put("backend", "local").put("status", "ok").put("updated", 1)
        .put("missing", 1).put("orphans", 0));
    JsonObject g = gw.get("/v1/sandboxes/" + gone.getString("id"), org).json();
    assertThat(g.getString("status")).isEqualTo("failed");
    assertThat(g.getBoolean("provider_missing")).isTrue();
    assertThat(g.getJsonObject("latest_error").getString("code")).isEqualTo("not_found");
    JsonObject k = gw.get("/v1/sandboxes/" + kept.getString("id") + "/detail", org).json();
    assertThat(k.getJsonObject("sandbox").getString("status")).isEqualTo("running");
    assertThat(k.getJsonObject("sandbox").getString("last_provider_observed_at")).isNotNull();
    assertThat(k.getJsonArray("provider_observations").getJsonObject(0).getBoolean("missing")).isFalse();
    JsonObject summary = gw.get("/v1/reconciliation", org).json();
    assertThat(summary.getLong("missing")).isEqualTo(1L);
    assertThat(gw.post("/v1/reconciliation/e2b", org, null).detail()).isEqualTo("reconciliation is not configured: e2b");
    assertThat(gw.post("/v1/reconciliation/local", gw.key(org, "sandboxes:read"), null).detail())
        .isEqualTo("API key requires scope: providers:reconcile");
  }

  @Test
  void orphans_are_cleaned_up_once_by_the_supervisor() throws Exception {
    String orphanId = "sbx_" + "ab".repeat(16);
    Path orphan = gw.dataDir.resolve("sandboxes").resolve(orphanId);
    Files.createDirectories(orphan.resolve("work"));
    Files.writeString(orphan.resolve("work/file.txt"), "left behind");
    Waits.upTo(10).untilAsserted(() -> assertThat(orphan).as("the supervisor removed the orphan").doesNotExist());
    String status = gw.awaitOrphanStatus(orphan.toString(), "deleted");
    assertThat(status).isEqualTo("deleted");
    JsonObject live = gw.sandbox(key, null);
    Waits.upTo(3).during(Duration.ofMillis(2500)).untilAsserted(() -> assertThat(
        Path.of(live.getString("provider_resource_id"))).as("a live sandbox is never an orphan").isDirectory());
  }
}
