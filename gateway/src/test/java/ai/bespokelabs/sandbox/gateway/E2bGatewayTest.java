package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The e2b backend through the gateway's API, against the E2B simulator. */
class E2bGatewayTest {
  static E2bSimulator sim;
  static TestGateway gw;
  static String key;
  static final ListAppender<ILoggingEvent> LOGS = new ListAppender<>();
  static final List<String> BODIES = new ArrayList<>();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  static final long UPLOAD_LIMIT = 4L << 20;

  @BeforeAll
  static void start() {
    LOGS.start();
    ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(LOGS);
    sim = E2bSimulator.start();
    Map<String, String> env = new HashMap<>(sim.env());
    env.put("BESPOKE_SUPERVISION_INTERVAL_SECS", "1");
    env.put("BESPOKE_MAX_UPLOAD_BYTES", String.valueOf(UPLOAD_LIMIT));
    gw = new TestGateway(env);
    key = gw.bootstrap("E2B users");
  }

  @AfterEach
  void conforming() {
    sim.faults().clear();
    assertThat(sim.violations()).as("requests E2B would refuse").isEmpty();
  }

  @AfterAll
  static void stop() {
    try {
      String db = DatabaseDump.of(gw);
      assertThat(db).doesNotContain(E2bSimulator.API_KEY);
      assertThat(BODIES).noneMatch(b -> b.contains(E2bSimulator.API_KEY));
      assertThat(LOGS.list).noneMatch(e -> e.getFormattedMessage().contains(E2bSimulator.API_KEY));
    } finally {
      ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(LOGS);
      gw.close();
      sim.close();
    }
  }

  static Resp keep(Resp r) {
    BODIES.add(r.body());
    return r;
  }

