package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.gateway.Gateway;
import io.vertx.core.json.JsonObject;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code {"backend":"bwrap","workdir":"/any/host/dir"}} made the files API (running as root) serve the data
 * directory and other tenants' files. A workdir outside the operator's allowed roots, or in the data directory,
 * is refused with 422 before anything is created; one inside an allowed root works.
 */
@Tag("security")
class WorkdirApiAttackTest {
  static final String ADMIN = "workdir-attack-admin-token-0123456789";

  @TempDir
  Path tmp;

  private final HttpClient http = HttpClient.newHttpClient();
  private String base;

  private HttpResponse<String> send(String method, String path, String auth, JsonObject body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
    if (auth != null) {
      b.header(auth.startsWith("bsk_") ? "Authorization" : "X-Control-Plane-Admin",
          auth.startsWith("bsk_") ? "Bearer " + auth : auth);
    }
    b.header("Content-Type", "application/json").method(method,
        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private Gateway start(Path dataDir, String roots) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    base = "http://127.0.0.1:" + port;
    Map<String, String> env = new java.util.HashMap<>(Map.of("PORT", String.valueOf(port),
        "BESPOKE_DATA_DIR", dataDir.toString(), "BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl(),
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", ADMIN, "BESPOKE_API_KEY_PEPPER", "workdir-attack-pepper-0123456789abcdef",
        "BESPOKE_HTTP_INSTANCES", "1"));
    if (roots != null) {
      env.put("BESPOKE_WORKDIR_ROOTS", roots);
    }
    return Gateway.start(ConfigLoader.fromMap(env, "/nonexistent"), Clock.systemUTC());
  }

  private String tenant() throws Exception {
    HttpResponse<String> org = send("POST", "/v1/organizations", ADMIN, new JsonObject().put("name", "Tenant"));
    assertThat(org.statusCode()).as(org.body()).isEqualTo(201);
    return new JsonObject(org.body()).getJsonObject("api_key").getString("secret");
  }

  private void refused(String key, String backend, String workdir, String message) throws Exception {
    HttpResponse<String> r = send("POST", "/v1/sandboxes", key,
        new JsonObject().put("backend", backend).put("workdir", workdir));
    assertThat(r.statusCode()).as(backend + " " + workdir + ": " + r.body()).isEqualTo(422);
    assertThat(new JsonObject(r.body()).encode()).contains(message);
  }

  @Test
  void without_allowed_roots_every_workdir_is_refused() throws Exception {
    Path dataDir = tmp.resolve("data");
    try (Gateway gw = start(dataDir, null)) {
      String key = tenant();
      for (String backend : List.of("local", "bwrap")) {
        for (String workdir : List.of("/", dataDir.toString(), tmp.toString())) {
          refused(key, backend, workdir, "BESPOKE_WORKDIR_ROOTS");
        }
      }
      HttpResponse<String> list = send("GET", "/v1/sandboxes", key, null);
      assertThat(new io.vertx.core.json.JsonArray(list.body()).stream().map(JsonObject.class::cast))
          .as("every refused create ended failed, without a directory").allSatisfy(s -> {
            assertThat(s.getString("status")).isEqualTo("failed");
            assertThat(s.getString("provider_resource_id")).isNull();
          });
    }
  }

  @Test
  void only_directories_inside_an_allowed_root_and_outside_the_data_directory_are_accepted() throws Exception {
    Path dataDir = tmp.resolve("data");
    Path project = Files.createDirectories(tmp.resolve("projects/one"));
    Files.writeString(project.resolve("hello.txt"), "from the host\n");
    // an operator allowing the parent of the data directory still never exposes the data directory
    try (Gateway gw = start(dataDir, tmp.resolve("projects") + "," + tmp)) {
      String key = tenant();
      HttpResponse<String> other = send("POST", "/v1/sandboxes", key, new JsonObject().put("backend", "bwrap"));
      assertThat(other.statusCode()).as(other.body()).isEqualTo(201);
      String otherDir = dataDir.resolve("bwrap-sandboxes").resolve(new JsonObject(other.body()).getString("id"))
          .toString();
      for (String workdir : List.of("/", "/etc", dataDir.toString(), dataDir.resolve("bwrap-sandboxes").toString(),
          otherDir, tmp.toString())) {
        refused(key, "bwrap", workdir, "workdir");
      }
      HttpResponse<String> ok = send("POST", "/v1/sandboxes", key,
          new JsonObject().put("backend", "bwrap").put("workdir", project.toString()));
      assertThat(ok.statusCode()).as(ok.body()).isEqualTo(201);
      String id = new JsonObject(ok.body()).getString("id");
      HttpResponse<String> exec = send("POST", "/v1/sandboxes/" + id + "/execute", key,
          new JsonObject().put("command", "cat hello.txt"));
      assertThat(new JsonObject(exec.body()).getString("stdout")).as(exec.body()).isEqualTo("from the host\n");
      assertThat(send("DELETE", "/v1/sandboxes/" + id, key, null).statusCode()).isEqualTo(200);
      assertThat(project.resolve("hello.txt")).as("a workdir is never deleted").exists();
    }
  }
}
