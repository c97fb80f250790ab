package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.runpod.RunPodSimulator;
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
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.apache.sshd.common.NamedResource;
import org.apache.sshd.common.config.keys.KeyUtils;
import org.apache.sshd.common.config.keys.PublicKeyEntry;
import org.apache.sshd.common.digest.BuiltinDigests;
import org.apache.sshd.common.util.security.SecurityUtils;

/**
 * The RunPod backend through the gateway's REST, SSE, WebSocket and reconciliation, against the RunPod simulator
 * and its real SSH server; at the end, the RunPod key appears in no response body, no log event (ours at debug
 * level included) and no database row.
 */
class RunPodGatewayTest {
  static final String RP_KEY = "rp_gateway_test_key_secret_91";
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  static RunPodSimulator sim;
  static TestGateway gw;
  static String key;
  static SecretWatch watch;

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = RunPodSimulator.start(RP_KEY).startDelayMs(100);
    gw = new TestGateway(Map.of("RUNPOD_API_KEY", RP_KEY, "RUNPOD_API_URL", sim.url(),
        "BESPOKE_SUPERVISION_INTERVAL_SECS", "1",
        "RUNPOD_REQUEST_TIMEOUT_SECS", String.valueOf(ProviderFailures.REQUEST_TIMEOUT_SECS)));
    key = gw.bootstrap("RunPod users");
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      watch.assertNeverLeaked(gw, "runpod", RP_KEY);
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
  void create_exec_with_stdin_over_rest_sse_and_websocket_files_then_destroy() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")
        .put("gpu", "NVIDIA A40").put("env_vars", new JsonObject().put("WHO", "runpod"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String resource = created.json().getString("provider_resource_id");
    assertThat(created.json().getString("status")).isEqualTo("running");
    assertThat(sim.pod(resource).getString("name")).contains(sbx);
    assertThat(sim.pod(resource).getJsonObject("gpu").getString("id")).isEqualTo("NVIDIA A40");
    // the pod's live price (the catalog has none for RunPod's GPUs) is the sandbox's rate, so it accrues cost
    // from its first second, before any reconciliation reports RunPod's own figure
    assertThat(created.json().getString("hourly_rate_usd")).isEqualTo("0.69");

    Resp exec = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key,
        new JsonObject().put("command", "echo hello $WHO; echo oops >&2; exit 2")));
    assertThat(exec.status()).as(exec.body()).isEqualTo(200);
    assertThat(exec.json().getString("stdout")).isEqualTo("hello runpod\n");
    assertThat(exec.json().getString("stderr")).isEqualTo("oops\n");
    assertThat(exec.json().getInteger("exit_code")).isEqualTo(2);
    JsonObject usage = exec.json().getJsonObject("usage");
    assertThat(new java.math.BigDecimal(usage.getString("provider_cost_usd"))).as("priced at the pod's rate")
        .isEqualByComparingTo(new java.math.BigDecimal(usage.getString("runtime_seconds"))
            .multiply(new java.math.BigDecimal("0.69")).divide(java.math.BigDecimal.valueOf(3600), 9,
                java.math.RoundingMode.HALF_UP));
    assertThat(new java.math.BigDecimal(usage.getString("provider_cost_usd"))).isPositive();

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

