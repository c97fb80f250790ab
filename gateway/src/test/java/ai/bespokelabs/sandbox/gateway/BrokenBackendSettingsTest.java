package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.runpod.RunPodSimulator;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A backend whose settings are broken (a key file that holds no key, a malformed URL) never stops the gateway:
 * it is listed as not configured with the reason, its creates are refused with it, the other backends serve,
 * and the log says so in one line per backend, without a stack trace.
 */
class BrokenBackendSettingsTest {
  static final Duration CALL = Duration.ofSeconds(30);

  @Test
  void broken_settings_leave_that_backend_unconfigured_and_the_gateway_serving() throws Exception {
    Path dataDir = Files.createTempDirectory("gateway-broken-settings-");
    Path key = dataDir.resolve("not-a-key");
    Files.writeString(key, "this is not a private key\n");
    String secret = "broken_settings_test_key_0123";
    try (RunPodSimulator runpod = RunPodSimulator.start(secret)) {
      Map<String, String> env = new HashMap<>(Map.of("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
          "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_HTTP_INSTANCES", "1",
          "RUNPOD_API_KEY", secret, "RUNPOD_API_URL", runpod.url(), "BESPOKE_RUNPOD_SSH_KEY", key.toString(),
          "TENSORLAKE_API_KEY", secret, "TENSORLAKE_API_URL", "not a url"));
      // an image allow-list that cannot be read leaves docker unconfigured: it fails closed, never open
      env.put("BESPOKE_DOCKER_IMAGES", "python:*, my image");
      // URLs that do not parse at all, for the backends that check theirs in their settings
      env.putAll(Map.of("MODAL_TOKEN_ID", "ak-broken", "MODAL_TOKEN_SECRET", "as-broken", "MODAL_SERVER_URL", "not a url",
          "DAYTONA_API_KEY", secret, "DAYTONA_API_URL", "not a url", "CODECAPSULES_API_KEY", secret,
          "CODECAPSULES_API_URL", "not a url", "E2B_API_KEY", secret, "E2B_SANDBOX_URL", "ftp://envd.example"));
      GatewayProcess gateway = GatewayProcess.start(dataDir, TestGateway.freePort(), env);
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CALL).build();
      try {
        String apiKey = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/organizations"))
                .header("X-Control-Plane-Admin", TestGateway.ADMIN).header("Content-Type", "application/json")
                .timeout(CALL).POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Broken\"}")).build(),
            HttpResponse.BodyHandlers.ofString()).body()).getJsonObject("api_key").getString("secret");

        JsonArray items = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/providers"))
            .header("Authorization", "Bearer " + apiKey).timeout(CALL).build(),
            HttpResponse.BodyHandlers.ofString()).body()).getJsonArray("items");
        Map<String, JsonObject> byBackend = new HashMap<>();
        items.forEach(o -> byBackend.put(((JsonObject) o).getString("backend"), (JsonObject) o));
        assertThat(byBackend.get("runpod").getBoolean("configured")).isFalse();
        assertThat(byBackend.get("runpod").getString("status")).isEqualTo("unconfigured");
        assertThat(byBackend.get("runpod").getString("message")).startsWith("BESPOKE_RUNPOD_SSH_KEY ")
            .doesNotContain(key.toString());
        assertThat(byBackend.get("tensorlake").getBoolean("configured")).isFalse();
        assertThat(byBackend.get("tensorlake").getString("message")).contains("TENSORLAKE_API_URL")
            .doesNotContain("not a url");
        for (String[] b : new String[][] {{"modal", "MODAL_SERVER_URL"}, {"daytona", "DAYTONA_API_URL"},
            {"codecapsules", "CODECAPSULES_API_URL"}, {"e2b", "E2B_SANDBOX_URL"}}) {
          assertThat(byBackend.get(b[0]).getBoolean("configured")).as(b[0]).isFalse();
          assertThat(byBackend.get(b[0]).getString("message")).as(b[0]).isEqualTo(b[1] + " must be an http(s) URL");
        }
        assertThat(byBackend.get("docker").getBoolean("configured")).isFalse();
        assertThat(byBackend.get("docker").getString("message"))
            .startsWith("BESPOKE_DOCKER_IMAGES must list image name patterns").contains("my image");
        assertThat(byBackend.get("local").getBoolean("configured")).isTrue();

        HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/sandboxes"))
                .header("Authorization", "Bearer " + apiKey).header("Content-Type", "application/json").timeout(CALL)
                .POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"runpod\"}")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
        JsonObject detail = new JsonObject(refused.body()).getJsonObject("detail");
        assertThat(detail.getString("code")).isEqualTo("backend_not_installed");
        assertThat(detail.getString("message")).isEqualTo(byBackend.get("runpod").getString("message"));
        assertThat(runpod.count(io.vertx.core.http.HttpMethod.POST, "/pods")).as("no pod was asked of RunPod").isZero();

        HttpResponse<String> local = http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/sandboxes"))
                .header("Authorization", "Bearer " + apiKey).header("Content-Type", "application/json").timeout(CALL)
                .POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"local\"}")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(local.statusCode()).as(local.body()).isEqualTo(201);

        String log = Files.readString(dataDir.resolve("gateway.log"));
        List<String> lines = log.lines().filter(l -> l.contains("runpod is not available")).toList();
        assertThat(lines).hasSize(1);
        assertThat(log.lines().filter(l -> l.contains("tensorlake is not available"))).hasSize(1);
        assertThat(log.lines().filter(l -> l.contains("docker is not available"))).hasSize(1);
        assertThat(log).doesNotContain("\tat ", "Exception:");
      } finally {
        gateway.process.destroy();
        gateway.process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }
}
