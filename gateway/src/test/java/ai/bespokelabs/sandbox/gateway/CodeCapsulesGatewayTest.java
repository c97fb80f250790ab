package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.codecapsules.CodeCapsulesSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
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

/**
 * The codecapsules backend through the gateway's API, against the CodeCapsules simulator; at the end, the
 * CodeCapsules key appears in no response body, no log event (ours at debug level included) and no database row.
 */
class CodeCapsulesGatewayTest {
  static CodeCapsulesSimulator sim;
  static TestGateway gw;
  static String key;
  static SecretWatch watch;
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = CodeCapsulesSimulator.start();
    Map<String, String> env = new HashMap<>(sim.env());
    env.put("BESPOKE_SUPERVISION_INTERVAL_SECS", "1");
    env.put("CODECAPSULES_REQUEST_TIMEOUT_SECS", String.valueOf(ProviderFailures.REQUEST_TIMEOUT_SECS));
    gw = new TestGateway(env);
    key = gw.bootstrap("CodeCapsules users");
  }

  @AfterEach
  void conforming() {
    sim.faults().clear();
    assertThat(sim.violations()).as("requests the assumed layout refuses").isEmpty();
  }

  @AfterAll
  static void stop() {
    try {
      watch.assertNeverLeaked(gw, "codecapsules", CodeCapsulesSimulator.API_KEY);
    } finally {
      watch.stop();
      gw.close();
      sim.close();
    }
  }

  static Resp keep(Resp r) {
    return watch.seen(r);
  }

  static JsonObject create(JsonObject extra) {
    Resp r = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules").mergeIn(extra)));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    return r.json();
  }

  static Resp exec(String id, JsonObject body) {
    return keep(gw.post("/v1/sandboxes/" + id + "/execute", key, body));
  }

  static String q(String s) {
    return java.net.URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  @Test
  void full_lifecycle_over_rest_sse_and_websocket_with_stdin_and_files() throws Exception {
    JsonObject sbx = create(new JsonObject().put("timeout_secs", 600).put("cpu", 2).put("memory_mb", 1024)
        .put("env_vars", new JsonObject().put("GREETING", "hello from codecapsules")));
    String id = sbx.getString("id");
    String rid = sbx.getString("provider_resource_id");
    assertThat(sbx.getString("status")).isEqualTo("running");
    CodeCapsulesSimulator.Sandbox remote = sim.sandboxes().get(rid);
    assertThat(remote.metadata).containsEntry("bespoke_sandbox_id", id).containsKey("bespoke_create_token");
    assertThat(remote.cpu).isEqualTo(2);
    assertThat(remote.memory).isEqualTo(1024);
    assertThat(remote.ttlMinutes).isEqualTo(10);

    Resp sh = exec(id, new JsonObject().put("command", "echo \"$GREETING\"; exit 4"));
    assertThat(sh.json().getString("stdout")).isEqualTo("hello from codecapsules\n");
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

    String text = "#!/bin/sh\necho hello from codecapsules $1\n";
    java.net.http.HttpResponse<String> script = HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base
            + "/v1/sandboxes/" + id + "/files/content?path=" + q("bin/hello.sh") + "&executable=true"))
        .header("Authorization", "Bearer " + key).PUT(java.net.http.HttpRequest.BodyPublishers.ofString(text)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    watch.seen(script.body());
    assertThat(script.statusCode()).as(script.body()).isEqualTo(201);
    assertThat(new JsonObject(script.body()).getString("mode")).isEqualTo("0755");
    Resp ran = exec(id, new JsonObject().put("command", "bin/hello.sh").put("args", new JsonArray().add("ok")));
    assertThat(ran.json().getString("stdout")).isEqualTo("hello from codecapsules ok\n");
    JsonObject listed = keep(gw.get("/v1/sandboxes/" + id + "/files?path=bin", key)).json();
    assertThat(listed.getJsonArray("entries")).hasSize(1);
    assertThat(listed.getJsonArray("entries").getJsonObject(0).getLong("size")).isEqualTo((long) text.length());
    java.net.http.HttpResponse<byte[]> down = HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base
            + "/v1/sandboxes/" + id + "/files/content?path=" + q("bin/hello.sh"))).header("Authorization", "Bearer " + key)
        .GET().build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray());
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(new String(down.body(), StandardCharsets.UTF_8)).isEqualTo(text);
    byte[] tree = FilesTest.getArchive(gw, key, id, "bin");
    assertThat(FilesTest.putArchive(gw, key, id, "copy/bin", tree).statusCode()).isEqualTo(201);
    assertThat(exec(id, new JsonObject().put("command", "copy/bin/hello.sh")).json().getString("stdout"))
        .isEqualTo("hello from codecapsules\n");
    assertThat(keep(gw.delete("/v1/sandboxes/" + id + "/files?path=copy&recursive=true", key)).status())
        .isEqualTo(204);

    Resp m = keep(gw.get("/v1/sandboxes/" + id + "/metrics", key));
    assertThat(m.status()).as(m.body()).isEqualTo(200);
    assertThat(m.json().getDouble("memory_limit_mb")).isEqualTo(1024.0);

    assertThat(keep(gw.post("/v1/providers/codecapsules/health-check", key, null)).json().getString("status"))
        .isEqualTo("healthy");
    JsonObject provider = keep(gw.get("/v1/providers", key)).json().getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(p -> p.getString("backend").equals("codecapsules")).findFirst()
        .orElseThrow();
    assertThat(provider.encode()).contains("files", "metrics");

    Resp gone = keep(gw.delete("/v1/sandboxes/" + id, key));
    assertThat(gone.status()).isEqualTo(200);
    assertThat(gone.json().getString("status")).isEqualTo("destroyed");
    assertThat(sim.sandboxes()).doesNotContainKey(rid);
  }

  @Test
  void the_files_api_resolves_relative_paths_under_the_working_directory_and_refuses_escapes() throws Exception {
    JsonObject sbx = create(new JsonObject());
    String id = sbx.getString("id");
    java.nio.file.Path workspace = sim.sandboxes().get(sbx.getString("provider_resource_id")).workspace();
    java.net.http.HttpResponse<String> put = HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base
            + "/v1/sandboxes/" + id + "/files/content?path=" + q("notes/hello.txt")))
        .header("Authorization", "Bearer " + key).PUT(java.net.http.HttpRequest.BodyPublishers.ofString("hi\n"))
        .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    watch.seen(put.body());
    assertThat(put.statusCode()).as(put.body()).isEqualTo(201);
    assertThat(new JsonObject(put.body()).getString("path")).isEqualTo(workspace.resolve("notes/hello.txt").toString());
    assertThat(workspace.resolve("notes/hello.txt")).hasContent("hi\n");
    assertThat(exec(id, new JsonObject().put("command", "cat notes/hello.txt")).json().getString("stdout"))
        .isEqualTo("hi\n");
    JsonObject listed = keep(gw.get("/v1/sandboxes/" + id + "/files?path=notes", key)).json();
    assertThat(listed.getJsonArray("entries").getJsonObject(0).getString("path"))
        .isEqualTo(workspace.resolve("notes/hello.txt").toString());
    java.net.http.HttpResponse<String> down = HTTP.send(java.net.http.HttpRequest.newBuilder(URI.create(gw.base
            + "/v1/sandboxes/" + id + "/files/content?path=" + q("./notes/hello.txt")))
        .header("Authorization", "Bearer " + key).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.body()).isEqualTo("hi\n");

    for (String escape : List.of("../outside.txt", "notes/../../outside.txt")) {
      Resp r = keep(gw.get("/v1/sandboxes/" + id + "/files/content?path=" + q(escape), key));
      assertThat(r.status()).as(escape).isEqualTo(422);
      assertThat(r.json().getString("detail")).isEqualTo("path must stay inside the sandbox");
      Resp d = keep(gw.delete("/v1/sandboxes/" + id + "/files?path=" + q(escape), key));
      assertThat(d.status()).as(escape).isEqualTo(422);
    }
    assertThat(keep(gw.delete("/v1/sandboxes/" + id + "/files?path=" + q("notes/hello.txt"), key)).status())
        .isEqualTo(204);
    assertThat(workspace.resolve("notes/hello.txt")).doesNotExist();
    keep(gw.delete("/v1/sandboxes/" + id, key));
  }

  @Test
  void limits_are_refused_before_any_call_and_reconciliation_looks_up_known_sandboxes() throws Exception {
    int before = sim.requests().size();
    for (JsonObject bad : List.of(new JsonObject().put("memory_mb", 9000), new JsonObject().put("cpu", 8),
        new JsonObject().put("timeout_secs", 480 * 60 + 60), new JsonObject().put("template", "ubuntu"))) {
      Resp r = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules").mergeIn(bad)));
      assertThat(r.status()).as(bad.encode() + " " + r.body()).isEqualTo(422);
    }
    assertThat(sim.requests()).hasSize(before);

    String org = gw.bootstrap("CodeCapsules reconcile");
    JsonObject kept = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "codecapsules"))).json();
    JsonObject vanishing = keep(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "codecapsules")))
        .json();
    Resp r = keep(gw.post("/v1/reconciliation/codecapsules", org, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getString("status")).as("the known sandboxes were looked up").isEqualTo("ok");
    assertThat(r.json().getInteger("updated")).isEqualTo(2);
    assertThat(r.json().getInteger("missing")).isZero();

    String rid = vanishing.getString("provider_resource_id");
    java.net.http.HttpResponse<String> deleted = HTTP.send(java.net.http.HttpRequest.newBuilder(
            URI.create(sim.apiUrl() + "/sandboxes/" + rid)).header("Authorization", "Bearer "
            + CodeCapsulesSimulator.API_KEY).DELETE().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(deleted.statusCode()).as("deleted behind the gateway's back").isEqualTo(204);
    Resp again = keep(gw.post("/v1/reconciliation/codecapsules", org, null));
    assertThat(again.json().getString("status")).as(again.body()).isEqualTo("ok");
    // this run or a supervision pass before it found it missing
    JsonObject failed = ai.bespokelabs.sandbox.testkit.Waits.upTo(10).alias("the vanished sandbox failed")
        .until(() -> keep(gw.get("/v1/sandboxes/" + vanishing.getString("id"), org)).json(),
            s -> "failed".equals(s.getString("status")));
    assertThat(failed.getBoolean("provider_missing")).isTrue();
    assertThat(keep(gw.get("/v1/sandboxes/" + kept.getString("id"), org)).json().getString("status"))
        .isEqualTo("running");

    sim.faults().status(HttpMethod.GET, "/v1/sandboxes/", 503, Map.of(), null, 1_000);
    Resp outage = keep(gw.post("/v1/reconciliation/codecapsules", org, null));
    sim.faults().clear();
    assertThat(outage.json().getString("status")).as("a lookup failing changes nothing").isEqualTo("partial_outage");
    assertThat(keep(gw.get("/v1/sandboxes/" + kept.getString("id"), org)).json().getString("status"))
        .isEqualTo("running");
    keep(gw.delete("/v1/sandboxes/" + kept.getString("id"), org));
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 401, Map.of(), null, 1);
    ProviderFailures.assertFailure(keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules"))),
        ProviderFailures.payload("authentication", "codecapsules", "create", false, "failed",
            new JsonObject().put("provider_status", 401)));

    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 429, Map.of("Retry-After", "12"), null, 1);
    ProviderFailures.assertFailure(keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules"))),
        ProviderFailures.payload("creation_failed", "codecapsules", "create", true, "failed", new JsonObject()
            .put("provider_status", 429).put("retry_after_secs", 12).put("retry_after_ms", 12_000)));
    // the wait hint in the error body instead of the header (milliseconds, rounded up to whole seconds)
    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 503, Map.of(), new JsonObject().put("error",
        new JsonObject().put("code", "rate_limited").put("message", "slow down").put("retryAfterMs", 1500)), 1);
    JsonObject unavailable = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules")))
        .json().getJsonObject("detail");
    assertThat(unavailable).isEqualTo(ProviderFailures.payload("creation_failed", "codecapsules", "create", true,
        "failed", new JsonObject().put("provider_status", 503).put("provider_code", "rate_limited")
            .put("retry_after_ms", 1500).put("retry_after_secs", 2)));

    JsonObject sbx = create(new JsonObject());
    String rid = sbx.getString("provider_resource_id");
    sim.faults().status(HttpMethod.POST, "/v1/sandboxes/" + rid + "/exec", 404, Map.of(), null, 1);
    ProviderFailures.assertFailure(exec(sbx.getString("id"), new JsonObject().put("command", "true")),
        ProviderFailures.payload("not_found", "codecapsules", "execute", false, "failed",
            new JsonObject().put("provider_status", 404)));

    sim.faults().delay(HttpMethod.GET, "/v1/sandboxes/" + rid + "/metrics", ProviderFailures.SLOW_ANSWER_MS, 1);
    ProviderFailures.assertTimesOut(() -> keep(gw.get("/v1/sandboxes/" + sbx.getString("id") + "/metrics", key)),
        ProviderFailures.payload("timeout", "codecapsules", "metrics", true, "failed", new JsonObject()));
    assertThat(keep(gw.get("/v1/sandboxes/" + sbx.getString("id") + "/metrics", key)).status()).isEqualTo(200);
    keep(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key));
  }

  /**
   * A create CodeCapsules allocated but that cannot be used (its env vars could not be written) is deleted
   * exactly once and reported {@code cleanup_status deleted}, so it may be retried. A create whose answer is lost or comes too late
   * cannot be cleaned up: CodeCapsules has no list operation to find it by its create token, so it is reported
   * {@code cleanup_status unknown} and nothing is deleted (the sandbox ends at its ttl).
   */
  @Test
  void a_create_that_allocated_is_deleted_exactly_once_and_a_lost_one_is_reported_unknown() throws Exception {
    int deletes = sim.deletes();
    int sandboxes = sim.sandboxes().size();
    sim.faults().status(HttpMethod.PUT, "/v1/sandboxes/", 500, Map.of(), null, 1);
    Resp unusable = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules")
        .put("env_vars", new JsonObject().put("GREETING", "never written"))));
    ProviderFailures.assertFailure(unusable, ProviderFailures.payload("creation_failed", "codecapsules", "create",
        true, "failed", new JsonObject().put("provider_status", 500).put("cleanup_status", "deleted")));
    JsonObject failed = keep(gw.get("/v1/sandboxes?limit=1", key)).array().getJsonObject(0);
    assertThat(failed.getString("status")).isEqualTo("failed");
    assertThat(failed.getString("retry_status")).as("nothing is left: it may be created again").isEqualTo("retryable");
    assertThat(sim.deletes()).as("deleted once").isEqualTo(deletes + 1);
    assertThat(sim.sandboxes()).hasSize(sandboxes);
    Thread.sleep(1_500); // a supervision pass (every second here) deletes nothing more
    assertThat(sim.deletes()).isEqualTo(deletes + 1);

    sim.faults().loseResponse(HttpMethod.POST, "/v1/sandboxes", 1);
    Resp lost = keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "codecapsules")));
    ProviderFailures.assertFailure(lost, ProviderFailures.payload("connection", "codecapsules", "create", false,
        "unknown", new JsonObject().put("cleanup_status", "unknown")));
    assertThat(sim.sandboxes()).as("CodeCapsules created it").hasSize(sandboxes + 1);

    sim.faults().delay(HttpMethod.POST, "/v1/sandboxes", ProviderFailures.SLOW_ANSWER_MS, 1);
    ProviderFailures.assertTimesOut(() -> keep(gw.post("/v1/sandboxes", key, new JsonObject().put("backend",
        "codecapsules"))), ProviderFailures.payload("timeout", "codecapsules", "create", false, "unknown",
        new JsonObject().put("cleanup_status", "unknown")));
    assertThat(sim.deletes()).as("nothing to delete by").isEqualTo(deletes + 1);
  }

  @Test
  void a_sandbox_is_served_after_a_gateway_restart_with_its_env_values_and_its_deadline() {
    JsonObject sbx = create(new JsonObject().put("env_vars", new JsonObject().put("GREETING", "before")));
    String id = sbx.getString("id");
    assertThat(exec(id, new JsonObject().put("command", "echo \"$GREETING\"")).json().getString("stdout"))
        .isEqualTo("before\n");
    gw = gw.restarted();
    JsonObject after = keep(gw.get("/v1/sandboxes/" + id, key)).json();
    assertThat(after.getString("status")).isEqualTo("running");
    Resp ran = exec(id, new JsonObject().put("command", "echo \"${GREETING:-unset}\""));
    assertThat(ran.status()).as(ran.body()).isEqualTo(200);
    assertThat(ran.json().getString("stdout")).as("read back from the sandbox").isEqualTo("before\n");
    Resp deadline = keep(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 1)));
    assertThat(deadline.status()).as(deadline.body()).isEqualTo(200);
    JsonObject ended = ai.bespokelabs.sandbox.testkit.Waits.upTo(15).alias(id + " destroyed")
        .until(() -> keep(gw.get("/v1/sandboxes/" + id, key)).json(), s -> "destroyed".equals(s.getString("status")));
    assertThat(ended.getString("termination_reason")).isEqualTo("ttl_expired");
    assertThat(sim.sandboxes()).doesNotContainKey(sbx.getString("provider_resource_id"));

    JsonObject other = create(new JsonObject().put("env_vars", new JsonObject().put("GREETING", "x")));
    gw = gw.restarted();
    assertThat(keep(gw.delete("/v1/sandboxes/" + other.getString("id"), key)).status()).isEqualTo(200);
    assertThat(sim.sandboxes()).doesNotContainKey(other.getString("provider_resource_id"));
  }
}
