package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.json.JsonObject;
import io.vertx.grpc.common.GrpcStatus;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The modal backend through the gateway's API, against the Modal gRPC simulator; at the end, neither part of the
 * Modal token appears in a response body, a log event (ours at debug level included) or a database row.
 */
class ModalGatewayTest {
  static ModalSimulator sim;
  static TestGateway gw;
  static String key;
  static SecretWatch watch;

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = ModalSimulator.start();
    Map<String, String> env = new HashMap<>(sim.env());
    env.put("BESPOKE_SUPERVISION_INTERVAL_SECS", "1");
    env.put("MODAL_REQUEST_TIMEOUT_SECS", String.valueOf(ProviderFailures.REQUEST_TIMEOUT_SECS));
    gw = new TestGateway(env);
    key = gw.bootstrap("Modal users");
  }

  @AfterEach
  void conforming() {
    sim.clearFaults();
    assertThat(sim.violations()).as("requests Modal would refuse").isEmpty();
  }

  @AfterAll
  static void stop() {
    try {
      watch.assertNeverLeaked(gw, "modal", ModalSimulator.TOKEN_SECRET, ModalSimulator.TOKEN_ID);
    } finally {
      watch.stop();
      gw.close();
      sim.close();
    }
  }

  static Resp keep(Resp r) {
    return watch.seen(r);
  }

  static JsonObject createModal(JsonObject extra) {
    Resp r = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal").mergeIn(extra)));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    return r.json();
  }

  static Resp exec(String id, JsonObject body) {
    return keep(gw.post("/v1/sandboxes/" + id + "/execute", key, body));
  }

  @Test
  void full_lifecycle_create_execute_stream_with_stdin_snapshot_and_destroy() throws Exception {
    JsonObject sbx = createModal(new JsonObject().put("timeout_secs", 300).put("gpu", "H100:2")
        .put("env_vars", new JsonObject().put("GREETING", "hello from modal")));
    String id = sbx.getString("id");
    String rid = sbx.getString("provider_resource_id");
    assertThat(sbx.getString("status")).isEqualTo("running");
    assertThat(sim.liveSandboxes()).contains(rid);
    assertThat(sim.tags(rid)).anyMatch(t -> t.getTagName().equals("bespoke_sandbox_id") && t.getTagValue().equals(id));
    assertThat(sim.definition(rid).getResources().getGpuConfig().getCount()).isEqualTo(2);

    Resp sh = exec(id, new JsonObject().put("command", "echo \"$GREETING\"; echo kept > state.txt; exit 4"));
    assertThat(sh.status()).as(sh.body()).isEqualTo(200);
    assertThat(sh.json().getString("stdout")).isEqualTo("hello from modal\n");
    assertThat(sh.json().getInteger("exit_code")).isEqualTo(4);

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

    Resp snap = keep(gw.post("/v1/sandboxes/" + id + "/snapshot", key, null));
    assertThat(snap.status()).as(snap.body()).isEqualTo(201);
    String snapshotId = snap.json().getString("snapshot_id");
    JsonObject restored = createModal(new JsonObject().put("snapshot_id", snapshotId));
    assertThat(exec(restored.getString("id"), new JsonObject().put("command", "cat state.txt")).json()
        .getString("stdout")).isEqualTo("kept\n");

    // adopted from its session state (Modal confirms it runs and carries this sandbox's tags)
    JsonObject state = keep(gw.get("/v1/sandboxes/" + id + "/session-state", key)).json();
    Resp adopted = keep(gw.post("/v1/sandboxes/adopt", key, state));
    assertThat(adopted.status()).as(adopted.body()).isEqualTo(200);
    assertThat(adopted.json().getString("status")).isEqualTo("running");

    Resp slow = exec(id, new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 1));
    assertThat(slow.json().getString("stdout")).isEqualTo("started\n");
    assertThat(slow.json().getInteger("exit_code")).as(slow.body()).isEqualTo(124);
    assertThat(slow.json().getBoolean("timed_out")).isTrue();

    assertThat(keep(gw.post("/v1/providers/modal/health-check", key, null)).json().getString("status"))
        .isEqualTo("healthy");

    for (String s : List.of(id, restored.getString("id"))) {
      Resp gone = keep(gw.delete("/v1/sandboxes/" + s, key));
      assertThat(gone.status()).isEqualTo(200);
      assertThat(gone.json().getString("status")).isEqualTo("destroyed");
    }
    assertThat(sim.liveSandboxes()).doesNotContain(rid, restored.getString("provider_resource_id"));
  }

  @Test
  void a_first_use_of_an_image_waits_for_its_build_then_executes_and_a_failed_build_names_the_image() {
    String image = "registry.example/gateway-first-use-" + System.nanoTime() + ":1";
    int builds = sim.buildsStarted();
    int joins = sim.joins().size();
    JsonObject sbx = createModal(new JsonObject().put("image", image));
    assertThat(sbx.getString("status")).isEqualTo("running");
    assertThat(sim.buildsStarted()).isEqualTo(builds + 1);
    assertThat(sim.joins().size()).as("the build was joined before the sandbox was created").isGreaterThan(joins);
    Resp ran = exec(sbx.getString("id"), new JsonObject().put("command", "echo built and running"));
    assertThat(ran.status()).as(ran.body()).isEqualTo(200);
    assertThat(ran.json().getString("stdout")).isEqualTo("built and running\n");
    keep(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key));

    java.util.Set<String> live = sim.liveSandboxes();
    Resp failed = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal")
        .put("image", ModalSimulator.FAILING_IMAGE)));
    assertThat(failed.status()).as(failed.body()).isEqualTo(422);
    assertThat(failed.json().getString("detail")).startsWith("image " + ModalSimulator.FAILING_IMAGE
        + " failed to build on Modal: ").doesNotContain(ModalSimulator.BUILD_LOG);
    assertThat(sim.liveSandboxes()).isEqualTo(live);
    // the sandbox is recorded as failed with the configuration error, nothing allocated
    JsonObject row = keep(gw.get("/v1/sandboxes", key)).array().stream()
        .map(JsonObject.class::cast)
        .filter(r -> ModalSimulator.FAILING_IMAGE.equals(r.getJsonObject("config").getString("image")))
        .findFirst().orElseThrow();
    assertThat(row.getString("status")).isEqualTo("failed");
    assertThat(row.getJsonObject("latest_error").getString("code")).isEqualTo("configuration");
    assertThat(row.getJsonObject("latest_error").getString("outcome")).isEqualTo("failed");
    assertThat(row.getJsonObject("latest_error").getBoolean("retryable")).isFalse();
  }

  static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();

  static java.net.http.HttpResponse<byte[]> files(String method, String sbx, String endpoint, String path,
      String extra, byte[] body) throws Exception {
    java.net.http.HttpResponse<byte[]> r = HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(gw.base
            + "/v1/sandboxes/" + sbx + endpoint + "?path=" + java.net.URLEncoder.encode(path, StandardCharsets.UTF_8)
            + extra)).header("Authorization", "Bearer " + key).timeout(java.time.Duration.ofSeconds(60))
        .method(method, body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
            : java.net.http.HttpRequest.BodyPublishers.ofByteArray(body)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofByteArray());
    watch.seen(new String(r.body(), StandardCharsets.UTF_8));
    return r;
  }

  @Test
  void files_round_trip_through_the_files_api() throws Exception {
    JsonObject sbx = createModal(new JsonObject());
    String id = sbx.getString("id");
    java.nio.file.Path root = sim.dir(sbx.getString("provider_resource_id"));

    var up = files("PUT", id, "/files/content", "tools/hello.sh", "&executable=true",
        "#!/bin/sh\necho hello from $1\n".getBytes(StandardCharsets.UTF_8));
    assertThat(up.statusCode()).as(new String(up.body())).isEqualTo(201);
    assertThat(new JsonObject(new String(up.body())).getString("mode")).isEqualTo("0755");
    Resp ran = exec(id, new JsonObject().put("command", "./tools/hello.sh modal"));
    assertThat(ran.json().getString("stdout")).as(ran.body()).isEqualTo("hello from modal\n");

    byte[] blob = new byte[700_000];
    new java.util.Random(3).nextBytes(blob);
    assertThat(files("PUT", id, "/files/content", "tools/blob.bin", "", blob).statusCode()).isEqualTo(201);
    var listed = files("GET", id, "/files", "tools", "", null);
    assertThat(listed.statusCode()).isEqualTo(200);
    io.vertx.core.json.JsonArray entries = new JsonObject(new String(listed.body())).getJsonArray("entries");
    assertThat(entries.stream().map(e -> ((JsonObject) e).getString("name"))).containsExactly("blob.bin", "hello.sh");
    assertThat(entries.getJsonObject(0).getLong("size")).isEqualTo(blob.length);
    assertThat(entries.getJsonObject(0).getString("mode")).isEqualTo("0644");

    var down = files("GET", id, "/files/content", "tools/blob.bin", "", null);
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.headers().firstValueAsLong("Content-Length")).hasValue(blob.length);
    assertThat(down.body()).isEqualTo(blob);

    var tree = files("GET", id, "/files/archive", "tools", "", null);
    assertThat(tree.statusCode()).isEqualTo(200);
    var copied = files("PUT", id, "/files/archive", "copy", "", tree.body());
    assertThat(copied.statusCode()).as(new String(copied.body())).isEqualTo(201);
    assertThat(java.nio.file.Files.readAllBytes(root.resolve("copy/blob.bin"))).isEqualTo(blob);
    assertThat(files("PUT", id, "/files/archive", "broken", "",
        java.util.Arrays.copyOf(tree.body(), tree.body().length / 2)).statusCode()).isEqualTo(422);
    assertThat(root.resolve("broken")).doesNotExist();

    assertThat(files("DELETE", id, "/files", "tools", "", null).statusCode()).isEqualTo(409);
    assertThat(files("DELETE", id, "/files", "tools/blob.bin", "", null).statusCode()).isEqualTo(204);
    assertThat(files("GET", id, "/files/content", "tools/blob.bin", "", null).statusCode()).isEqualTo(404);
    assertThat(files("GET", id, "/files/content", "tools", "", null).statusCode()).isEqualTo(422);
    assertThat(files("DELETE", id, "/files", "tools", "&recursive=true", null).statusCode()).isEqualTo(204);
    assertThat(root.resolve("tools")).doesNotExist();

    // a path Modal refuses (outside the container's root) maps to 403
    var refused = files("GET", id, "/files/content", "../../etc/passwd", "", null);
    assertThat(refused.statusCode()).as(new String(refused.body())).isEqualTo(403);
    keep(gw.delete("/v1/sandboxes/" + id, key));
  }

  /** Starts {@code command}, signals it once its output reached {@code ready}; the output and the exit event. */
  static JsonObject signalled(String id, String command, String signal, StringBuilder out) throws Exception {
    Resp started = keep(gw.post("/v1/sandboxes/" + id + "/executions", key, new JsonObject().put("command", command)));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String execution = "/v1/sandboxes/" + id + "/executions/" + started.json().getString("id");
    boolean sent = false;
    try (SseClient sse = SseClient.open(gw.base + execution + "/stream?after=0", key, "GET", null)) {
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput() && e.name().equals("stdout")) {
          out.append(new String(e.bytes(), StandardCharsets.UTF_8));
          if (!sent && out.toString().contains("ready\n")) {
            sent = true;
            Resp sig = keep(gw.post(execution + "/signal", key, new JsonObject().put("signal", signal)));
            assertThat(sig.status()).as(sig.body()).isEqualTo(204);
          }
        } else if (e.name().equals("exit")) {
          return e.data();
        }
      }
    }
    throw new AssertionError("no exit event");
  }

  @Test
  void signals_reach_a_running_program_over_rest() throws Exception {
    String id = createModal(new JsonObject()).getString("id");
    StringBuilder out = new StringBuilder();
    JsonObject exit = signalled(id, "trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 0.1; done",
        "TERM", out);
    assertThat(out.toString()).isEqualTo("ready\ngot TERM\n");
    assertThat(exit.getInteger("exit_code")).as(exit.encode()).isEqualTo(3);
    assertThat(exit.getString("status")).isEqualTo("cancelled");

    StringBuilder killedOut = new StringBuilder();
    JsonObject killed = signalled(id, "trap '' TERM; echo ready; sleep 30", "KILL", killedOut);
    assertThat(killed.getInteger("exit_code")).as(killed.encode()).isEqualTo(137);
    assertThat(killed.getString("status")).isEqualTo("cancelled");
    keep(gw.delete("/v1/sandboxes/" + id, key));
  }

  @Test
  void a_gpu_sandbox_is_charged_its_gpu_time_in_the_cost_endpoints() throws Exception {
    String org = gw.bootstrap("Modal GPU costs");
    JsonObject gpu = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "modal").put("gpu", "A100")))
        .json();
    JsonObject plain = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "modal"))).json();
    long created = System.nanoTime();
    Thread.sleep(1_500);
    long asked = System.nanoTime();
    Resp r = keep(gw.post("/v1/reconciliation/modal", org, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    // an A100 at conf/pricing.json's 2.10 USD an hour, for at least the time since both were created (the ledger
    // takes the reconciliation's observation asynchronously)
    java.math.BigDecimal floor = new java.math.BigDecimal("2.10").multiply(java.math.BigDecimal.valueOf(
        (asked - created) / 1e9)).divide(java.math.BigDecimal.valueOf(3600), java.math.MathContext.DECIMAL64);
    JsonObject cost = ai.bespokelabs.sandbox.testkit.Waits.upTo(10).until(() -> gw.get("/v1/sandboxes/"
        + gpu.getString("id") + "/detail", org).json().getJsonObject("cost"), c -> c != null
        && "reconciled".equals(c.getString("cost_state")) && c.getString("provider_reported_cost_usd") != null
        && new java.math.BigDecimal(c.getString("provider_reported_cost_usd")).compareTo(floor) >= 0);
    java.math.BigDecimal reported = new java.math.BigDecimal(cost.getString("provider_reported_cost_usd"));
    JsonObject plainCost = keep(gw.get("/v1/sandboxes/" + plain.getString("id") + "/detail", org)).json()
        .getJsonObject("cost");
    assertThat(plainCost.getString("cost_state")).isEqualTo("reconciled");
    assertThat(reported).as("GPU time dominates").isGreaterThan(new java.math.BigDecimal(
        plainCost.getString("provider_reported_cost_usd")).multiply(java.math.BigDecimal.TEN));

    java.math.BigDecimal charged = ai.bespokelabs.sandbox.testkit.Waits.upTo(10).until(() -> new java.math.BigDecimal(
        gw.get("/v1/costs", org).json().getJsonArray("items").stream().map(JsonObject.class::cast)
            .filter(i -> i.getString("key").equals(gpu.getString("id"))).findFirst().orElseThrow()
            .getString("provider_cost_usd")), c -> c.compareTo(floor) >= 0);
    assertThat(charged).as("GET /v1/costs charges the GPU time").isGreaterThanOrEqualTo(floor);
    keep(gw.delete("/v1/sandboxes/" + gpu.getString("id"), org));
    keep(gw.delete("/v1/sandboxes/" + plain.getString("id"), org));
  }

  @Test
  void a_dropped_output_stream_resumes_without_loss_or_duplication() {
    String id = createModal(new JsonObject()).getString("id");
    sim.dropStdoutAfter(2000);
    Resp r = exec(id, new JsonObject().put("command", "seq 1 2000"));
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 2000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(r.json().getString("stdout")).isEqualTo(expected.toString());
    assertThat(r.json().getInteger("exit_code")).isZero();
    keep(gw.delete("/v1/sandboxes/" + id, key));
  }

  @Test
  void reconciliation_sees_a_vanished_sandbox_and_the_supervisor_removes_an_orphan() throws Exception {
    String org = gw.bootstrap("Modal reconcile");
    JsonObject kept = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "modal"))).json();
    JsonObject lost = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "modal"))).json();
    sim.terminateBehindTheBack(lost.getString("provider_resource_id"));

    Resp r = keep(gw.post("/v1/reconciliation/modal", org, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    // the supervisor reconciles every second too, so it may have marked the sandbox before this call did
    assertThat(r.json().getInteger("missing")).isBetween(0, 1);
    JsonObject g = ai.bespokelabs.sandbox.testkit.Waits.upTo(10).until(
        () -> gw.get("/v1/sandboxes/" + lost.getString("id"), org).json(), s -> "failed".equals(s.getString("status")));
    assertThat(g.getString("status")).isEqualTo("failed");
    assertThat(g.getBoolean("provider_missing")).isTrue();

    String orphan = sim.createBehindTheBack("bespoke-sandbox-gateway",
        Map.of("bespoke_sandbox_id", "sbx_" + "ef".repeat(16)));
    String foreign = sim.createBehindTheBack("someone-elses-app", Map.of("bespoke_sandbox_id", "sbx_" + "ef".repeat(16)));
    ai.bespokelabs.sandbox.testkit.Waits.upTo(15).untilAsserted(
        () -> assertThat(sim.liveSandboxes()).as("the supervisor removed the orphan").doesNotContain(orphan));
    assertThat(sim.liveSandboxes()).as("another app's sandbox is left alone").contains(foreign);
    assertThat(sim.liveSandboxes()).as("a live sandbox stays").contains(kept.getString("provider_resource_id"));
    assertThat(gw.awaitOrphanStatus(orphan, "deleted")).isEqualTo("deleted");
    keep(gw.delete("/v1/sandboxes/" + kept.getString("id"), org));
  }

  @Test
  void providers_list_modal_and_a_restarted_gateway_serves_its_sandboxes_and_ends_an_expired_one() throws Exception {
    JsonObject modal = null;
    for (Object o : keep(gw.get("/v1/providers", key)).json().getJsonArray("items")) {
      if ("modal".equals(((JsonObject) o).getString("backend"))) {
        modal = (JsonObject) o;
      }
    }
    assertThat(modal).as("GET /v1/providers lists modal").isNotNull();
    assertThat(modal.getBoolean("configured")).isTrue();

    JsonObject kept = createModal(new JsonObject().put("timeout_secs", 300));
    JsonObject expiring = createModal(new JsonObject().put("timeout_secs", 3));
    gw = gw.restarted();
    Resp r = exec(kept.getString("id"), new JsonObject().put("command", "echo after restart"));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getString("stdout")).isEqualTo("after restart\n");
    ai.bespokelabs.sandbox.testkit.Waits.upTo(20).untilAsserted(() -> assertThat(sim.liveSandboxes())
        .as("the supervisor ended the expired sandbox").doesNotContain(expiring.getString("provider_resource_id")));
    ai.bespokelabs.sandbox.testkit.Waits.upTo(20).untilAsserted(() -> assertThat(keep(gw.get("/v1/sandboxes/"
        + expiring.getString("id"), key)).json().getString("termination_reason")).isEqualTo("ttl_expired"));
    keep(gw.delete("/v1/sandboxes/" + kept.getString("id"), key));
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.fail("SandboxCreate", GrpcStatus.UNAUTHENTICATED);
    Resp auth = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal")));
    JsonObject detail = auth.json().getJsonObject("detail");
    assertThat(detail.getString("code")).as(auth.body()).isEqualTo("authentication");
    assertThat(auth.status()).isEqualTo(502);
    assertThat(detail.getString("backend")).isEqualTo("modal");
    assertThat(detail.getBoolean("retryable")).isFalse();

    sim.fail("SandboxCreate", GrpcStatus.RESOURCE_EXHAUSTED);
    Resp busy = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal")));
    assertThat(busy.json().getJsonObject("detail").getBoolean("retryable")).as(busy.body()).isTrue();

    Resp gpu = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal").put("gpu", "H100:0")));
    assertThat(gpu.status()).as(gpu.body()).isEqualTo(422);
  }

  /**
   * A sandbox's first program looks its task up at Modal: Modal not knowing the sandbox is {@code not_found};
   * answering too slowly, a {@code timeout} at the request timeout; a refusal with gRPC's retry pushback is
   * retryable with that wait. The sandbox is served once Modal answers again.
   */
  @Test
  void not_found_a_slow_answer_and_a_retry_pushback_reach_the_client_in_the_error_contract() {
    String id = createModal(new JsonObject()).getString("id");
    JsonObject command = new JsonObject().put("command", "echo reached");
    sim.fail("SandboxGetTaskId", GrpcStatus.NOT_FOUND);
    ProviderFailures.assertFailure(exec(id, command), ProviderFailures.payload("not_found", "modal", "execute", false,
        "failed", new JsonObject().put("provider_code", "not_found")));

    sim.delay("SandboxGetTaskId", ProviderFailures.SLOW_ANSWER_MS);
    ProviderFailures.assertTimesOut(() -> exec(id, command), ProviderFailures.payload("timeout", "modal", "execute",
        true, "unknown", new JsonObject()));

    sim.fail("SandboxGetTaskId", GrpcStatus.UNAVAILABLE, 1_500L);
    ProviderFailures.assertFailure(exec(id, command), ProviderFailures.payload("connection", "modal", "execute", true,
        "unknown", new JsonObject().put("provider_code", "unavailable").put("retry_after_ms", 1500)
            .put("retry_after_secs", 2)));
    sim.fail("SandboxCreate", GrpcStatus.RESOURCE_EXHAUSTED, 4_000L);
    ProviderFailures.assertWaitHint(keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal"))),
        "modal", 4);

    Resp served = exec(id, command);
    assertThat(served.status()).as(served.body()).isEqualTo(200);
    assertThat(served.json().getString("stdout")).isEqualTo("reached\n");
    keep(gw.delete("/v1/sandboxes/" + id, key));
  }

  /**
   * A create whose answer is lost after Modal created the sandbox: the sandboxes tagged with its create token
   * are terminated, exactly once, and the client learns {@code cleanup_status deleted} (so it may retry).
   */
  @Test
  void a_create_whose_answer_is_lost_is_terminated_exactly_once() throws Exception {
    java.util.Set<String> before = sim.liveSandboxes();
    int creates = sim.calls("SandboxCreate");
    int terminates = sim.calls("SandboxTerminate");
    sim.failAfter("SandboxCreate", GrpcStatus.UNAVAILABLE);
    Resp lost = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "modal")));
    ProviderFailures.assertFailure(lost, ProviderFailures.payload("connection", "modal", "create", true, "failed",
        new JsonObject().put("provider_code", "unavailable").put("cleanup_status", "deleted")));
    assertThat(sim.calls("SandboxCreate")).as("Modal created it, once").isEqualTo(creates + 1);
    assertThat(sim.calls("SandboxTerminate")).as("terminated once").isEqualTo(terminates + 1);
    assertThat(sim.liveSandboxes()).as("nothing was left behind").isEqualTo(before);
    Thread.sleep(1_500); // a supervision pass (every second here) terminates nothing more
    assertThat(sim.calls("SandboxTerminate")).isEqualTo(terminates + 1);
  }
}
