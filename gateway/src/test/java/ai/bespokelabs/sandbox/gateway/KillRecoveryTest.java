package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gateway killed with SIGKILL leaves a local sandbox's processes running (re-parented); after a restart
 * the supervisor terminates the expired sandbox and nothing it started survives.
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
  void processes_of_an_expired_sandbox_die_after_kill_9_and_restart() throws Exception {
    int port = TestGateway.freePort();
    Map<String, String> env = Map.of("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_SUPERVISION_INTERVAL_SECS", "1");
    GatewayProcess first = GatewayProcess.start(dataDir, port, env);
    String key;
    String id;
    Path dir;
    long orphan;
    try {
      key = call("POST", first.base + "/v1/organizations", null, "{\"name\":\"Acme\"}")
          .getJsonObject("api_key").getString("secret");
      JsonObject sbx = call("POST", first.base + "/v1/sandboxes", key, "{\"backend\":\"local\",\"timeout_secs\":6}");
      id = sbx.getString("id");
      dir = Path.of(sbx.getString("provider_resource_id"));
      JsonObject run = call("POST", first.base + "/v1/sandboxes/" + id + "/execute", key,
          "{\"command\":\"sleep 300 >/dev/null 2>&1 & echo $!\"}");
      orphan = Long.parseLong(run.getString("stdout").trim());
    } finally {
      first.process.destroyForcibly();
      first.process.waitFor(30, TimeUnit.SECONDS);
    }
    assertThat(StreamingTest.isRunning(orphan)).as("the background process outlived the killed gateway").isTrue();

    GatewayProcess second = GatewayProcess.start(dataDir, port, env);
    try {
      JsonObject s = null;
      for (int i = 0; i < 300; i++) {
        s = call("GET", second.base + "/v1/sandboxes/" + id, key, null);
        if ("destroyed".equals(s.getString("status"))) {
          break;
        }
        Thread.sleep(50);
      }
      assertThat(s.getString("status")).isEqualTo("destroyed");
      assertThat(s.getString("termination_reason")).isEqualTo("ttl_expired");
      for (int i = 0; i < 100 && StreamingTest.isRunning(orphan); i++) {
        Thread.sleep(20);
      }
      assertThat(StreamingTest.isRunning(orphan)).as("no re-parented process survives").isFalse();
      assertThat(dir).doesNotExist();
    } finally {
      second.process.destroy();
      second.process.waitFor(60, TimeUnit.SECONDS);
    }
    assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("ERROR");
  }
}
