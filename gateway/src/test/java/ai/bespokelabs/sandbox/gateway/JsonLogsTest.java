package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.http.HttpMethod;
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
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway as an operator runs it with {@code BESPOKE_LOG_FORMAT=json}: every line of its output is one JSON
 * object, requests and the adapter work they cause carry the same {@code request_id}, and no secret it was
 * given or handed out appears anywhere in the log of the run.
 */
class JsonLogsTest {
  static final String PEPPER = "json-logs-pepper-0123456789abcdef0123";
  static final String ADMIN = "json-logs-admin-0123456789abcdef";
  static final String METRICS = "json-logs-metrics-0123456789";
  static final String ENV_VALUE = "env-value-that-must-stay-private";

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  String base;

  HttpResponse<String> send(String method, String path, String token, JsonObject body, String... headers)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body.encode()));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void json_lines_name_the_request_across_the_bus_and_hold_no_secret(@TempDir Path dataDir) throws Exception {
    try (E2bSimulator sim = E2bSimulator.start()) {
      Map<String, String> env = new HashMap<>(sim.env());
      env.put("BESPOKE_LOG_FORMAT", "json");
      env.put("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl());
      env.put("BESPOKE_API_KEY_PEPPER", PEPPER);
      env.put("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", ADMIN);
      env.put("BESPOKE_METRICS_TOKEN", METRICS);
      env.put("BESPOKE_SHUTDOWN_GRACE_SECS", "2");
      int port = TestGateway.freePort();
      GatewayProcess gateway = GatewayProcess.start(dataDir, port, env);
      base = gateway.base;
      String key;
      String second;
      try {
        HttpResponse<String> org = send("POST", "/v1/organizations", null, new JsonObject().put("name", "Logged"),
            "X-Control-Plane-Admin", ADMIN);
        assertThat(org.statusCode()).as(org.body()).isEqualTo(201);
        key = new JsonObject(org.body()).getJsonObject("api_key").getString("secret");
        HttpResponse<String> issued = send("POST", "/v1/api-keys", key, new JsonObject().put("name", "second")
            .put("scopes", new io.vertx.core.json.JsonArray().add("sandboxes:read")));
        assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
        second = new JsonObject(issued.body()).getString("secret");
        assertThat(send("GET", "/v1/sandboxes", second, null).statusCode()).isEqualTo(200);
        assertThat(send("GET", "/v1/sandboxes", "bsk_live_wrong", null).statusCode()).isEqualTo(401);

        HttpResponse<String> created = send("POST", "/v1/sandboxes", key, new JsonObject().put("backend", "e2b")
            .put("env_vars", new JsonObject().put("PRIVATE", ENV_VALUE)));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String sandbox = new JsonObject(created.body()).getString("id");
        HttpResponse<String> ran = send("POST", "/v1/sandboxes/" + sandbox + "/execute", key,
            new JsonObject().put("command", "echo $PRIVATE"));
        assertThat(ran.statusCode()).as(ran.body()).isEqualTo(200);
        sim.faults().status(HttpMethod.POST, "/process.Process/Start", 429, Map.of("Retry-After", "3"), null, 1);
        HttpResponse<String> limited = send("POST", "/v1/sandboxes/" + sandbox + "/execute", key,
            new JsonObject().put("command", "true"), "X-Request-ID", "req-limited-1");
        assertThat(limited.statusCode()).as(limited.body()).isEqualTo(502);
        assertThat(limited.headers().firstValue("X-Request-ID")).hasValue("req-limited-1");
        assertThat(send("GET", "/metrics", METRICS, null).statusCode()).isEqualTo(200);
        assertThat(send("DELETE", "/v1/sandboxes/" + sandbox, key, null).statusCode()).isEqualTo(200);
      } finally {
        gateway.process.destroy();
        assertThat(gateway.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      }

      List<String> lines = Files.readAllLines(dataDir.resolve("gateway.log")).stream()
          .filter(l -> !l.isBlank() && !l.startsWith("WARNING:")).toList(); // the JVM's own warnings
      assertThat(lines).isNotEmpty();
      List<JsonObject> entries = lines.stream().map(JsonObject::new).toList();
      assertThat(entries).allSatisfy(e -> assertThat(e.fieldNames()).contains("ts", "level", "logger", "message"));
      JsonObject access = entries.stream().filter(e -> "ai.bespokelabs.sandbox.access".equals(e.getString("logger"))
          && "req-limited-1".equals(e.getString("request_id"))).findFirst().orElseThrow();
      assertThat(access.getString("message")).startsWith("POST /v1/sandboxes/{sandbox_id}/execute 502");
      assertThat(access.getString("organization_id")).startsWith("org_");
      assertThat(access.getString("sandbox_id")).startsWith("sbx_");
      assertThat(entries).as("the adapter's line about the provider failure names the request that caused it")
          .anySatisfy(e -> {
            assertThat(e.getString("message")).startsWith("e2b execute failed");
            assertThat(e.getString("request_id")).isEqualTo("req-limited-1");
            assertThat(e.getString("sandbox_id")).isEqualTo(access.getString("sandbox_id"));
          });

      String log = String.join("\n", lines);
      for (String secret : List.of(PEPPER, ADMIN, METRICS, ENV_VALUE, key, second, sim.env().get("E2B_API_KEY"))) {
        assertThat(log).as("a secret in the log").doesNotContain(secret);
      }
    }
  }
}