    // files over SFTP (absolute paths: the simulated pod's sshd runs on this machine)
    String root = Files.createTempDirectory("runpod-gw-files-").toString();
    HttpResponse<String> up = files("PUT", sbx, "/files/content", root + "/tools/hello.sh", "&executable=true",
        HttpRequest.BodyPublishers.ofString("#!/bin/sh\necho hello from $1\n"));
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    Resp ran = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command",
        root + "/tools/hello.sh").put("args", new JsonArray().add("runpod"))));
    assertThat(ran.json().getString("stdout")).isEqualTo("hello from runpod\n");
    HttpResponse<String> listed = files("GET", sbx, "/files", root + "/tools", "", HttpRequest.BodyPublishers.noBody());
    assertThat(listed.statusCode()).as(listed.body()).isEqualTo(200);
    assertThat(new JsonObject(listed.body()).getJsonArray("entries").getJsonObject(0).getString("name"))
        .isEqualTo("hello.sh");
    HttpResponse<String> down = files("GET", sbx, "/files/content", root + "/tools/hello.sh", "",
        HttpRequest.BodyPublishers.noBody());
    assertThat(down.body()).isEqualTo("#!/bin/sh\necho hello from $1\n");
    HttpResponse<byte[]> tree = HTTP.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + sbx
            + "/files/archive?path=" + URLEncoder.encode(root + "/tools", StandardCharsets.UTF_8)))
        .header("Authorization", "Bearer " + key).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(tree.statusCode()).isEqualTo(200);
    HttpResponse<String> copied = files("PUT", sbx, "/files/archive", root + "/copy", "",
        HttpRequest.BodyPublishers.ofByteArray(tree.body()));
    assertThat(copied.statusCode()).as(copied.body()).isEqualTo(201);
    assertThat(Files.readString(Path.of(root, "copy/hello.sh"))).startsWith("#!/bin/sh");
    assertThat(files("DELETE", sbx, "/files", root, "&recursive=true", HttpRequest.BodyPublishers.noBody())
        .statusCode()).isEqualTo(204);

    Resp destroyed = seen(gw.delete("/v1/sandboxes/" + sbx, key));
    assertThat(destroyed.status()).as(destroyed.body()).isBetween(200, 204);
    assertThat(sim.pod(resource)).as("terminated at RunPod").isNull();
  }

  @Test
  void isolation_is_refused_clearly_and_provider_failures_follow_the_contract() {
    Resp isolated = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")
        .put("allow_internet", false)));
    assertThat(isolated.status()).as(isolated.body()).isEqualTo(422);
    assertThat(isolated.body()).contains("cannot isolate");

    sim.faults().status(HttpMethod.POST, "/v1/pods", 401, Map.of(), new JsonObject().put("echo", RP_KEY), 1);
    Resp auth = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    assertThat(auth.status()).isEqualTo(502);
    JsonObject detail = auth.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("authentication");
    assertThat(detail.getString("backend")).isEqualTo("runpod");
    assertThat(detail.getString("op")).isEqualTo("create");

    sim.faults().status(HttpMethod.POST, "/v1/pods", 429, Map.of("Retry-After", "9"), null, 1);
    ProviderFailures.assertFailure(seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod"))),
        ProviderFailures.payload("creation_failed", "runpod", "create", true, "failed", new JsonObject()
            .put("provider_status", 429).put("retry_after_secs", 9).put("retry_after_ms", 9000)));
    // a 503 after the create was sent: what carries its token is looked for (nothing here) and reported
    sim.faults().status(HttpMethod.POST, "/v1/pods", 503, Map.of("Retry-After", "3"), null, 1);
    JsonObject unavailable = ProviderFailures.assertWaitHint(seen(gw.post("/v1/sandboxes", key,
        new JsonObject().put("backend", "runpod"))), "runpod", 3);
    assertThat(unavailable.getJsonObject("context").getString("cleanup_status")).isEqualTo("not_found");

    Resp health = seen(gw.post("/v1/providers/runpod/health-check", key, null));
    assertThat(health.status()).as(health.body()).isEqualTo(200);
    assertThat(health.json().getString("status")).isEqualTo("healthy");
    assertThat(seen(gw.get("/v1/providers", key)).body()).contains("runpod");
  }

  /**
   * The first program of a pod reads its SSH endpoint from RunPod: RunPod not knowing the pod is
   * {@code not_found}, answering too slowly a {@code timeout} at the request timeout; the pod is served once
   * RunPod answers again.
   */
  @Test
  void a_provider_404_is_not_found_and_a_slow_answer_times_out() {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    String pod = "/v1/pods/" + created.json().getString("provider_resource_id");
    JsonObject command = new JsonObject().put("command", "echo reached");

    sim.faults().status(HttpMethod.GET, pod, 404, Map.of(), null, 1);
    ProviderFailures.assertFailure(seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, command)),
        ProviderFailures.payload("not_found", "runpod", "execute", false, "failed",
            new JsonObject().put("provider_status", 404)));

    sim.faults().delay(HttpMethod.GET, pod, ProviderFailures.SLOW_ANSWER_MS, 1);
    ProviderFailures.assertTimesOut(() -> seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, command)),
        ProviderFailures.payload("timeout", "runpod", "execute", true, "failed", new JsonObject()));

    Resp served = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, command));
    assertThat(served.status()).as(served.body()).isEqualTo(200);
    assertThat(served.json().getString("stdout")).isEqualTo("reached\n");
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
  }

  /**
   * A create answered 500 after RunPod allocated the pod: the pod named with the create's token is terminated
   * exactly once and the client learns {@code cleanup_status deleted}. (A create whose answer is lost instead
   * is resolved by that name: the pod found is the sandbox, never a second create.)
   */
  @Test
  void a_create_that_failed_after_allocating_is_terminated_exactly_once() throws Exception {
    long creates = sim.count(HttpMethod.POST, "/pods");
    long deletes = sim.count(HttpMethod.DELETE, "/pods/.*");
    sim.failNextCreateAfterAllocating();
    Resp failed = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    ProviderFailures.assertFailure(failed, ProviderFailures.payload("creation_failed", "runpod", "create", true,
        "failed", new JsonObject().put("provider_status", 500).put("cleanup_status", "deleted")));
    assertThat(sim.count(HttpMethod.POST, "/pods")).as("one create, never a second").isEqualTo(creates + 1);
    assertThat(sim.count(HttpMethod.DELETE, "/pods/.*")).as("terminated once").isEqualTo(deletes + 1);
    Thread.sleep(1_500); // a supervision pass (every second here) terminates nothing more
    assertThat(sim.count(HttpMethod.DELETE, "/pods/.*")).isEqualTo(deletes + 1);

    sim.faults().loseResponse(HttpMethod.POST, "/v1/pods", 1);
    Resp adopted = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    assertThat(adopted.status()).as(adopted.body()).isEqualTo(201);
    assertThat(sim.pod(adopted.json().getString("provider_resource_id"))).isNotNull();
    assertThat(sim.count(HttpMethod.POST, "/pods")).as("the lost answer was not a reason to create again")
        .isEqualTo(creates + 2);
    assertThat(sim.count(HttpMethod.DELETE, "/pods/.*")).isEqualTo(deletes + 1);
    assertThat(seen(gw.delete("/v1/sandboxes/" + adopted.json().getString("id"), key)).status()).isBetween(200, 204);
  }

  @Test
  void reconciliation_removes_a_pod_created_behind_the_gateways_back() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    String resource = created.json().getString("provider_resource_id");
    String orphan = sim.plant("bsk.sbx_" + "cd".repeat(16) + ".org_x.ctk_x");
    String foreign = sim.plant("someone-elses");
    Thread.sleep(1_200);
    Resp r = seen(gw.post("/v1/reconciliation/runpod", key, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("missing")).isZero();
    Waits.upTo(5).untilAsserted(() -> assertThat(sim.pod(orphan)).as("the supervisor terminated the orphan").isNull());
    assertThat(sim.pod(foreign)).as("what is not ours is left alone").isNotNull();
    assertThat(sim.pod(resource)).as("a live pod is never an orphan").isNotNull();
    seen(gw.delete("/v1/sandboxes/" + created.json().getString("id"), key));
  }

  @Test
  void after_a_restart_the_pod_is_served_and_a_changed_host_key_is_refused() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")
        .put("env_vars", new JsonObject().put("WHO", "still here"))));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    assertThat(seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command", "true")))
        .status()).isEqualTo(200);
    gw = gw.restarted();
    Resp after = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command", "echo $WHO")));
    assertThat(after.status()).as(after.body()).isEqualTo(200);
    assertThat(after.json().getString("stdout")).isEqualTo("still here\n");

    sim.ssh().changeHostKey();
    gw = gw.restarted();
    Resp refused = seen(gw.post("/v1/sandboxes/" + sbx + "/execute", key, new JsonObject().put("command", "true")));
    assertThat(refused.status()).as(refused.body()).isEqualTo(502);
    JsonObject detail = refused.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("connection");
    assertThat(detail.getBoolean("retryable")).isFalse();
    assertThat(detail.getJsonObject("context").getString("provider_code")).isEqualTo("host_key_changed");
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
  }

  @Test
  void the_provider_entry_serves_the_gateways_ssh_public_key_and_fingerprint_never_the_private_key()
      throws Exception {
    Resp shown = seen(gw.get("/v1/providers/runpod", key));
    assertThat(shown.status()).as(shown.body()).isEqualTo(200);
    JsonObject entry = shown.json();
    assertThat(entry.getString("backend")).isEqualTo("runpod");
    assertThat(entry.getBoolean("configured")).isTrue();
    assertThat(entry.getJsonArray("capabilities")).containsExactly("files");
    KeyPair pair;
    try (var in = Files.newInputStream(gw.dataDir.resolve("runpod/id_ecdsa"))) {
      pair = SecurityUtils.loadKeyPairIdentities(null, NamedResource.ofName("id_ecdsa"), in, null).iterator().next();
    }
    String line = entry.getString("ssh_public_key");
    assertThat(line).as("one OpenSSH line").doesNotContain("\n")
        .startsWith(PublicKeyEntry.toString(pair.getPublic()) + " ");
    assertThat(entry.getString("ssh_key_fingerprint")).matches("SHA256:[A-Za-z0-9+/]+")
        .isEqualTo(KeyUtils.getFingerPrint(BuiltinDigests.sha256, PublicKeyEntry.parsePublicKeyEntry(line)
            .resolvePublicKey(null, Map.of(), null)));
    String secret = Files.readString(gw.dataDir.resolve("runpod/id_ecdsa"));
    assertThat(shown.body()).doesNotContain("PRIVATE").doesNotContain(secret.lines().skip(1).findFirst()
        .orElseThrow());

    JsonObject local = seen(gw.get("/v1/providers/local", key)).json();
    assertThat(local.getString("backend")).isEqualTo("local");
    assertThat(local.fieldNames()).containsExactlyInAnyOrder("backend", "configured", "capabilities", "status",
        "checked_at", "message");
    Resp unknown = seen(gw.get("/v1/providers/nosuch", key));
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.detail()).isEqualTo("provider not found");
    assertThat(seen(gw.get("/v1/providers/runpod", gw.key(key, "sandboxes:read"))).detail())
        .isEqualTo("API key requires scope: providers:read");
  }

  @Test
  void output_streamed_over_sse_survives_a_dropped_ssh_connection_exactly_once() throws Exception {
    Resp created = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "runpod")));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String sbx = created.json().getString("id");
    Resp started = seen(gw.post("/v1/sandboxes/" + sbx + "/executions", key, new JsonObject().put("command",
        "for i in $(seq 1 2000); do echo line $i; [ $((i % 250)) = 0 ] && sleep 0.25; done")));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String execution = "/v1/sandboxes/" + sbx + "/executions/" + started.json().getString("id");
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 2000; i++) {
      expected.append("line ").append(i).append('\n');
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    JsonObject exit = null;
    boolean dropped = false;
    try (SseClient sse = SseClient.open(gw.base + execution + "/stream?after=0", key, "GET", null)) {
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          out.writeBytes(e.bytes());
          if (!dropped && out.size() > 100) {
            sim.ssh().dropSessions(); // mid-output: the program is still writing
            dropped = true;
          }
        } else if (e.name().equals("exit")) {
          exit = e.data();
        }
      }
    }
    assertThat(dropped).isTrue();
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo(expected.toString());
    assertThat(exit.getInteger("exit_code")).isZero();
    assertThat(seen(gw.delete("/v1/sandboxes/" + sbx, key)).status()).isBetween(200, 204);
  }
}
