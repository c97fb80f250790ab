package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gateway killed with SIGKILL leaves its local sandboxes' processes running (re-parented) and their
 * directories in place, but their runtime (env vars, process handles) died with it. The restarted gateway
 * ends them before it serves anything: destroyed with reason {@code shutdown} at the node's last heartbeat
 * (where their cost ends), nothing they started survives, their directories are removed.
 */
class KillRecoveryTest {
  @TempDir
  Path dataDir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private JsonObject call(String method, String url, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("X-Control-Plane-Admin", TestGateway.ADMIN);
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return new JsonObject(http.send(b.build(), HttpResponse.BodyHandlers.ofString()).body());
  }

  @Test
  void local_sandboxes_of_a_killed_gateway_end_with_reason_shutdown_before_it_serves_again() throws Exception {
    int port = TestGateway.freePort();
    Path catalog = dataDir.resolve("pricing.json");
    Files.writeString(catalog, """
        {"last_updated": "2026-11-01", "backends": {
          "local": {"vcpu_per_hour_usd": 0.036, "ram_gib_per_hour_usd": 0.018}}}""");
    Map<String, String> env = Map.of("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_SUPERVISION_INTERVAL_SECS", "1",
        "BESPOKE_PRICING_FILE", catalog.toString());
    GatewayProcess first = GatewayProcess.start(dataDir, port, env);
    String key;
    String busy;
    String idle;
    Path busyDir;
    Path idleDir;
    long orphan;
    OffsetDateTime killedAt;
    try {
      key = call("POST", first.base + "/v1/organizations", null, "{\"name\":\"Acme\"}")
          .getJsonObject("api_key").getString("secret");
      JsonObject sbx = call("POST", first.base + "/v1/sandboxes", key, "{\"backend\":\"local\",\"timeout_secs\":3600}");
      busy = sbx.getString("id");
      busyDir = Path.of(sbx.getString("provider_resource_id"));
      JsonObject run = call("POST", first.base + "/v1/sandboxes/" + busy + "/execute", key,
          "{\"command\":\"sleep 300 >/dev/null 2>&1 & echo $!\"}");
      orphan = Long.parseLong(run.getString("stdout").trim());
      JsonObject other = call("POST", first.base + "/v1/sandboxes", key, "{\"backend\":\"local\"}");
      idle = other.getString("id");
      idleDir = Path.of(other.getString("provider_resource_id"));
      Thread.sleep(1500); // a heartbeat or two
    } finally {
      killedAt = OffsetDateTime.now();
      first.process.destroyForcibly();
      first.process.waitFor(30, TimeUnit.SECONDS);
    }
    assertThat(StreamingTest.isRunning(orphan)).as("the background process outlived the killed gateway").isTrue();
    assertThat(busyDir).isDirectory();
    Thread.sleep(2000);

    GatewayProcess second = GatewayProcess.start(dataDir, port, env);
    try {
      for (String id : new String[] {busy, idle}) {
        // the first answer the restarted gateway gives: no sandbox of it ever looks alive
        JsonObject s = call("GET", second.base + "/v1/sandboxes/" + id, key, null);
        assertThat(s.getString("status")).as(s.encode()).isEqualTo("destroyed");
        assertThat(s.getString("termination_reason")).isEqualTo("shutdown");
        OffsetDateTime end = OffsetDateTime.parse(s.getString("terminated_at"));
        assertThat(end).as("it ended when the killed gateway last beat, not at the restart").isBeforeOrEqualTo(killedAt)
            .isAfterOrEqualTo(OffsetDateTime.parse(s.getString("running_at")));
        JsonObject cost = awaitCost(second, key, id);
        assertThat(OffsetDateTime.parse(cost.getString("updated_at"))).as("its cost ended with it").isEqualTo(end);
        BigDecimal billed = new BigDecimal(cost.getValue("billable_seconds").toString());
        BigDecimal lived = BigDecimal.valueOf(java.time.Duration.between(
            OffsetDateTime.parse(s.getString("provisioning_at")), killedAt).toMillis(), 3);
        assertThat(billed).as("no second after the kill is billed").isPositive().isLessThanOrEqualTo(lived);
        JsonObject exec = call("POST", second.base + "/v1/sandboxes/" + id + "/execute", key, "{\"command\":\"true\"}");
        assertThat(exec.getString("detail")).isEqualTo("sandbox is destroyed");
      }
      long reparented = orphan;
      Waits.upTo(5).untilAsserted(
          () -> assertThat(StreamingTest.isRunning(reparented)).as("no re-parented process survives").isFalse());
      assertThat(busyDir).doesNotExist();
      assertThat(idleDir).doesNotExist();
    } finally {
      second.process.destroy();
      second.process.waitFor(60, TimeUnit.SECONDS);
    }
    assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("ERROR");
  }

  /** The sandbox's lifecycle cost once the ledger has recorded its end. */
  private JsonObject awaitCost(GatewayProcess g, String key, String id) throws Exception {
    return Waits.upTo(10).alias("the ledger recorded the sandbox's end").until(
        () -> call("GET", g.base + "/v1/sandboxes/" + id + "/detail", key, null).getJsonObject("cost"),
        cost -> cost != null);
  }
}
