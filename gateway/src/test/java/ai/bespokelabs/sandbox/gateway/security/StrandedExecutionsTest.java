package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.gateway.GatewayProcess;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An execution whose gateway died (kill -9) or whose sandbox ended no longer stays {@code running} forever
 * without usage: it ends as {@code failed} with the reason, and its usage is recorded like any other end.
 */
@Tag("security")
class StrandedExecutionsTest {
  @TempDir
  Path dataDir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private HttpResponse<String> call(String method, String url, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("X-Control-Plane-Admin", TestGateway.ADMIN);
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonObject json(String method, String url, String key, String body) throws Exception {
    return new JsonObject(call(method, url, key, body).body());
  }

  /** The execution once it is no longer running; fails after {@code seconds}. */
  private JsonObject awaitEnd(String url, String key, int seconds) {
    return Waits.upTo(seconds).alias("the execution ended").until(() -> json("GET", url, key, null),
        e -> !"running".equals(e.getString("status")));
  }

  /** The usage export's row for {@code requestId}, once the ledger wrote one; fails after ten seconds. */
  private String usageRow(String base, String key, String requestId) {
    return Waits.upTo(10).alias("the ledger wrote the usage of " + requestId).until(
        () -> java.util.Arrays.stream(call("GET", base + "/v1/exports/usage.csv?limit=1000", key, null).body()
            .split("\r\n")).filter(line -> line.contains("," + requestId + ",")).findFirst().orElse(null),
        java.util.Objects::nonNull);
  }

  @Test
  void executions_of_a_killed_gateway_end_failed_with_usage_after_restart() throws Exception {
    int port = TestGateway.freePort();
    Map<String, String> env = Map.of("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_SUPERVISION_INTERVAL_SECS", "1");
    GatewayProcess first = GatewayProcess.start(dataDir, port, env);
    String key;
    String sandbox;
    String execution;
    try {
      key = json("POST", first.base + "/v1/organizations", null, "{\"name\":\"Acme\"}")
          .getJsonObject("api_key").getString("secret");
      sandbox = json("POST", first.base + "/v1/sandboxes", key, "{\"backend\":\"local\"}").getString("id");
      HttpResponse<String> started = call("POST", first.base + "/v1/sandboxes/" + sandbox + "/executions", key,
          "{\"command\":\"sleep 300\"}");
      assertThat(started.statusCode()).isEqualTo(202);
      execution = "/v1/sandboxes/" + sandbox + "/executions/" + new JsonObject(started.body()).getString("id");
      Thread.sleep(300);
      assertThat(json("GET", first.base + execution, key, null).getString("status")).isEqualTo("running");
    } finally {
      first.process.destroyForcibly();
      first.process.waitFor(30, TimeUnit.SECONDS);
    }

    GatewayProcess second = GatewayProcess.start(dataDir, port, env);
    try {
      JsonObject ended = awaitEnd(second.base + execution, key, 5);
      assertThat(ended.getString("status")).isEqualTo("failed");
      assertThat(ended.getString("completed_at")).isNotNull();
      assertThat(ended.getJsonObject("error").getString("message"))
          .isEqualTo("the gateway restarted while the execution ran");
      assertThat(ended.getJsonObject("error").getString("code")).isEqualTo("execution_failed");
      String row = usageRow(second.base, key, ended.getString("request_id"));
      assertThat(row).as("the execution's usage is recorded").isNotNull().contains(",runtime_seconds,");
      assertThat(call("DELETE", second.base + "/v1/sandboxes/" + sandbox, key, null).statusCode()).isEqualTo(200);
    } finally {
      second.process.destroy();
      second.process.waitFor(60, TimeUnit.SECONDS);
    }
    assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("ERROR");
  }

  @Test
  void executions_left_running_end_failed_with_usage_when_their_sandbox_ends() throws Exception {
    try (TestGateway gw = new TestGateway(Map.of("BESPOKE_SUPERVISION_INTERVAL_SECS", "1"))) {
      String key = gw.bootstrap("Acme");
      String sandbox = gw.sandbox(key, null).getString("id");
      // an execution a node started before it died for good (it never restarts to end it)
      String execution = ai.bespokelabs.sandbox.core.Ids.newId("exe");
      gw.gateway.pool().preparedQuery("INSERT INTO executions (id, organization_id, sandbox_id, request_id, status,"
              + " created_at, node_id) SELECT $1, organization_id, id, 'stranded-1', 'running', $3, 'gone-node'"
              + " FROM sandboxes WHERE id = $2")
          .execute(Tuple.of(execution, sandbox, OffsetDateTime.now().minusSeconds(2)))
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      String url = gw.base + "/v1/sandboxes/" + sandbox + "/executions/" + execution;
      Waits.upTo(3).during(java.time.Duration.ofMillis(2500)).untilAsserted(() -> assertThat(
          json("GET", url, key, null).getString("status")).as("its sandbox is still running").isEqualTo("running"));

      assertThat(gw.delete("/v1/sandboxes/" + sandbox, key).status()).isEqualTo(200);
      JsonObject ended = awaitEnd(url, key, 20);
      assertThat(ended.getString("status")).isEqualTo("failed");
      assertThat(ended.getJsonObject("error").getString("message")).isEqualTo("the sandbox ended while the execution ran");
      String row = usageRow(gw.base, key, "stranded-1");
      assertThat(row).as("the execution's usage is recorded").isNotNull().contains(",runtime_seconds,");
      double seconds = Double.parseDouble(row.split(",")[4]);
      assertThat(seconds).as("counted from its start to its sandbox's end").isGreaterThanOrEqualTo(2.0).isLessThan(60.0);
    }
  }
}
