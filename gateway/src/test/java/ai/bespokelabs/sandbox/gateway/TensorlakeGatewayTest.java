package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.tensorlake.TensorlakeSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Tensorlake backend through the gateway's REST, SSE, WebSocket and reconciliation, against the Tensorlake
 * simulator; at the end, the Tensorlake key appears in no response body, no log event (ours at debug level
 * included) and no database row.
 */
class TensorlakeGatewayTest {
  static final String TL_KEY = "tl_gateway_test_key_secret_77";
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  static TensorlakeSimulator sim;
  static TestGateway gw;
  static String key;
  static SecretWatch watch;

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = TensorlakeSimulator.start(TL_KEY).startDelayMs(50);
    gw = new TestGateway(Map.of("TENSORLAKE_API_KEY", TL_KEY, "TENSORLAKE_API_URL", sim.url(),
        "TENSORLAKE_SANDBOX_URL", sim.daemonUrl(), "BESPOKE_SUPERVISION_INTERVAL_SECS", "1",
        "TENSORLAKE_REQUEST_TIMEOUT_SECS", String.valueOf(ProviderFailures.REQUEST_TIMEOUT_SECS)));
    key = gw.bootstrap("Tensorlake users");
  }

  @AfterAll
  static void stop() {
    try {
      watch.assertNeverLeaked(gw, "tensorlake", TL_KEY);
    } finally {
      watch.stop();
      gw.close();
      sim.close();
    }
  }

  @AfterEach
  void everyRequestConformed() {
    sim.faults().clear();
    assertThat(sim.violations()).isEmpty();
  }

  static Resp seen(Resp r) {
    return watch.seen(r);
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
  void create_exec_with_stdin_files_snapshot_and_destroy() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake").put("cpu", 1)
        .put("memory_mb", 1024).put("env_vars", new JsonObject().put("WHO", "tensorlake"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = created.json().getString("provider_resource_id");
    assertThat(created.json().getString("status")).isEqualTo("running");
    assertThat(sim.sandbox(resource).getString("name")).contains(sbx);

    Resp exec = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("command", "echo hello $WHO; echo oops >&2; exit 2")));
    assertThat(exec.status()).as(exec.body()).isEqualTo(200);
    assertThat(exec.json().getString("stdout")).isEqualTo("hello tensorlake\n");
    assertThat(exec.json().getString("stderr")).isEqualTo("oops\n");
    assertThat(exec.json().getInteger("exit_code")).isEqualTo(2);

    // SSE: an execution with stdin, fed over REST and followed as a stream
    Resp started = seen(gw.post("/v1/sandboxes/" + sbx + "/executions", key,
        new JsonObject().put("command", "cat; echo closed >&2").put("stdin", true)));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String execution = "/v1/sandboxes/" + sbx + "/executions/" + started.json().getString("id");
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

    // WebSocket: start, stdin, eof
    WsClient c = WsClient.connect(gw.base + "/v1/sandboxes/" + sbx + "/executions/ws", key);
    c.send(new JsonObject().put("type", "start").put("command", "cat").put("stdin", true).encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("started");
    c.send(new JsonObject().put("type", "stdin").put("data", "over the socket\n").encode());
    c.send(new JsonObject().put("type", "stdin_eof").encode());
    ByteArrayOutputStream ws = new ByteArrayOutputStream();
    JsonObject f;
    while (!(f = c.nextJson()).getString("type").equals("exit")) {
      if (f.getString("type").equals("stdout")) {
        ws.writeBytes(f.containsKey("data") ? f.getString("data").getBytes(StandardCharsets.UTF_8)
            : java.util.Base64.getDecoder().decode(f.getString("data_b64")));
      }
    }
    assertThat(ws.toString(StandardCharsets.UTF_8)).isEqualTo("over the socket\n");
    assertThat(f.getString("status")).isEqualTo("completed");
    assertThat(c.closeStatus(Duration.ofSeconds(10))).isEqualTo(1000);

    // files
    HttpResponse<String> up = files("PUT", sbx, "/files/content", "tools/hello.sh", "&executable=true",
        HttpRequest.BodyPublishers.ofString("#!/bin/sh\necho hello from $1\n"));
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    Resp ran = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command",
        "./tools/hello.sh").put("args", new JsonArray().add("tensorlake"))));
    assertThat(ran.json().getString("stdout")).isEqualTo("hello from tensorlake\n");
    HttpResponse<String> listed = files("GET", sbx, "/files", "tools", "", HttpRequest.BodyPublishers.noBody());
    assertThat(listed.statusCode()).as(listed.body()).isEqualTo(200);
    assertThat(new JsonObject(listed.body()).getJsonArray("entries").getJsonObject(0).getString("name"))
        .isEqualTo("hello.sh");
    HttpResponse<String> down = files("GET", sbx, "/files/content", "tools/hello.sh", "",
        HttpRequest.BodyPublishers.noBody());
    assertThat(down.body()).isEqualTo("#!/bin/sh\necho hello from $1\n");
    HttpResponse<byte[]> tree = HTTP.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + sbx
            + "/files/archive?path=tools")).header("Authorization", "Bearer " + key).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(tree.statusCode()).isEqualTo(200);
    HttpResponse<String> copied = files("PUT", sbx, "/files/archive", "copy", "",
        HttpRequest.BodyPublishers.ofByteArray(tree.body()));
    assertThat(copied.statusCode()).as(copied.body()).isEqualTo(201);
    assertThat(Files.readString(sim.dir(resource).resolve("copy/hello.sh"))).startsWith("#!/bin/sh");
    assertThat(files("DELETE", sbx, "/files", "copy", "&recursive=true", HttpRequest.BodyPublishers.noBody())
        .statusCode()).isEqualTo(204);

    // snapshot, then a sandbox from it holds its files; another organization cannot use it
    Resp snap = seen(gw.post("/v1/sandboxes/" + sbx + "/snapshot", key, null));
    assertThat(snap.status()).as(snap.body()).isBetween(200, 201);
    String snapshotId = snap.json().getString("snapshot_id");
    Resp restored = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")
        .put("snapshot_id", snapshotId)));
    assertThat(restored.status()).as(restored.body()).isEqualTo(201);
    Resp cat = seen(gw.post("/v1/sandboxes/" + restored.json().getString("id") + "/execute", key,
        new JsonObject().put("command", "cat tools/hello.sh | wc -l; echo [$WHO]")));
    assertThat(cat.json().getString("stdout")).as("its own env, none from the snapshot's source").isEqualTo("2\n[]\n");
    String other = gw.bootstrap("Tensorlake others");
    Resp foreign = seen(gw.post("/v1/sandboxes", other, new JsonObject().put("backend", "tensorlake")
        .put("snapshot_id", snapshotId)));
    assertThat(foreign.status()).isEqualTo(404);
    assertThat(foreign.detail()).isEqualTo("snapshot not found");
    seen(gw.delete("/v1/sandboxes/" + restored.json().getString("id"), key));

    Resp destroyed = seen(gw.delete("/v1/sandboxes/" + sbx, key));
    assertThat(destroyed.status()).as(destroyed.body()).isBetween(200, 204);
    assertThat(sim.sandbox(resource)).as("deleted at Tensorlake").isNull();
  }

  @Test
  void reconciliation_removes_a_sandbox_created_behind_the_gateways_back() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")));
    String resource = created.json().getString("provider_resource_id");
    String orphan = sim.createDirectly("bsk.sbx_" + "cd".repeat(16) + ".org_x.ctk_x");
    String foreign = sim.createDirectly("someone-elses");
    Thread.sleep(1_200);
    Resp r = seen(gw.post("/v1/reconciliation/tensorlake", key, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("missing")).isZero();
    Waits.upTo(5).untilAsserted(() -> assertThat(sim.sandbox(orphan)).as("the supervisor deleted the orphan").isNull());
    assertThat(sim.count(HttpMethod.DELETE, "/sandboxes/" + orphan)).isEqualTo(1);
    assertThat(sim.sandbox(foreign)).as("what is not ours is left alone").isNotNull();
    assertThat(sim.sandbox(resource)).as("a live sandbox is never an orphan").isNotNull();
    seen(gw.delete("/v1/sandboxes/" + created.json().getString("id"), key));
    sim.vanish(foreign);
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.faults().status(HttpMethod.POST, "/sandboxes", 401, Map.of(), new JsonObject().put("echo", TL_KEY), 1);
    Resp auth = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")));
    assertThat(auth.status()).isEqualTo(502);
    JsonObject detail = auth.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("authentication");
    assertThat(detail.getString("backend")).isEqualTo("tensorlake");
    assertThat(detail.getString("op")).isEqualTo("create");

    sim.faults().status(HttpMethod.POST, "/sandboxes", 429, Map.of("Retry-After", "9"), null, 1);
    ProviderFailures.assertFailure(seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake"))),
        ProviderFailures.payload("creation_failed", "tensorlake", "create", true, "failed", new JsonObject()
            .put("provider_status", 429).put("retry_after_secs", 9).put("retry_after_ms", 9000)));
    sim.faults().status(HttpMethod.POST, "/sandboxes", 503, Map.of("Retry-After", "2"), null, 1);
    ProviderFailures.assertWaitHint(seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend",
        "tensorlake"))), "tensorlake", 2);

    long creates = sim.count(HttpMethod.POST, "/sandboxes");
    sim.timeoutNextCreate();
    Resp slow = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")));
    assertThat(slow.status()).as("a 504 that still created is resolved by polling").isEqualTo(201);
    assertThat(sim.count(HttpMethod.POST, "/sandboxes")).isEqualTo(creates + 1);
    seen(gw.delete("/v1/sandboxes/" + slow.json().getString("id"), key));

    Resp health = seen(gw.post("/v1/providers/tensorlake/health-check", key, null));
    assertThat(health.status()).as(health.body()).isEqualTo(200);
    assertThat(health.json().getString("status")).isEqualTo("healthy");
    Resp providers = seen(gw.get("/v1/providers", key));
    assertThat(providers.body()).contains("tensorlake");
  }

  /**
   * Tensorlake not knowing a sandbox is {@code not_found}; answering too slowly, a {@code timeout} at the
   * request timeout; neither changes the sandbox, which is served once Tensorlake answers again.
   */
  @Test
  void a_provider_404_is_not_found_and_a_slow_answer_times_out() {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = "/sandboxes/" + created.json().getString("provider_resource_id");

    sim.faults().status(HttpMethod.GET, resource, 404, Map.of(), null, 1);
    ProviderFailures.assertFailure(seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key)),
        ProviderFailures.payload("not_found", "tensorlake", "metrics", false, "failed",
            new JsonObject().put("provider_status", 404)));

    sim.faults().delay(HttpMethod.GET, resource, ProviderFailures.SLOW_ANSWER_MS, 1);
    ProviderFailures.assertTimesOut(() -> seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key)),
        ProviderFailures.payload("timeout", "tensorlake", "metrics", true, "failed", new JsonObject()));

    Resp m = seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key));
    assertThat(m.status()).as(m.body()).isEqualTo(200);
    assertThat(seen(gw.get("/v1/sandboxes/" + sbx, key)).json().getString("status")).isEqualTo("running");
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
  }

  /**
   * A create answered with an error after Tensorlake allocated the sandbox: whatever carries the create's token
   * is deleted exactly once, and the client learns {@code cleanup_status deleted}.
   */
  @Test
  void a_create_that_failed_after_allocating_is_deleted_exactly_once() throws Exception {
    long creates = sim.count(HttpMethod.POST, "/sandboxes");
    long deletes = sim.count(HttpMethod.DELETE, "/sandboxes/.*");
    java.util.Set<String> before = sim.sandboxes().stream().map(s -> s.getString("sandbox_id"))
        .collect(java.util.stream.Collectors.toSet());
    sim.failNextCreateAfterAllocating(500);
    Resp failed = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")));
    ProviderFailures.assertFailure(failed, ProviderFailures.payload("creation_failed", "tensorlake", "create", true,
        "failed", new JsonObject().put("provider_status", 500).put("cleanup_status", "deleted")));
    assertThat(sim.count(HttpMethod.POST, "/sandboxes")).as("one create, never a second").isEqualTo(creates + 1);
    assertThat(sim.count(HttpMethod.DELETE, "/sandboxes/.*")).as("deleted once").isEqualTo(deletes + 1);
    Thread.sleep(1_500); // a supervision pass (every second here) deletes nothing more
    assertThat(sim.count(HttpMethod.DELETE, "/sandboxes/.*")).isEqualTo(deletes + 1);
    assertThat(sim.sandboxes().stream().map(s -> s.getString("sandbox_id"))).as("nothing was left behind")
        .allMatch(before::contains);
  }

  @Test
  void a_sandbox_survives_a_gateway_restart_with_its_env_vars() {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")
        .put("env_vars", new JsonObject().put("WHO", "still here"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    gw = gw.restarted();
    Resp after = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command", "echo $WHO")));
    assertThat(after.status()).as(after.body()).isEqualTo(200);
    assertThat(after.json().getString("stdout")).as("the env vars are kept in the sandbox").isEqualTo("still here\n");
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
    assertThat(sim.sandbox(created.json().getString("provider_resource_id"))).isNull();
  }

  @Test
  void metrics_adopt_and_a_moved_deadline_and_output_as_text_lines() {
    JsonObject tensorlake = seen(gw.get("/v1/providers", key)).json().getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(p -> p.getString("backend").equals("tensorlake")).findFirst().orElseThrow();
    assertThat(tensorlake.getJsonArray("capabilities").getList())
        .containsExactly("adopt", "files", "metrics", "snapshot");

    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "tensorlake")
        .put("memory_mb", 1024).put("disk_mb", 3072).put("env_vars", new JsonObject().put("WHO", "adopted"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = created.json().getString("provider_resource_id");

    // output is the daemon's text lines: not UTF-8 arrives replaced, a last line gains its newline
    Resp printed = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("command", "printf 'a\\377b\\nlast'")));
    assertThat(printed.json().getString("stdout")).isEqualTo("a\uFFFDb\nlast\n");

    Resp m = seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key));
    assertThat(m.status()).as(m.body()).isEqualTo(200);
    assertThat(m.json().getDouble("memory_limit_mb")).isEqualTo(1024.0);
    assertThat(m.json().getDouble("disk_limit_mb")).isEqualTo(3072.0);
    assertThat(m.json().getInteger("processes")).isZero();
    assertThat(m.json().getValue("cpu_percent")).isNull();
    assertThat(m.json().getValue("memory_used_mb")).isNull();

    // Tensorlake cannot move a sandbox's lifetime: only the gateway's deadline moves, nothing is sent
    long before = sim.count(HttpMethod.PATCH, ".*") + sim.count(HttpMethod.POST, "/sandboxes/.*");
    Resp longer = seen(gw.post("/v1/sandboxes/" + sbx + "/timeout", key, new JsonObject().put("timeout_secs", 1800)));
    assertThat(longer.status()).as(longer.body()).isEqualTo(200);
    assertThat(sim.count(HttpMethod.PATCH, ".*") + sim.count(HttpMethod.POST, "/sandboxes/.*")).isEqualTo(before);

    JsonObject state = seen(gw.get("/v1/sandboxes/" + sbx + "/session-state", key)).json();
    sim.suspendDirectly(resource);
    Resp suspended = seen(gw.get("/v1/sandboxes/" + sbx + "/metrics", key));
    assertThat(suspended.status()).isEqualTo(409);
    assertThat(suspended.json().getString("detail")).isEqualTo("sandbox is not running at Tensorlake");
    gw = gw.restarted();
    Resp adopted = seen(gw.post("/v1/sandboxes/adopt", key, state));
    assertThat(adopted.status()).as(adopted.body()).isEqualTo(200);
    assertThat(adopted.json().getString("status")).isEqualTo("running");
    assertThat(sim.sandbox(resource).getString("status")).as("resumed at Tensorlake").isEqualTo("running");
    assertThat(seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command", "echo $WHO")))
        .json().getString("stdout")).isEqualTo("adopted\n");

    sim.terminateDirectly(resource);
    Resp gone = seen(gw.post("/v1/sandboxes/adopt", key, state));
    assertThat(gone.status()).as(gone.body()).isEqualTo(502);
    assertThat(gone.json().getJsonObject("detail").getString("code")).isEqualTo("not_found");
    assertThat(gone.json().getJsonObject("detail").getString("op")).isEqualTo("adopt");
    assertThat(sim.sandbox(resource)).as("adopt deletes nothing").isNotNull();
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
  }
}