  static JsonObject createE2b(JsonObject extra) {
    Resp r = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "e2b").mergeIn(extra)));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    return r.json();
  }

  static Resp exec(String id, JsonObject body) {
    return keep(gw.post("/v1/sandboxes/" + id + "/execute", key, body));
  }

  @Test
  void full_lifecycle_create_execute_stream_with_stdin_and_destroy() throws Exception {
    JsonObject sbx = createE2b(new JsonObject().put("timeout_secs", 300)
        .put("env_vars", new JsonObject().put("GREETING", "hello from e2b")));
    String id = sbx.getString("id");
    String rid = sbx.getString("provider_resource_id");
    assertThat(sbx.getString("status")).isEqualTo("running");
    E2bSimulator.Sandbox remote = sim.sandboxes().get(rid);
    assertThat(remote).as("the E2B sandbox exists").isNotNull();
    assertThat(remote.metadata).containsEntry("bespoke_sandbox_id", id).containsKey("bespoke_create_token");

    Resp py = exec(id, new JsonObject().put("code", "print(6 * 7)"));
    assertThat(py.status()).isEqualTo(200);
    assertThat(py.json().getString("stdout")).isEqualTo("42\n");
    assertThat(py.json().getInteger("exit_code")).isZero();
    Resp sh = exec(id, new JsonObject().put("command", "echo \"$GREETING\"; exit 4"));
    assertThat(sh.json().getString("stdout")).isEqualTo("hello from e2b\n");
    assertThat(sh.json().getInteger("exit_code")).isEqualTo(4);
    Resp slow = exec(id, new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 1));
    assertThat(slow.json().getInteger("exit_code")).isEqualTo(124);
    assertThat(slow.json().getBoolean("timed_out")).isTrue();

    try (SseClient sse = SseClient.open(gw.base + "/v1/sandboxes/" + id + "/execute", key, "POST",
        new JsonObject().put("command", "echo one; echo two >&2").encode())) {
      assertThat(sse.status).isEqualTo(200);
      List<String> seen = new ArrayList<>();
      Event e;
      while ((e = sse.next()) != null) {
        seen.add(e.isOutput() ? e.name() + ":" + new String(e.bytes(), StandardCharsets.UTF_8)
            : e.name() + ":" + e.data().getString("status"));
      }
      assertThat(seen).contains("stdout:one\n", "stderr:two\n").last().isEqualTo("exit:completed");
    }

    WsClient c = WsClient.connect(gw.base + "/v1/sandboxes/" + id + "/executions/ws", key);
    c.send(new JsonObject().put("type", "start").put("command", "cat").put("stdin", true).encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("started");
    c.send(new JsonObject().put("type", "stdin").put("data", "héllo\n").encode());
    c.send(new JsonObject().put("type", "stdin").put("data_b64", "AAEC").encode());
    c.send(new JsonObject().put("type", "stdin_eof").encode());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    JsonObject f;
    while (!(f = c.nextJson()).getString("type").equals("exit")) {
      if (f.getString("type").equals("stdout")) {
        out.writeBytes(f.containsKey("data") ? f.getString("data").getBytes(StandardCharsets.UTF_8)
            : java.util.Base64.getDecoder().decode(f.getString("data_b64")));
      }
    }
    assertThat(out.toByteArray()).isEqualTo("héllo\n\0\1\2".getBytes(StandardCharsets.UTF_8));
    assertThat(f.getString("status")).isEqualTo("completed");
    assertThat(c.closeStatus(java.time.Duration.ofSeconds(10))).isEqualTo(1000);

    assertThat(keep(gw.post("/v1/providers/e2b/health-check", key, null)).json().getString("status"))
        .isEqualTo("healthy");

    Resp gone = keep(gw.delete("/v1/sandboxes/" + id, key));
    assertThat(gone.status()).isEqualTo(200);
    assertThat(gone.json().getString("status")).isEqualTo("destroyed");
    assertThat(sim.sandboxes()).doesNotContainKey(rid);
  }

  @Test
  void reconciliation_sees_a_vanished_sandbox_and_the_supervisor_removes_an_orphan() throws Exception {
    String org = gw.bootstrap("E2B reconcile");
    JsonObject kept = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "e2b"))).json();
    JsonObject lost = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "e2b"))).json();
    // killed behind the gateway's back
    java.net.http.HttpResponse<String> killed = HTTP.send(java.net.http.HttpRequest.newBuilder(
            URI.create(sim.apiUrl() + "/sandboxes/" + lost.getString("provider_resource_id")))
        .header("X-API-Key", E2bSimulator.API_KEY).DELETE().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(killed.statusCode()).isEqualTo(204);

    Resp r = keep(gw.post("/v1/reconciliation/e2b", org, null));
    assertThat(r.status()).isEqualTo(200);
    // the supervisor reconciles every second here and may see the vanished sandbox first: this pass then finds
    // nothing left to change; either way the sandbox ends failed with provider_missing
    int updated = r.json().getInteger("updated");
    assertThat(updated).isIn(0, 1);
    assertThat(r.json().getInteger("missing")).isEqualTo(updated);
    JsonObject g = keep(gw.get("/v1/sandboxes/" + lost.getString("id"), org)).json();
    assertThat(g.getString("status")).isEqualTo("failed");
    assertThat(g.getBoolean("provider_missing")).isTrue();

    String orphanSandbox = "sbx_" + "cd".repeat(16);
    String orphan = sim.createBehindTheBack(Map.of("bespoke_scope", "default", "bespoke_sandbox_id", orphanSandbox),
        600).id;
    String foreign = sim.createBehindTheBack(Map.of("bespoke_scope", "someone-else", "bespoke_sandbox_id",
        orphanSandbox), 600).id;
    Waits.upTo(15).untilAsserted(
        () -> assertThat(sim.sandboxes()).as("the supervisor removed the orphan").doesNotContainKey(orphan));
    assertThat(sim.sandboxes()).as("another deployment's sandbox is left alone").containsKey(foreign);
    assertThat(sim.sandboxes()).as("a live sandbox stays").containsKey(kept.getString("provider_resource_id"));
    String status = gw.awaitOrphanStatus(orphan, "deleted");
    assertThat(status).isEqualTo("deleted");
    keep(gw.delete("/v1/sandboxes/" + kept.getString("id"), org));
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.faults().status(HttpMethod.POST, "/sandboxes", 401, Map.of(), null, 1);
    Resp auth = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "e2b")));
    assertThat(auth.status()).isEqualTo(502);
    assertThat(auth.json().getJsonObject("detail")).isEqualTo(new JsonObject()
        .put("message", "Provider authentication failed.").put("code", "authentication").put("backend", "e2b")
        .put("op", "create").put("retryable", false).put("outcome", "failed")
        .put("context", new JsonObject().put("provider_status", 401)));

    sim.faults().status(HttpMethod.POST, "/sandboxes", 429, Map.of("Retry-After", "12"), null, 1);
    Resp limited = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "e2b")));
    JsonObject detail = limited.json().getJsonObject("detail");
    assertThat(detail.getBoolean("retryable")).isTrue();
    assertThat(detail.getJsonObject("context").getInteger("retry_after_secs")).isEqualTo(12);

    int before = sim.sandboxes().size();
    sim.faults().loseResponse(HttpMethod.POST, "/sandboxes", 1);
    Resp lost = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "e2b")));
    assertThat(lost.status()).isEqualTo(502);
    assertThat(lost.json().getJsonObject("detail").getString("code")).isEqualTo("connection");
    assertThat(lost.json().getJsonObject("detail").getJsonObject("context").getString("cleanup_status"))
        .isEqualTo("deleted");
    assertThat(sim.sandboxes()).as("the sandbox E2B created was deleted again").hasSize(before);

    JsonObject sbx = createE2b(new JsonObject());
    sim.faults().status(HttpMethod.POST, "/process.Process/Start", 401, Map.of(),
        new JsonObject().put("code", "unauthenticated").put("message", "no"), 1);
    Resp denied = exec(sbx.getString("id"), new JsonObject().put("command", "true"));
    assertThat(denied.status()).isEqualTo(502);
    assertThat(denied.json().getJsonObject("detail").getString("code")).isEqualTo("authentication");
    assertThat(denied.json().getJsonObject("detail").getString("op")).isEqualTo("execute");
    keep(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key));
  }

  // ---- files ---------------------------------------------------------------------------------------------

  static String q(String s) {
    return java.net.URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  static java.net.http.HttpResponse<String> put(String id, String path, java.net.http.HttpRequest.BodyPublisher body,
      String extra) throws Exception {
    java.net.http.HttpResponse<String> r = HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base
            + "/v1/sandboxes/" + id + "/files/content?path=" + q(path) + extra)).header("Authorization", "Bearer " + key)
        .timeout(java.time.Duration.ofSeconds(60)).PUT(body).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    BODIES.add(r.body());
    return r;
  }

  static java.net.http.HttpResponse<byte[]> download(String id, String path) throws Exception {
    return HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
            + "/files/content?path=" + q(path))).header("Authorization", "Bearer " + key)
        .timeout(java.time.Duration.ofSeconds(60)).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray());
  }

  static List<String> hiddenUploads(E2bSimulator.Sandbox remote) throws Exception {
    try (var walk = java.nio.file.Files.walk(remote.hostPath("/"))) {
      return walk.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(".bespoke-upload-")).toList();
    }
  }

  @Test
  void files_round_trip_through_the_api_and_an_oversized_upload_reaches_nothing() throws Exception {
    JsonObject sbx = createE2b(new JsonObject().put("timeout_secs", 300));
    String id = sbx.getString("id");
    E2bSimulator.Sandbox remote = sim.sandboxes().get(sbx.getString("provider_resource_id"));

    String text = "#!/bin/sh\necho hello from e2b $1\n";
    java.net.http.HttpResponse<String> script = put(id, "bin/hello.sh",
        java.net.http.HttpRequest.BodyPublishers.ofString(text), "&executable=true");
    assertThat(script.statusCode()).as(script.body()).isEqualTo(201);
    JsonObject entry = new JsonObject(script.body());
    assertThat(entry.getString("path")).isEqualTo("/home/user/bin/hello.sh");
    assertThat(entry.getString("name")).isEqualTo("hello.sh");
    assertThat(entry.getString("mode")).isEqualTo("0755");
    assertThat(entry.getLong("size")).isEqualTo((long) text.length());
    assertThat(entry.getBoolean("is_dir")).isFalse();
    Resp ran = exec(id, new JsonObject().put("command", "bin/hello.sh").put("args", new io.vertx.core.json.JsonArray()
        .add("ok")));
    assertThat(ran.json().getString("stdout")).isEqualTo("hello from e2b ok\n");

    // the sandbox can be adopted from its session state (E2B confirms it is this sandbox's)
    JsonObject state = keep(gw.get("/v1/sandboxes/" + id + "/session-state", key)).json();
    Resp adopted = gw.post("/v1/sandboxes/adopt", key, state);
    assertThat(adopted.status()).as(adopted.body()).isEqualTo(200);
    assertThat(adopted.json().getString("status")).isEqualTo("running");

    // a directory travels as tar.gz through the file operations: structure, contents and the executable bit
    byte[] tree = FilesTest.getArchive(gw, key, id, "bin");
    java.net.http.HttpResponse<String> copied = FilesTest.putArchive(gw, key, id, "copy/bin", tree);
    assertThat(copied.statusCode()).as(copied.body()).isEqualTo(201);
    assertThat(exec(id, new JsonObject().put("command", "copy/bin/hello.sh")).json().getString("stdout"))
        .isEqualTo("hello from e2b\n");
    assertThat(FilesTest.putArchive(gw, key, id, "broken", "junk".getBytes()).statusCode()).isEqualTo(422);
    assertThat(gw.get("/v1/sandboxes/" + id + "/files/archive?path=bin/hello.sh", key).status()).isEqualTo(422);

    byte[] data = new byte[3 << 20];
    new java.util.Random(11).nextBytes(data);
    java.net.http.HttpResponse<String> blob = put(id, "data/blob.bin",
        java.net.http.HttpRequest.BodyPublishers.ofByteArray(data), "");
    assertThat(blob.statusCode()).as(blob.body()).isEqualTo(201);
    assertThat(new JsonObject(blob.body()).getString("mode")).isNotEqualTo("0755");
    assertThat(sim.uploadLengths()).as("uploaded with a known length").contains((long) data.length);

    JsonObject listed = keep(gw.get("/v1/sandboxes/" + id + "/files?path=data", key)).json();
    assertThat(listed.getJsonArray("entries")).hasSize(1);
    JsonObject listedBlob = listed.getJsonArray("entries").getJsonObject(0);
    assertThat(listedBlob.getString("name")).isEqualTo("blob.bin");
    assertThat(listedBlob.getString("path")).isEqualTo("/home/user/data/blob.bin");
    assertThat(listedBlob.getLong("size")).isEqualTo((long) data.length);
    JsonObject home = keep(gw.get("/v1/sandboxes/" + id + "/files?path=.", key)).json();
    assertThat(home.getJsonArray("entries").stream().map(o -> ((JsonObject) o).getString("name") + ":"
        + ((JsonObject) o).getBoolean("is_dir"))).containsExactly("bin:true", "copy:true", "data:true");

    java.net.http.HttpResponse<byte[]> down = download(id, "data/blob.bin");
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.headers().firstValueAsLong("Content-Length")).hasValue(data.length);
    assertThat(down.body()).isEqualTo(data);
    assertThat(download(id, "/home/user/bin/hello.sh").body()).asString().startsWith("#!/bin/sh");

    Resp notEmpty = keep(gw.delete("/v1/sandboxes/" + id + "/files?path=data", key));
    assertThat(notEmpty.status()).isEqualTo(409);
    assertThat(keep(gw.delete("/v1/sandboxes/" + id + "/files?path=data/blob.bin", key)).status()).isEqualTo(204);
    java.net.http.HttpResponse<byte[]> gone = download(id, "data/blob.bin");
    assertThat(gone.statusCode()).isEqualTo(404);
    assertThat(new JsonObject(new String(gone.body(), StandardCharsets.UTF_8)).getString("detail"))
        .isEqualTo("file not found");
    assertThat(keep(gw.delete("/v1/sandboxes/" + id + "/files?path=data/blob.bin", key)).status()).isEqualTo(404);
    java.net.http.HttpResponse<byte[]> dir = download(id, "bin");
    assertThat(dir.statusCode()).isEqualTo(422);
    assertThat(new JsonObject(new String(dir.body(), StandardCharsets.UTF_8)).getString("detail"))
        .isEqualTo("path is a directory");

    // over the limit, streamed without a length and declared up front: refused, and nothing reaches E2B
    int posts = (int) sim.requests().stream().filter(r -> r.equals("envd POST /files")).count();
    byte[] tooBig = new byte[(int) UPLOAD_LIMIT + (1 << 20)];
    java.net.http.HttpResponse<String> streamed = put(id, "data/too-big.bin",
        java.net.http.HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(tooBig)), "");
    assertThat(streamed.statusCode()).isEqualTo(413);
    assertThat(new JsonObject(streamed.body()).getString("detail")).contains("upload limit");
    java.net.http.HttpResponse<String> declared = put(id, "data/too-big.bin",
        java.net.http.HttpRequest.BodyPublishers.ofByteArray(tooBig), "");
    assertThat(declared.statusCode()).isEqualTo(413);
    assertThat(sim.requests().stream().filter(r -> r.equals("envd POST /files")).count()).isEqualTo(posts);
    assertThat(remote.hostPath("data/too-big.bin")).doesNotExist();
    assertThat(hiddenUploads(remote)).isEmpty();
    assertThat(keep(gw.delete("/v1/sandboxes/" + id, key)).status()).isEqualTo(200);
  }

  // ---- metrics --------------------------------------------------------------------------------------------

  @Test
  void metrics_of_an_e2b_sandbox_are_e2bs_and_its_failures_keep_the_error_contract() throws Exception {
    sim.metricsIntervalMs(200);
    try {
      JsonObject sbx = createE2b(new JsonObject().put("timeout_secs", 300).put("memory_mb", 4096));
      String id = sbx.getString("id");
      String rid = sbx.getString("provider_resource_id");
      assertThat(exec(id, new JsonObject().put("command", "head -c 2097152 /dev/zero > blob.bin")).json()
          .getInteger("exit_code")).isZero();
      Resp m = Waits.upTo(15).until(() -> keep(gw.get("/v1/sandboxes/" + id + "/metrics", key)),
          r -> r.status() != 200 || r.json().getDouble("disk_used_mb") != null
              && r.json().getDouble("disk_used_mb") >= 2.0);
      assertThat(m.status()).as(m.body()).isEqualTo(200);
      JsonObject sample = m.json();
      assertThat(sample.getString("sandbox_id")).isEqualTo(id);
      assertThat(sample.getString("status")).isEqualTo("running");
      assertThat(sample.getDouble("disk_used_mb")).isGreaterThanOrEqualTo(2.0);
      assertThat(sample.getDouble("memory_limit_mb")).as("the template's memory, not the config's")
          .isEqualTo((double) E2bSimulator.MEMORY_MB);
      assertThat(sample.getDouble("disk_limit_mb")).isEqualTo((double) E2bSimulator.DISK_SIZE_MB);
      assertThat(sample.getDouble("cpu_percent")).isNotNull().isGreaterThanOrEqualTo(0.0);
      assertThat(sample.getDouble("memory_used_mb")).isNotNull();
      assertThat(sample.containsKey("processes")).isTrue();
      assertThat(sample.getValue("processes")).as("E2B does not count processes").isNull();
      assertThat(sample.getString("sampled_at")).isNotBlank();
      assertThat(sim.requests()).contains("GET /sandboxes/" + rid + "/metrics");

      sim.faults().status(HttpMethod.GET, "/sandboxes/" + rid + "/metrics", 404, Map.of(), null, 1);
      Resp missing = keep(gw.get("/v1/sandboxes/" + id + "/metrics", key));
      assertThat(missing.status()).isEqualTo(502);
      assertThat(missing.json().getJsonObject("detail")).isEqualTo(new JsonObject()
          .put("message", "Provider resource was not found.").put("code", "not_found").put("backend", "e2b")
          .put("op", "metrics").put("retryable", false).put("outcome", "failed")
          .put("context", new JsonObject().put("provider_status", 404)));

      assertThat(keep(gw.delete("/v1/sandboxes/" + id, key)).status()).isEqualTo(200);
      Resp destroyed = keep(gw.get("/v1/sandboxes/" + id + "/metrics", key));
      assertThat(destroyed.status()).isEqualTo(409);
      assertThat(destroyed.json().getString("detail")).isEqualTo("sandbox is destroyed");
    } finally {
      sim.metricsIntervalMs(1_000);
    }
  }

  // ---- set-timeout ----------------------------------------------------------------------------------------

  static java.time.Instant expiresAt(JsonObject sandbox) {
    return java.time.OffsetDateTime.parse(sandbox.getString("expires_at")).toInstant();
  }

  @Test
  void set_timeout_moves_the_e2b_lifetime_and_a_provider_failure_keeps_the_stored_deadline() {
    JsonObject sbx = createE2b(new JsonObject().put("timeout_secs", 300));
    String id = sbx.getString("id");
    E2bSimulator.Sandbox remote = sim.sandboxes().get(sbx.getString("provider_resource_id"));
    int margin = 60;

    java.time.Instant before = java.time.Instant.now();
    Resp longer = keep(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 1800)));
    assertThat(longer.status()).as(longer.body()).isEqualTo(200);
    java.time.Instant after = java.time.Instant.now();
    assertThat(expiresAt(longer.json())).isBetween(before.plusSeconds(1799), after.plusSeconds(1801));
    assertThat(remote.endAt()).as("E2B keeps it a little longer than the gateway")
        .isBetween(before.plusSeconds(1800 + margin - 1), after.plusSeconds(1800 + margin + 1));

    before = java.time.Instant.now();
    Resp shorter = keep(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 120)));
    assertThat(shorter.status()).isEqualTo(200);
    after = java.time.Instant.now();
    assertThat(remote.endAt()).isBetween(before.plusSeconds(120 + margin - 1), after.plusSeconds(120 + margin + 1));
    java.time.Instant e2bEnd = remote.endAt();

    sim.faults().status(HttpMethod.POST, "/sandboxes/" + remote.id + "/timeout", 500, Map.of(), null, 1);
    before = java.time.Instant.now();
    Resp failed = keep(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 900)));
    after = java.time.Instant.now();
    assertThat(failed.status()).isEqualTo(502);
    JsonObject detail = failed.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("command_failed");
    assertThat(detail.getString("backend")).isEqualTo("e2b");
    assertThat(detail.getString("op")).isEqualTo("timeout");
    assertThat(detail.getJsonObject("context").getInteger("provider_status")).isEqualTo(500);
    assertThat(remote.endAt()).as("E2B's lifetime did not move").isEqualTo(e2bEnd);
    JsonObject stored = keep(gw.get("/v1/sandboxes/" + id, key)).json();
    assertThat(expiresAt(stored)).as("the gateway's deadline was stored all the same")
        .isBetween(before.plusSeconds(899), after.plusSeconds(901));
    assertThat(keep(gw.delete("/v1/sandboxes/" + id, key)).status()).isEqualTo(200);
  }
}
