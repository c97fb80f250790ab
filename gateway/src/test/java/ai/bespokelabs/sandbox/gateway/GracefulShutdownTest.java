package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real entry point in its own process: SIGTERM stops accepting connections, lets the request in flight
 * finish with its full answer, ends the node's local sandboxes, then the process exits.
 */
class GracefulShutdownTest {
  @TempDir
  Path dataDir;

  @Test
  void sigterm_finishes_in_flight_requests_then_exits() throws Exception {
    int port = TestGateway.freePort();
    GatewayProcess started = GatewayProcess.start(dataDir, port, Map.of(
        "BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN,
        "BESPOKE_SHUTDOWN_GRACE_SECS", "20"));
    Process gateway = started.process;
    try {
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      String base = started.base;
      String key = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(base + "/v1/organizations"))
          .header("X-Control-Plane-Admin", TestGateway.ADMIN)
          .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Acme\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).body()).getJsonObject("api_key").getString("secret");
      JsonObject sandbox = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes"))
          .header("Authorization", "Bearer " + key)
          .POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"local\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).body());
      String id = sandbox.getString("id");

      CompletableFuture<HttpResponse<String>> inFlight = http.sendAsync(
          HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + id + "/execute"))
              .header("Authorization", "Bearer " + key)
              .POST(HttpRequest.BodyPublishers.ofString("{\"command\":\"sleep 4; echo finished\"}")).build(),
          HttpResponse.BodyHandlers.ofString());
      Thread.sleep(700);
      gateway.destroy();
      // a single node drains too: load balancers see it not ready, and it takes no new local sandbox
      ai.bespokelabs.sandbox.testkit.Waits.upTo(3).alias("draining").until(() -> http.send(HttpRequest.newBuilder(
          URI.create(base + "/readyz")).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 503);
      HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes"))
          .header("Authorization", "Bearer " + key)
          .POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"local\"}")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);

      HttpResponse<String> answer = inFlight.get(30, TimeUnit.SECONDS);
      assertThat(answer.statusCode()).isEqualTo(200);
      assertThat(new JsonObject(answer.body()).getString("stdout")).isEqualTo("finished\n");
      assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(Path.of(sandbox.getString("provider_resource_id"))).as("the stop ended the local sandbox")
          .doesNotExist();
      assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("Exception");
      try {
        http.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).timeout(Duration.ofSeconds(2)).build(),
            HttpResponse.BodyHandlers.ofString());
        throw new AssertionError("the gateway still accepts connections after SIGTERM");
      } catch (ConnectException expected) {
        // nothing listens any more
      }
    } finally {
      gateway.destroyForcibly();
    }
  }

}
