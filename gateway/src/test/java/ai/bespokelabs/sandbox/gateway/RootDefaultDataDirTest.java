package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A root gateway with its default data directory ({@code ~/.bespoke-sandbox} under a home only root may enter):
 * sandbox code uses {@code SANDBOX_ROOT} by its path, on {@code local} and {@code bwrap}, and still cannot read the
 * data directory's secrets.
 */
class RootDefaultDataDirTest {
  static final Duration CALL = Duration.ofSeconds(30);
  static final boolean ROOT = "root".equals(System.getProperty("user.name"));

  @Test
  void sandbox_code_uses_sandbox_root_by_its_path_under_a_home_of_mode_0700() throws Exception {
    assumeTrue(ROOT, "the gateway runs as root: sandbox programs have uids of their own");
    Path home = Files.createTempDirectory("root-home-");
    Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx------"));
    Path logs = Files.createTempDirectory("root-home-log-");
    GatewayProcess gateway = GatewayProcess.start(logs, TestGateway.freePort(), Map.of("HOME", home.toString(),
        "BESPOKE_DATA_DIR", "", "BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_HTTP_INSTANCES", "1"));
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CALL).build();
    try {
      Path data = home.resolve(".bespoke-sandbox");
      assertThat(data.resolve("api-key-pepper")).as("the default data directory is in use").exists();
      String key = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/organizations"))
              .header("X-Control-Plane-Admin", TestGateway.ADMIN).header("Content-Type", "application/json")
              .timeout(CALL).POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Root\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).body()).getJsonObject("api_key").getString("secret");
      for (String backend : new String[] {"local", "bwrap"}) {
        String id = new JsonObject(post(http, gateway, key, "/v1/sandboxes",
            new JsonObject().put("backend", backend)).body()).getString("id");
        String script = "cd \"$SANDBOX_ROOT\" && echo written > \"$SANDBOX_ROOT/f.txt\" && cat f.txt && id -u"
            + " && (cat " + data.resolve("api-key-pepper") + " >/dev/null 2>&1 && echo SECRET-READ || echo sealed)";
        HttpResponse<String> ran = post(http, gateway, key, "/v1/sandboxes/" + id + "/execute",
            new JsonObject().put("command", "bash").put("args", new io.vertx.core.json.JsonArray().add("-c")
                .add(script)));
        assertThat(ran.statusCode()).as(ran.body()).isEqualTo(200);
        JsonObject result = new JsonObject(ran.body());
        assertThat(result.getInteger("exit_code")).as(backend + ": " + result.encode()).isZero();
        String[] lines = result.getString("stdout").split("\n");
        assertThat(lines[0]).as(backend).isEqualTo("written");
        assertThat(Integer.parseInt(lines[1])).as(backend + " runs as a uid of its own").isNotZero();
        assertThat(lines[2]).as(backend).isEqualTo("sealed");
      }
      assertThat(Files.readString(logs.resolve("gateway.log"))).doesNotContain("cannot traverse " + home);
    } finally {
      gateway.process.destroy();
      gateway.process.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static HttpResponse<String> post(HttpClient http, GatewayProcess gateway, String key, String path,
      JsonObject body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(gateway.base + path)).header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json").timeout(CALL)
        .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
  }
}
