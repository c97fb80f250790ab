package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * First run with nothing configured: the gateway starts its own PostgreSQL in the data directory, generates
 * the pepper and admin token (0600), and after a restart the same product keys still work. A graceful stop
 * ends the node's local sandboxes with reason {@code shutdown}: nothing they started survives it.
 */
class RestartTest {
  @TempDir
  Path dataDir;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void first_run_generates_secrets_and_keys_survive_a_restart() throws Exception {
    int port = TestGateway.freePort();
    GatewayConfig config = ConfigLoader.fromMap(Map.of("PORT", String.valueOf(port),
        "BESPOKE_DATA_DIR", dataDir.toString(), "BESPOKE_HTTP_INSTANCES", "1"), "/nonexistent");
    String base = "http://127.0.0.1:" + port;
    String key;
    String sandboxId;
    Path sandboxDir;
    long background;
    java.time.OffsetDateTime stoppedAt;
    try (Gateway first = Gateway.start(config, Clock.systemUTC())) {
      assertThat(first.secretsGenerated()).isTrue();
      Path tokenFile = dataDir.resolve(SecretStore.ADMIN_TOKEN_FILE);
      assertThat(Files.getPosixFilePermissions(tokenFile)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
      assertThat(Files.getPosixFilePermissions(dataDir.resolve(SecretStore.PEPPER_FILE)))
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
      String token = Files.readString(tokenFile).trim();
      HttpResponse<String> org = send(HttpRequest.newBuilder(URI.create(base + "/v1/organizations"))
          .header("X-Control-Plane-Admin", token).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Acme\"}")));
      assertThat(org.statusCode()).isEqualTo(201);
      key = new JsonObject(org.body()).getJsonObject("api_key").getString("secret");
      HttpResponse<String> created = send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes"))
          .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"local\"}")));
      assertThat(created.statusCode()).isEqualTo(201);
      sandboxId = new JsonObject(created.body()).getString("id");
      sandboxDir = Path.of(new JsonObject(created.body()).getString("provider_resource_id"));
      HttpResponse<String> started = send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + sandboxId
              + "/execute")).header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"command\":\"sleep 300 >/dev/null 2>&1 & echo $!\"}")));
      background = Long.parseLong(new JsonObject(started.body()).getString("stdout").trim());
      assertThat(StreamingTest.isRunning(background)).isTrue();
      stoppedAt = java.time.OffsetDateTime.now();
    }
    assertThat(StreamingTest.isRunning(background)).as("the graceful stop ended the sandbox's processes").isFalse();
    assertThat(sandboxDir).as("and removed its directory").doesNotExist();
    assertThat(dataDir.resolve("postgres")).isDirectory();
    try (Gateway second = Gateway.start(config, Clock.systemUTC())) {
      assertThat(second.secretsGenerated()).isFalse();
      for (String setting : List.of("synchronous_commit", "fsync", "full_page_writes")) {
        assertThat(second.pool().query("SHOW " + setting).execute().await(10, java.util.concurrent.TimeUnit.SECONDS)
            .iterator().next().getString(0)).as("the embedded server acknowledges a commit once it is on disk: "
                + setting).isEqualTo("on");
      }
      HttpResponse<String> got = send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + sandboxId))
          .header("Authorization", "Bearer " + key));
      assertThat(got.statusCode()).isEqualTo(200);
      JsonObject sandbox = new JsonObject(got.body());
      assertThat(sandbox.getString("status")).isEqualTo("destroyed");
      assertThat(sandbox.getString("termination_reason")).isEqualTo("shutdown");
      assertThat(java.time.OffsetDateTime.parse(sandbox.getString("terminated_at"))).as("ended at the stop")
          .isAfterOrEqualTo(stoppedAt.minusNanos(1000));
      HttpResponse<String> exec = send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + sandboxId
              + "/execute")).header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"command\":\"true\"}")));
      assertThat(exec.statusCode()).isEqualTo(409);
      assertThat(new JsonObject(exec.body()).getString("detail")).isEqualTo("sandbox is destroyed");
      HttpResponse<String> deleted = send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + sandboxId))
          .header("Authorization", "Bearer " + key).DELETE());
      assertThat(deleted.statusCode()).isEqualTo(200);
      assertThat(new JsonObject(deleted.body()).getString("status")).isEqualTo("destroyed");
    }
  }

  /** A sandbox whose deadline passed before its node stopped ended at that deadline, for that reason. */
  @Test
  void a_host_sandbox_past_its_deadline_at_the_stop_ends_at_its_deadline() throws Exception {
    TestGateway gw = new TestGateway(Map.of("BESPOKE_SUPERVISION_INTERVAL_SECS", "0"));
    try {
      String key = gw.bootstrap("Late");
      JsonObject sbx = gw.sandbox(key, new JsonObject().put("timeout_secs", 3600));
      String id = sbx.getString("id");
      Thread.sleep(1000);
      java.time.OffsetDateTime deadline = java.time.OffsetDateTime.now().minusNanos(500_000_000);
      gw.gateway.pool().preparedQuery("UPDATE sandboxes SET expires_at = $2 WHERE id = $1")
          .execute(io.vertx.sqlclient.Tuple.of(id, deadline)).await(10, java.util.concurrent.TimeUnit.SECONDS);
      gw = gw.restarted();
      JsonObject s = gw.get("/v1/sandboxes/" + id, key).json();
      assertThat(s.getString("status")).isEqualTo("destroyed");
      assertThat(s.getString("termination_reason")).isEqualTo("ttl_expired");
      assertThat(java.time.OffsetDateTime.parse(s.getString("terminated_at")).toInstant())
          .isEqualTo(deadline.toInstant().truncatedTo(java.time.temporal.ChronoUnit.MICROS));
      assertThat(Path.of(sbx.getString("provider_resource_id"))).doesNotExist();
    } finally {
      gw.close();
    }
  }
}
