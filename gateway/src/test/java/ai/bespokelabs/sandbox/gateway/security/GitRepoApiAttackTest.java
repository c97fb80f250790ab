package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.workspace.DumbGitServer;
import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.gateway.Gateway;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code git_repo} with {@code user:token@} was stored and returned by list and detail to any reader, and a
 * {@code git_repo} on 127.0.0.1 made the gateway fetch from a loopback service. Both are refused with 422
 * before anything is stored; the operator can allow private destinations.
 */
@Tag("security")
class GitRepoApiAttackTest {
  static final String ADMIN = "git-attack-admin-token-0123456789abcdef";
  static final String TOKEN = "ghp_AttackerVisibleToken0123456789";

  @TempDir
  Path tmp;

  private final HttpClient http = HttpClient.newHttpClient();
  private DumbGitServer server;
  private int gitPort;
  private String base;
  private String databaseUrl;

  @BeforeEach
  void serveARepository() throws Exception {
    server = new DumbGitServer(tmp);
    gitPort = server.port();
  }

  @AfterEach
  void stopServing() {
    server.close();
  }

  private Gateway start(boolean allowPrivate) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    base = "http://127.0.0.1:" + port;
    databaseUrl = TestDatabase.newDatabaseUrl();
    return Gateway.start(ConfigLoader.fromMap(Map.of("PORT", String.valueOf(port),
        "BESPOKE_DATA_DIR", tmp.resolve("data").toString(), "BESPOKE_DATABASE_URL", databaseUrl,
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", ADMIN, "BESPOKE_API_KEY_PEPPER", "git-attack-pepper-0123456789abcdef",
        "BESPOKE_HTTP_INSTANCES", "1", "BESPOKE_GIT_ALLOW_PRIVATE", String.valueOf(allowPrivate)), "/nonexistent"),
        Clock.systemUTC());
  }

  private HttpResponse<String> send(String method, String path, String key, JsonObject body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json");
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(body.encode()));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private String tenant() throws Exception {
    HttpResponse<String> org = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/organizations"))
        .header("X-Control-Plane-Admin", ADMIN).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Tenant\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(org.statusCode()).as(org.body()).isEqualTo(201);
    return new JsonObject(org.body()).getJsonObject("api_key").getString("secret");
  }

  /** Every row of every table, as text. */
  private String everyRow() throws Exception {
    StringBuilder out = new StringBuilder();
    try (Connection c = DriverManager.getConnection("jdbc:" + databaseUrl.replace("postgres@", ""), "postgres", null);
        Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        try (ResultSet rs = st.executeQuery("SELECT row_to_json(x)::text FROM \"" + t + "\" x")) {
          while (rs.next()) {
            out.append(rs.getString(1)).append('\n');
          }
        }
      }
    }
    return out.toString();
  }

  @Test
  void credentials_in_git_urls_are_refused_and_never_stored_or_shown() throws Exception {
    try (Gateway gw = start(false)) {
      String key = tenant();
      for (JsonObject body : List.of(
          new JsonObject().put("backend", "local").put("git_repo", "https://alice:" + TOKEN + "@github.com/o/r.git"),
          new JsonObject().put("backend", "local").put("git_repo", "https://" + TOKEN + "@github.com/o/r.git"),
          new JsonObject().put("backend", "local").put("workspace", new JsonArray().add(new JsonObject()
              .put("type", "git").put("repo", "https://x-access-token:" + TOKEN + "@github.com/o/r.git"))))) {
        HttpResponse<String> r = send("POST", "/v1/sandboxes", key, body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(422);
        assertThat(r.body()).contains("credentials").doesNotContain(TOKEN);
      }
      assertThat(send("GET", "/v1/sandboxes", key, null).body()).doesNotContain(TOKEN);
      assertThat(everyRow()).doesNotContain(TOKEN);
    }
  }

  @Test
  void loopback_metadata_and_private_destinations_are_refused_unless_the_operator_allows_them() throws Exception {
    try (Gateway gw = start(false)) {
      String key = tenant();
      for (String url : List.of("http://127.0.0.1:" + gitPort + "/project.git",
          "http://localhost:" + gitPort + "/project.git", "http://169.254.169.254/latest/meta-data/",
          "http://10.0.0.1/project.git", "http://[::1]:" + gitPort + "/project.git")) {
        HttpResponse<String> r = send("POST", "/v1/sandboxes", key,
            new JsonObject().put("backend", "local").put("git_repo", url));
        assertThat(r.statusCode()).as(url + ": " + r.body()).isEqualTo(422);
        assertThat(r.body()).contains("BESPOKE_GIT_ALLOW_PRIVATE");
      }
      assertThat(server.requests()).as("the loopback service was never contacted").isZero();
    }
    try (Gateway gw = start(true)) {
      String key = tenant();
      HttpResponse<String> r = send("POST", "/v1/sandboxes", key, new JsonObject().put("backend", "local")
          .put("git_repo", "http://localhost:" + gitPort + "/project.git"));
      assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
      String id = new JsonObject(r.body()).getString("id");
      HttpResponse<String> cat = send("POST", "/v1/sandboxes/" + id + "/execute", key,
          new JsonObject().put("command", "cat project/README"));
      assertThat(new JsonObject(cat.body()).getString("stdout")).isEqualTo("internal\n");
      send("DELETE", "/v1/sandboxes/" + id, key, null);
    }
  }
}
