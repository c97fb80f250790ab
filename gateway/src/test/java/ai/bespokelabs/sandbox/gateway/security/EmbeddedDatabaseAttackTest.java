package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.gateway.Gateway;
import ai.bespokelabs.sandbox.gateway.SecretStore;
import io.vertx.core.json.JsonObject;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sandbox code with network access (a bwrap sandbox with {@code allow_internet}, the default, shares the host's
 * network) tries the gateway's embedded PostgreSQL as its superuser without a password, as {@code psql -U
 * postgres} would, to read every organization and run host commands with {@code COPY ... TO PROGRAM}. The
 * server asks for a password on every connection, and has no Unix socket to try instead.
 */
@Tag("security")
class EmbeddedDatabaseAttackTest {
  @TempDir
  Path dataDir;

  private final HttpClient http = HttpClient.newHttpClient();

  private JsonObject send(String base, String path, String header, String value, JsonObject body) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).header(header, value)
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isBetween(200, 201);
    return new JsonObject(r.body());
  }

  static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void sandbox_code_cannot_log_in_to_the_embedded_database() throws Exception {
    int port = freePort();
    GatewayConfig config = ConfigLoader.fromMap(Map.of("PORT", String.valueOf(port),
        "BESPOKE_DATA_DIR", dataDir.toString(), "BESPOKE_HTTP_INSTANCES", "1"), "/nonexistent");
    String base = "http://127.0.0.1:" + port;
    try (Gateway gateway = Gateway.start(config, Clock.systemUTC())) {
      // the embedded server's port, as anyone on the host can see it (ss -ltn) or scan for it
      int pgPort = Integer.parseInt(Files.readAllLines(dataDir.resolve("postgres/postmaster.pid")).get(3).trim());
      // the server listens on 127.0.0.1 (and on ::1 where localhost has that address) but wants a password
      assertThatThrownBy(() -> DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + pgPort + "/postgres",
          "postgres", null).close()).isInstanceOf(SQLException.class).hasMessageContaining("password");
      assertThatThrownBy(() -> DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + pgPort + "/postgres",
          "postgres", "postgres").close()).isInstanceOf(SQLException.class)
          .hasMessageContaining("password authentication failed");
      for (String host : List.of("[::1]", "localhost")) {
        assertThatThrownBy(() -> DriverManager.getConnection("jdbc:postgresql://" + host + ":" + pgPort + "/postgres",
            "postgres", null).close()).as(host).isInstanceOf(SQLException.class);
      }
      assertThat(Path.of("/tmp/.s.PGSQL." + pgPort)).as("no trusted Unix socket in /tmp").doesNotExist();

      String admin = Files.readString(dataDir.resolve(SecretStore.ADMIN_TOKEN_FILE)).trim();
      String key = send(base, "/v1/organizations", "X-Control-Plane-Admin", admin, new JsonObject().put("name", "Tenant"))
          .getJsonObject("api_key").getString("secret");
      String id = send(base, "/v1/sandboxes", "Authorization", "Bearer " + key,
          new JsonObject().put("backend", "bwrap").put("allow_internet", true)).getString("id");
      JsonObject attack = send(base, "/v1/sandboxes/" + id + "/execute", "Authorization", "Bearer " + key,
          new JsonObject().put("command", "psql -w -h 127.0.0.1 -p " + pgPort + " -U postgres -d postgres -At"
              + " -c \"COPY (SELECT 1) TO PROGRAM 'id'\" -c 'SELECT count(*) FROM organizations'; echo exit=$?"));
      assertThat(attack.getString("stdout")).as(attack.encode()).doesNotContain("exit=0").contains("exit=2");
      // asked for a password; or, where the host also refuses sandbox uids' loopback traffic, not let through
      assertThat(attack.getString("stderr")).containsAnyOf("password", "Connection refused");
    }
  }
}
