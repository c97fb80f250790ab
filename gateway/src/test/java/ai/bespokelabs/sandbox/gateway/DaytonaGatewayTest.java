package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.daytona.DaytonaSimulator;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Daytona backend through the gateway's REST, SSE and reconciliation, against the Daytona simulator; at
 * the end, the Daytona key appears in no response body, no log event (the gateway's own at debug level
 * included) and no database row.
 */
class DaytonaGatewayTest {
  static final String DAYTONA_KEY = "dtn_gateway_test_key_secret_42";
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  static DaytonaSimulator sim;
  static TestGateway gw;
  static String key;
  static final long UPLOAD_LIMIT = 1 << 20;
  static SecretWatch watch;

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = DaytonaSimulator.start(DAYTONA_KEY).startDelayMs(50);
    gw = new TestGateway(Map.of("DAYTONA_API_KEY", DAYTONA_KEY, "DAYTONA_API_URL", sim.url(),
        "BESPOKE_SUPERVISION_INTERVAL_SECS", "1", "BESPOKE_MAX_UPLOAD_BYTES", String.valueOf(UPLOAD_LIMIT)));
    key = gw.bootstrap("Daytona users");
  }

  @AfterAll
  static void stop() {
    try {
      watch.assertNeverLeaked(gw, "daytona", DAYTONA_KEY);
    } finally {
      watch.stop();
      gw.close();
      sim.close();
    }
  }

  @AfterEach
  void everyRequestConformed() {
    assertThat(sim.violations()).isEmpty();
  }

  static Resp seen(Resp r) {
    return watch.seen(r);
  }

  @Test
  void create_exec_stream_with_stdin_and_destroy() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona").put("cpu", 1)
        .put("memory_mb", 1024).put("env_vars", new JsonObject().put("WHO", "daytona"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = created.json().getString("provider_resource_id");
    assertThat(created.json().getString("status")).isEqualTo("running");
    assertThat(sim.sandbox(resource).getString("state")).isEqualTo("started");
    assertThat(sim.sandbox(resource).getJsonObject("labels").getString("bespokelabs.ai/sandbox-id")).isEqualTo(sbx);

    Resp exec = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("command", "echo hello $WHO; echo oops >&2; exit 2")));
    assertThat(exec.status()).as(exec.body()).isEqualTo(200);
    assertThat(exec.json().getString("stdout")).isEqualTo("hello daytona\n");
    assertThat(exec.json().getString("stderr")).isEqualTo("oops\n");
    assertThat(exec.json().getInteger("exit_code")).isEqualTo(2);

    Resp code = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("code", "print(6 * 7)").put("language", "python")));
    assertThat(code.json().getString("stdout")).isEqualTo("42\n");

    Resp started = seen(gw.post("/v1/sandboxes/" + sbx + "/executions", key,
        new JsonObject().put("command", "cat; echo closed >&2").put("stdin", true)));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String exe = started.json().getString("id");
    String execution = "/v1/sandboxes/" + sbx + "/executions/" + exe;
    assertThat(seen(gw.send("POST", execution + "/stdin", key, "héllo\n")).status()).isBetween(200, 204);
    assertThat(seen(gw.send("POST", execution + "/stdin?eof=true", key, "bye\n")).status()).isBetween(200, 204);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    JsonObject exit = null;
    try (SseClient sse = SseClient.open(gw.base + execution + "/stream?after=0", key, "GET", null)) {
      assertThat(sse.status).isEqualTo(200);
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          (e.name().equals("stdout") ? out : err).writeBytes(e.bytes());
        } else if (e.name().equals("exit")) {
          exit = e.data();
        }
      }
    }
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("héllo\nbye\n");
    assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("closed\n");
    assertThat(exit.getInteger("exit_code")).isZero();

    Resp destroyed = seen(gw.delete("/v1/sandboxes/" + sbx, key));
    assertThat(destroyed.status()).as(destroyed.body()).isBetween(200, 204);
    assertThat(sim.sandbox(resource)).as("deleted at Daytona").isNull();
    assertThat(seen(gw.get("/v1/sandboxes/" + sbx, key)).json().getString("status")).isEqualTo("destroyed");
  }

  static HttpResponse<String> files(String method, String sbx, String endpoint, String path, String extra,
      HttpRequest.BodyPublisher body) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + sbx + endpoint
            + "?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8) + extra))
        .header("Authorization", "Bearer " + key).timeout(Duration.ofSeconds(60)).method(method, body).build(),
        HttpResponse.BodyHandlers.ofString());
    watch.seen(r.body());
    return r;
  }

  @Test
  void files_round_trip_through_the_files_api() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    java.nio.file.Path home = sim.dir(created.json().getString("provider_resource_id"));

    HttpResponse<String> up = files("PUT", sbx, "/files/content", "tools/hello.sh", "&executable=true",
        HttpRequest.BodyPublishers.ofString("#!/bin/sh\necho hello from $1\n"));
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    assertThat(new JsonObject(up.body()).getString("mode")).isEqualTo("0755");
    Resp ran = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("command", "./tools/hello.sh").put("args", new io.vertx.core.json.JsonArray().add("daytona"))));
    assertThat(ran.status()).as(ran.body()).isEqualTo(200);
    assertThat(ran.json().getString("stdout")).isEqualTo("hello from daytona\n");

    byte[] blob = new byte[700_000];
    new java.util.Random(3).nextBytes(blob);
    HttpResponse<String> upBlob = files("PUT", sbx, "/files/content", "tools/blob.bin", "",
        HttpRequest.BodyPublishers.ofByteArray(blob));
    assertThat(upBlob.statusCode()).as(upBlob.body()).isEqualTo(201);

    HttpResponse<String> listed = files("GET", sbx, "/files", "tools", "", HttpRequest.BodyPublishers.noBody());
    assertThat(listed.statusCode()).as(listed.body()).isEqualTo(200);
    io.vertx.core.json.JsonArray entries = new JsonObject(listed.body()).getJsonArray("entries");
    assertThat(entries.stream().map(e -> ((JsonObject) e).getString("name"))).containsExactly("blob.bin", "hello.sh");
    assertThat(entries.getJsonObject(0).getLong("size")).isEqualTo(blob.length);
    assertThat(entries.getJsonObject(0).getString("mode")).isEqualTo("0644");
    assertThat(entries.getJsonObject(1).getString("mode")).isEqualTo("0755");

    HttpResponse<byte[]> down = HTTP.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + sbx
            + "/files/content?path=tools/blob.bin")).header("Authorization", "Bearer " + key).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.headers().firstValueAsLong("Content-Length")).hasValue(blob.length);
    assertThat(down.body()).isEqualTo(blob);

    // directories move as tar.gz, built on the single-file operations
    HttpResponse<byte[]> tree = HTTP.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + sbx
            + "/files/archive?path=tools")).header("Authorization", "Bearer " + key).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(tree.statusCode()).isEqualTo(200);
    HttpResponse<String> copied = files("PUT", sbx, "/files/archive", "copy", "",
        HttpRequest.BodyPublishers.ofByteArray(tree.body()));
    assertThat(copied.statusCode()).as(copied.body()).isEqualTo(201);
    assertThat(java.nio.file.Files.readAllBytes(home.resolve("copy/blob.bin"))).isEqualTo(blob);
    assertThat(java.nio.file.Files.readString(home.resolve("copy/hello.sh"))).isEqualTo("#!/bin/sh\necho hello from $1\n");
    assertThat(files("PUT", sbx, "/files/archive", "broken", "", HttpRequest.BodyPublishers.ofByteArray(
        java.util.Arrays.copyOf(tree.body(), tree.body().length / 2))).statusCode()).isEqualTo(422);
    assertThat(home.resolve("broken")).doesNotExist();

    assertThat(files("DELETE", sbx, "/files", "tools", "", HttpRequest.BodyPublishers.noBody()).statusCode())
        .as("a non-empty directory needs recursive").isEqualTo(409);
    assertThat(files("DELETE", sbx, "/files", "tools/blob.bin", "", HttpRequest.BodyPublishers.noBody())
        .statusCode()).isEqualTo(204);
    assertThat(files("GET", sbx, "/files/content", "tools/blob.bin", "", HttpRequest.BodyPublishers.noBody())
        .statusCode()).isEqualTo(404);
    assertThat(files("GET", sbx, "/files/content", "tools", "", HttpRequest.BodyPublishers.noBody()).statusCode())
        .isEqualTo(422);
    assertThat(files("DELETE", sbx, "/files", "tools", "&recursive=true", HttpRequest.BodyPublishers.noBody())
        .statusCode()).isEqualTo(204);
    assertThat(home.resolve("tools")).doesNotExist();
    assertThat(files("GET", sbx, "/files", "tools", "", HttpRequest.BodyPublishers.noBody()).statusCode())
        .isEqualTo(404);

    // over the limit, streamed without a Content-Length: 413, and nothing reached the sandbox
    long uploads = sim.count(HttpMethod.POST, ".*/files/upload");
    byte[] tooBig = new byte[(int) UPLOAD_LIMIT + (256 << 10)];
    HttpResponse<String> refused = files("PUT", sbx, "/files/content", "big/too-big.bin", "",
        HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(tooBig)));
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(413);
    assertThat(sim.count(HttpMethod.POST, ".*/files/upload")).isEqualTo(uploads);
    assertThat(home.resolve("big")).doesNotExist();
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isIn(200, 202, 204);
  }

  @Test
  void reconciliation_observes_ours_and_removes_a_sandbox_created_behind_the_gateways_back() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")));
    String resource = created.json().getString("provider_resource_id");
    String orphan = sim.createDirectly(new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", "sbx_" + "cd".repeat(16)));
    String foreign = sim.createDirectly(new JsonObject().put("owner", "someone else"));
    Thread.sleep(1_200);
    Resp r = seen(gw.post("/v1/reconciliation/daytona", key, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("updated")).isGreaterThanOrEqualTo(1);
    assertThat(r.json().getInteger("missing")).isZero();
    Waits.upTo(5).untilAsserted(() -> assertThat(sim.sandbox(orphan)).as("the supervisor deleted the orphan").isNull());
    assertThat(sim.count(HttpMethod.DELETE, "/api/sandbox/" + orphan)).isEqualTo(1);
    assertThat(sim.sandbox(foreign)).as("what is not ours is left alone").isNotNull();
    assertThat(sim.sandbox(resource)).as("a live sandbox is never an orphan").isNotNull();
    seen(gw.delete("/v1/sandboxes/" + created.json().getString("id"), key));
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.status(401));
    Resp auth = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")));
    assertThat(auth.status()).isEqualTo(502);
    JsonObject detail = auth.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("authentication");
    assertThat(detail.getString("backend")).isEqualTo("daytona");
    assertThat(detail.getString("op")).isEqualTo("create");
    assertThat(detail.getString("message")).isEqualTo("Provider authentication failed.");

    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.rateLimited(9));
    JsonObject limited = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona"))).json()
        .getJsonObject("detail");
    assertThat(limited.getBoolean("retryable")).isTrue();
    assertThat(limited.getJsonObject("context").getInteger("retry_after_secs")).isEqualTo(9);

    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.loseResponse());
    JsonObject lost = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona"))).json()
        .getJsonObject("detail");
    assertThat(lost.getString("outcome")).isEqualTo("unknown");
    assertThat(lost.getJsonObject("context").getString("cleanup_status")).isEqualTo("deleted");

    Resp health = seen(gw.post("/v1/providers/daytona/health-check", key, null));
    assertThat(health.status()).as(health.body()).isEqualTo(200);
  }

  @Test
  void metrics_come_from_daytonas_telemetry_and_adopt_restarts_a_stopped_sandbox() throws Exception {
    sim.telemetryIntervalMs(200);
    try {
      Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")
          .put("memory_mb", 1024).put("disk_mb", 3072)));
      assertThat(created.status()).as(created.body()).isEqualTo(201);
      String sbx = created.json().getString("id");
      String resource = created.json().getString("provider_resource_id");
      assertThat(seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command",
          "head -c 2097152 /dev/zero > blob.bin"))).json().getInteger("exit_code")).isZero();
      Resp m = Waits.upTo(15).until(() -> seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key)),
          r -> r.status() != 200 || r.json().getDouble("disk_used_mb") != null
              && r.json().getDouble("disk_used_mb") >= 2.0);
      assertThat(m.status()).as(m.body()).isEqualTo(200);
      assertThat(m.json().getDouble("disk_used_mb")).isGreaterThanOrEqualTo(2.0);
      assertThat(m.json().getDouble("memory_limit_mb")).isEqualTo(1024.0);
      assertThat(m.json().getDouble("disk_limit_mb")).isEqualTo(3072.0);
      assertThat(m.json().getDouble("cpu_percent")).isNotNull().isGreaterThanOrEqualTo(0.0);
      assertThat(m.json().getDouble("memory_used_mb")).isNotNull();
      assertThat(m.json().getValue("processes")).isNull();

      JsonObject state = seen(gw.get("/v1/sandboxes/" + sbx + "/session-state", key)).json();
      assertThat(state.getString("provider_resource_id")).isEqualTo(resource);
      sim.stopDirectly(resource);
      Resp stopped = seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key));
      assertThat(stopped.status()).isEqualTo(409);
      assertThat(stopped.json().getString("detail")).isEqualTo("sandbox is not running at Daytona");

      Resp adopted = seen(gw.post("/v1/sandboxes/adopt", key, state));
      assertThat(adopted.status()).as(adopted.body()).isEqualTo(200);
      assertThat(adopted.json().getString("status")).isEqualTo("running");
      assertThat(sim.sandbox(resource).getString("state")).as("started again at Daytona").isEqualTo("started");
      assertThat(seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command",
          "cat blob.bin | wc -c"))).json().getString("stdout").trim()).isEqualTo("2097152");

      // the supervisor (every second here) would otherwise find the sandbox missing first and fail it (then
      // adopt answers 409): its next listings fail, so this adopt is what meets the vanished resource
      for (int i = 0; i < 10; i++) {
        sim.inject(HttpMethod.GET, "/sandbox", DaytonaSimulator.Fault.status(503));
      }
      sim.vanish(resource);
      Resp gone = seen(gw.post("/v1/sandboxes/adopt", key, state));
      sim.clearFaults();
      assertThat(gone.status()).isEqualTo(502);
      assertThat(gone.json().getJsonObject("detail")).isEqualTo(new JsonObject()
          .put("message", "Provider resource was not found.").put("code", "not_found").put("backend", "daytona")
          .put("op", "adopt").put("retryable", false).put("outcome", "failed")
          .put("context", new JsonObject().put("provider_status", 404)));
      assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
    } finally {
      sim.clearFaults();
      sim.telemetryIntervalMs(1_000);
    }
  }

  static java.time.Instant expiresAt(JsonObject sandbox) {
    return java.time.OffsetDateTime.parse(sandbox.getString("expires_at")).toInstant();
  }

  @Test
  void set_timeout_moves_the_auto_stop_interval_and_a_provider_failure_keeps_the_stored_deadline() {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")
        .put("timeout_secs", 300)));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = created.json().getString("provider_resource_id");
    assertThat(sim.sandbox(resource).getInteger("autoStopInterval")).isEqualTo(5);
    assertThat(sim.sandbox(resource).getInteger("autoDeleteInterval")).isZero();

    Resp longer = seen(gw.post("/v1/sandboxes/" + sbx + "/timeout", key, new JsonObject().put("timeout_secs", 1800)));
    assertThat(longer.status()).as(longer.body()).isEqualTo(200);
    assertThat(sim.sandbox(resource).getInteger("autoStopInterval")).isEqualTo(30);
    Resp shorter = seen(gw.post("/v1/sandboxes/" + sbx + "/timeout", key, new JsonObject().put("timeout_secs", 61)));
    assertThat(shorter.status()).as(shorter.body()).isEqualTo(200);
    assertThat(sim.sandbox(resource).getInteger("autoStopInterval")).as("whole minutes, rounded up").isEqualTo(2);
    assertThat(sim.count(HttpMethod.POST, "/api/sandbox/" + resource + "/autodelete/.*"))
        .as("already deleted on stop: auto-delete is left alone").isZero();

    sim.inject(HttpMethod.POST, "/api/sandbox/" + resource + "/autostop/.*", DaytonaSimulator.Fault.status(500));
    java.time.Instant before = java.time.Instant.now();
    Resp failed = seen(gw.post("/v1/sandboxes/" + sbx + "/timeout", key, new JsonObject().put("timeout_secs", 900)));
    java.time.Instant after = java.time.Instant.now();
    assertThat(failed.status()).as(failed.body()).isEqualTo(502);
    JsonObject detail = failed.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("command_failed");
    assertThat(detail.getString("backend")).isEqualTo("daytona");
    assertThat(detail.getString("op")).isEqualTo("timeout");
    assertThat(detail.getJsonObject("context").getInteger("provider_status")).isEqualTo(500);
    assertThat(sim.sandbox(resource).getInteger("autoStopInterval")).as("Daytona's interval did not move")
        .isEqualTo(2);
    JsonObject stored = seen(gw.get("/v1/sandboxes/" + sbx, key)).json();
    assertThat(expiresAt(stored)).as("the gateway's deadline was stored all the same")
        .isBetween(before.plusSeconds(899), after.plusSeconds(901));

    // created without a timeout (Daytona's defaults): a deadline now stops it when idle and deletes it
    Resp plain = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "daytona")));
    String plainResource = plain.json().getString("provider_resource_id");
    assertThat(sim.sandbox(plainResource).getInteger("autoDeleteInterval")).isEqualTo(-1);
    Resp set = seen(gw.post("/v1/sandboxes/" + plain.json().getString("id") + "/timeout", key,
        new JsonObject().put("timeout_secs", 30)));
    assertThat(set.status()).as(set.body()).isEqualTo(200);
    assertThat(sim.sandbox(plainResource).getInteger("autoStopInterval")).as("a minute at least")
        .isEqualTo(1);
    assertThat(sim.sandbox(plainResource).getInteger("autoDeleteInterval")).isZero();

    seen(gw.delete("/v1/sandboxes/" + sbx, key));
    seen(gw.delete("/v1/sandboxes/" + plain.json().getString("id"), key));
  }
}
