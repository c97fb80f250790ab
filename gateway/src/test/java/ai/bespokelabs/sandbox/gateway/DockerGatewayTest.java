package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.docker.TestEngine;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The docker backend through the gateway's API, against a real Docker Engine API (Podman's). */
class DockerGatewayTest {
  static TestEngine engine;
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "DOCKER_HOST", TestEngine.get().dockerHost(), "BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE,
      "BESPOKE_SUPERVISION_INTERVAL_SECS", "1"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    engine = TestEngine.get();
    key = gw.bootstrap("Containers");
  }

  static boolean exists(String container) {
    try {
      engine.podman("container", "exists", container);
      return true;
    } catch (IllegalStateException e) {
      return false;
    }
  }

  static JsonObject awaitSandbox(TestGateway g, String id, String status) {
    return Waits.upTo(15).alias(id + " became " + status).until(() -> g.get("/v1/sandboxes/" + id, key).json(),
        s -> status.equals(s.getString("status")));
  }

  @Test
  void a_container_sandbox_runs_streams_takes_stdin_and_is_destroyed() throws Exception {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false)
        .put("memory_mb", 256).put("env_vars", new JsonObject().put("GREETING", "hello")));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    String container = created.json().getString("provider_resource_id");
    assertThat(exists(container)).isTrue();
    JsonObject labels = new JsonArray(engine.podman("inspect", container)).getJsonObject(0).getJsonObject("Config")
        .getJsonObject("Labels");
    assertThat(labels.getString("ai.bespokelabs.sandbox.sandbox")).isEqualTo(id);
    assertThat(labels.getString("ai.bespokelabs.sandbox.organization")).isNotBlank();

    Resp run = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "echo $GREETING; echo oops >&2; exit 3"));
    assertThat(run.json().getString("stdout")).isEqualTo("hello\n");
    assertThat(run.json().getString("stderr")).isEqualTo("oops\n");
    assertThat(run.json().getInteger("exit_code")).isEqualTo(3);

    Resp started = gw.post("/v1/sandboxes/" + id + "/executions", key,
        new JsonObject().put("command", "echo ready; while read l; do echo \"got $l\"; done").put("stdin", true));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String exec = started.json().getString("id");
    HttpResponse<String> stdin = gw.client.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
            + "/executions/" + exec + "/stdin?eof=true")).header("Authorization", "Bearer " + key)
        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString("one\ntwo\n")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(stdin.statusCode()).as(stdin.body()).isBetween(200, 204);
    HttpResponse<String> sse = gw.client.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
            + "/executions/" + exec + "/stream")).header("Authorization", "Bearer " + key)
        .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
    assertThat(sse.body()).contains("event: stdout").contains("event: exit");
    JsonObject result = gw.get("/v1/sandboxes/" + id + "/executions/" + exec, key).json();
    assertThat(result.getString("status")).isEqualTo("completed");
    assertThat(result.getString("stdout")).isEqualTo("ready\ngot one\ngot two\n");

    // files: upload (parents created, executable bit), run, list, download, delete
    HttpResponse<String> up = FilesTest.HTTP1.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
            + "/files/content?path=/data/tool.sh&executable=true")).header("Authorization", "Bearer " + key)
        .PUT(HttpRequest.BodyPublishers.ofString("#!/bin/sh\necho tool $1\n")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    assertThat(new JsonObject(up.body()).getString("mode")).isEqualTo("0755");
    assertThat(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "/data/tool.sh")
        .put("args", new JsonArray().add("ran"))).json().getString("stdout")).isEqualTo("tool ran\n");
    byte[] blob = new byte[3 << 20];
    new java.util.Random(7).nextBytes(blob);
    HttpResponse<String> big = FilesTest.HTTP1.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
            + "/files/content?path=data/blob.bin")).header("Authorization", "Bearer " + key)
        .PUT(HttpRequest.BodyPublishers.ofByteArray(blob)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(big.statusCode()).as(big.body()).isEqualTo(201);
    HttpResponse<byte[]> down = gw.client.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id
        + "/files/content?path=/workspace/data/blob.bin")).header("Authorization", "Bearer " + key).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.body()).isEqualTo(blob);
    JsonObject listed = gw.get("/v1/sandboxes/" + id + "/files?path=/data", key).json();
    assertThat(listed.getJsonArray("entries").stream().map(o -> ((JsonObject) o).getString("path") + " "
        + ((JsonObject) o).getLong("size"))).containsExactly("/data/tool.sh 23");
    assertThat(gw.get("/v1/sandboxes/" + id + "/files/content?path=/data", key).status()).isEqualTo(422);
    assertThat(gw.get("/v1/sandboxes/" + id + "/files/content?path=/data/none", key).status()).isEqualTo(404);
    assertThat(gw.delete("/v1/sandboxes/" + id + "/files?path=data", key).status()).isEqualTo(409);
    assertThat(gw.delete("/v1/sandboxes/" + id + "/files?path=data&recursive=true", key).status()).isEqualTo(204);
    assertThat(gw.get("/v1/sandboxes/" + id + "/files?path=data", key).status()).isEqualTo(404);

    // a directory round trips as tar.gz with its modes
    gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command",
        "mkdir -p tree/sub && echo a > tree/a.txt && printf '#!/bin/sh\\necho x\\n' > tree/sub/x.sh && chmod 750 tree/sub/x.sh"));
    byte[] archive = FilesTest.getArchive(gw, key, id, "tree");
    HttpResponse<String> extracted = FilesTest.putArchive(gw, key, id, "/data/copy", archive);
    assertThat(extracted.statusCode()).as(extracted.body()).isEqualTo(201);
    assertThat(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command",
        "cd /data/copy && find . | sort && stat -c '%a' sub/x.sh && sub/x.sh")).json().getString("stdout"))
        .isEqualTo(".\n./a.txt\n./sub\n./sub/x.sh\n750\nx\n");
    assertThat(FilesTest.putArchive(gw, key, id, "/data/broken", "junk".getBytes()).statusCode()).isEqualTo(422);

    // a snapshot keeps the file system; a sandbox created from it starts with it, for this organization only
    assertThat(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command",
        "echo kept > /data/state.txt")).json().getInteger("exit_code")).isZero();
    Resp snap = gw.post("/v1/sandboxes/" + id + "/snapshot", key, null);
    assertThat(snap.status()).as(snap.body()).isEqualTo(201);
    String snapshotId = snap.json().getString("snapshot_id");
    Resp restored = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false)
        .put("snapshot_id", snapshotId));
    assertThat(restored.status()).as(restored.body()).isEqualTo(201);
    String restoredId = restored.json().getString("id");
    assertThat(gw.post("/v1/sandboxes/" + restoredId + "/execute", key, new JsonObject().put("command",
        "cat /data/state.txt")).json().getString("stdout")).isEqualTo("kept\n");
    String other = gw.bootstrap("Other");
    Resp foreign = gw.post("/v1/sandboxes", other, new JsonObject().put("backend", "docker").put("snapshot_id", snapshotId));
    assertThat(foreign.status()).isEqualTo(404);
    assertThat(foreign.detail()).isEqualTo("snapshot not found");
    gw.delete("/v1/sandboxes/" + restoredId, key);
    JsonObject local = gw.sandbox(key, null);
    Resp unsupported = gw.post("/v1/sandboxes/" + local.getString("id") + "/snapshot", key, null);
    assertThat(unsupported.status()).isEqualTo(502);
    assertThat(unsupported.json().getJsonObject("detail").getString("code")).isEqualTo("feature_not_supported");

    // no If-Match: the supervisor's reconciliation (every second here) may raise the version at any moment
    Resp deleted = gw.delete("/v1/sandboxes/" + id, key);
    assertThat(deleted.status()).as(deleted.body()).isBetween(200, 204);
    assertThat(awaitSandbox(gw, id, "destroyed").getString("status")).isEqualTo("destroyed");
    assertThat(exists(container)).isFalse();
  }

  @Test
  void reconciliation_finds_a_container_made_behind_the_gateways_back_and_the_supervisor_removes_it()
      throws Exception {
    String orphan = engine.podman("run", "-d", "--label", "ai.bespokelabs.sandbox.managed=true", "--label",
        "ai.bespokelabs.sandbox.sandbox=sbx_" + "cd".repeat(16), "--network", "none", TestEngine.IMAGE, "sleep", "600");
    Resp r = gw.post("/v1/reconciliation/docker", key, null);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getString("status")).isEqualTo("ok");
    Waits.upTo(15).untilAsserted(
        () -> assertThat(exists(orphan)).as("the supervisor removed the orphan container").isFalse());
  }

  @Test
  void a_restarted_gateway_terminates_a_container_that_expired_while_it_was_down() throws Exception {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false)
        .put("timeout_secs", 3));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    String container = created.json().getString("provider_resource_id");
    gw = gw.restarted();
    JsonObject s = awaitSandbox(gw, id, "destroyed");
    assertThat(s.getString("termination_reason")).isEqualTo("ttl_expired");
    assertThat(exists(container)).isFalse();
  }

  @Test
  void a_command_ended_by_its_sandboxs_timeout_reports_a_timeout() throws Exception {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false)
        .put("timeout_secs", 3));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    // the command's own timeout is longer, so only the sandbox's deadline can end it
    Resp r = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 60));
    assertThat(r.json().getInteger("exit_code")).as(r.body()).isEqualTo(124);
    assertThat(r.json().getBoolean("timed_out")).isTrue();
    assertThat(r.json().getString("stdout")).isEqualTo("started\n");
    assertThat(r.json().getString("stderr"))
        .matches("Command timed out after [0-9.]+s: the sandbox reached its timeout\n");
    assertThat(awaitSandbox(gw, id, "destroyed").getString("termination_reason")).isEqualTo("ttl_expired");
  }

  /** A stand-in for Claude Code in a busybox container: the JSON result, echoing the prompt (its last argument). */
  static final String CLAUDE_SH = "last=; for a in \"$@\"; do last=$a; done; "
      + "printf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"echo %s\","
      + "\"session_id\":\"d1\",\"total_cost_usd\":0.5,\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}\\n' \"$last\"";

  @Test
  void an_agent_run_in_a_container_is_read_and_priced() {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("memory_mb", 256));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    Resp run = gw.post("/v1/sandboxes/" + id + "/agent-runs", key, new JsonObject().put("agent", "claude-code")
        .put("prompt", "in a box").put("command", new JsonArray().add("sh").add("-c").add(CLAUDE_SH).add("claude")));
    assertThat(run.status()).as(run.body()).isEqualTo(200);
    assertThat(run.json().getString("text")).isEqualTo("echo in a box");
    assertThat(run.json().getString("session_id")).isEqualTo("d1");
    assertThat(run.json().getJsonObject("usage").getLong("total_tokens")).isEqualTo(7);
    Resp missing = gw.post("/v1/sandboxes/" + id + "/agent-runs", key, new JsonObject().put("agent", "codex")
        .put("prompt", "x"));
    assertThat(missing.json().getString("error"))
        .isEqualTo("codex is not installed in this sandbox: create the sandbox with the preset codex (or claude-code-codex)");
    assertThat(gw.get("/v1/sandboxes/" + id + "/usage", key).json().getLong("runs")).isEqualTo(2);
    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
  }
}
