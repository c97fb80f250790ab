package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.docker.TestEngine;
import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Sandbox logs (every backend, from the database) and live metrics (local, bwrap, docker, e2b). */
class LogsAndMetricsTest {
  static E2bSimulator sim;
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    sim = E2bSimulator.start();
    Map<String, String> env = new HashMap<>(sim.env());
    env.put("DOCKER_HOST", TestEngine.get().dockerHost());
    env.put("BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE);
    gw = new TestGateway(env);
    key = gw.bootstrap("Observers");
  }

  @AfterAll
  static void stop() {
    gw.close();
    sim.close();
  }

  static Resp execute(String sandboxId, String command) {
    Resp r = gw.post("/v1/sandboxes/" + sandboxId + "/execute", key, new JsonObject().put("command", command));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r;
  }

  static String logsPath(String sandboxId, String query) {
    return "/v1/sandboxes/" + sandboxId + "/logs" + (query == null ? "" : "?" + query);
  }

  static String q(String v) {
    return URLEncoder.encode(v, StandardCharsets.UTF_8);
  }

  @Test
  void logs_tell_the_lifecycle_and_the_executions_oldest_first_in_pages() {
    String id = gw.sandbox(key, null).getString("id");
    String ok = execute(id, "echo fine").json().getString("execution_id");
    String failing = execute(id, "echo broken >&2; exit 3").json().getString("execution_id");
    assertThat(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 600)).status())
        .isEqualTo(200);
    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);

    Resp all = gw.get(logsPath(id, null), key);
    assertThat(all.status()).as(all.body()).isEqualTo(200);
    assertThat(all.header("X-Next-Cursor")).isNull();
    List<JsonObject> entries = objects(all.array());
    assertThat(entries).extracting(e -> e.getString("source") + " " + e.getString("message").replaceAll(", \\d+ ms$",
        ", N ms") + " " + e.getString("exec_id")).containsExactly(
        "system sandbox requested on backend local null",
        "system sandbox created and running null",
        "exec execution started " + ok,
        "exec execution finished: status completed, exit code 0, N ms " + ok,
        "exec execution started " + failing,
        "exec execution finished: status completed, exit code 3, N ms " + failing,
        "system deadline set to " + entries.get(6).getString("message").substring("deadline set to ".length()) + " null",
        "system termination requested null",
        "system sandbox destroyed (reason: operator) null");
    assertThat(entries.get(6).getString("message")).matches("deadline set to \\d{4}-.*");
    for (int i = 1; i < entries.size(); i++) {
      assertThat(OffsetDateTime.parse(entries.get(i).getString("ts")))
          .isAfterOrEqualTo(OffsetDateTime.parse(entries.get(i - 1).getString("ts")));
    }
    assertThat(entries.get(0).fieldNames()).containsExactlyInAnyOrder("ts", "source", "message", "exec_id");

    // pages of 4 by cursor add up to the whole log
    List<JsonObject> paged = new ArrayList<>();
    String cursor = null;
    int pages = 0;
    do {
      Resp page = gw.get(logsPath(id, "limit=4" + (cursor == null ? "" : "&cursor=" + q(cursor))), key);
      assertThat(page.status()).as(page.body()).isEqualTo(200);
      assertThat(page.array().size()).isLessThanOrEqualTo(4);
      paged.addAll(objects(page.array()));
      cursor = page.header("X-Next-Cursor");
      if (cursor != null) {
        assertThat(page.header("X-Next-Since")).isEqualTo(paged.get(paged.size() - 1).getString("ts"));
      }
      pages++;
    } while (cursor != null);
    assertThat(pages).isEqualTo(3);
    assertThat(paged).isEqualTo(entries);

    // since is exclusive: everything strictly after the third entry's time
    String since = entries.get(2).getString("ts");
    List<JsonObject> later = objects(gw.get(logsPath(id, "since=" + q(since)), key).array());
    assertThat(later).isEqualTo(entries.stream()
        .filter(e -> OffsetDateTime.parse(e.getString("ts")).isAfter(OffsetDateTime.parse(since))).toList());
    assertThat(later).hasSize(entries.size() - 3);
    assertThat(gw.get(logsPath(id, "since=" + q(entries.get(8).getString("ts"))), key).array()).isEmpty();

    // bad input and other organizations
    assertThat(gw.get(logsPath(id, "limit=0"), key).status()).isEqualTo(422);
    assertThat(gw.get(logsPath(id, "limit=1001"), key).status()).isEqualTo(422);
    assertThat(gw.get(logsPath(id, "since=yesterday"), key).status()).isEqualTo(422);
    assertThat(gw.get(logsPath(id, "cursor=%21%21"), key).status()).isEqualTo(422);
    String other = gw.bootstrap("Strangers");
    for (String path : List.of(logsPath(id, null), "/v1/sandboxes/" + id + "/metrics")) {
      Resp foreign = gw.get(path, other);
      assertThat(foreign.status()).isEqualTo(404);
      assertThat(foreign.detail()).isEqualTo("sandbox not found");
    }
    assertThat(gw.get(logsPath("sbx_00000000000000000000000000000000", null), key).status()).isEqualTo(404);
    String reader = gw.key(key, "sandboxes:read");
    assertThat(gw.get(logsPath(id, null), reader).status()).isEqualTo(200);
    String creator = gw.key(key, "sandboxes:create");
    assertThat(gw.get(logsPath(id, null), creator).status()).isEqualTo(403);
  }

  @Test
  void local_metrics_show_a_busy_program_its_memory_and_the_files_written() throws Exception {
    hostMetrics("local");
  }

  @Test
  void bwrap_metrics_see_the_processes_inside_the_sandbox() throws Exception {
    hostMetrics("bwrap");
  }

  /** A host-process backend's metrics: idle with a 5 MiB file, then a program holding 64 MiB and spinning. */
  static void hostMetrics(String backend) throws Exception {
    String id = gw.sandbox(key, new JsonObject().put("backend", backend).put("memory_mb", 512).put("disk_mb", 2048))
        .getString("id");
    execute(id, "head -c 5242880 /dev/urandom > blob.bin");
    JsonObject idle = metrics(id, m -> true);
    assertThat(idle.getString("sandbox_id")).isEqualTo(id);
    assertThat(idle.getString("status")).isEqualTo("running");
    assertThat(idle.getInteger("processes")).isZero();
    assertThat(idle.getDouble("disk_used_mb")).isBetween(5.0, 5.5);
    assertThat(idle.getDouble("memory_limit_mb")).isEqualTo(512.0);
    assertThat(idle.getDouble("disk_limit_mb")).isEqualTo(2048.0);
    assertThat(OffsetDateTime.parse(idle.getString("sampled_at"))).isNotNull();

    Resp started = gw.post("/v1/sandboxes/" + id + "/executions", key, new JsonObject().put("command", "python3")
        .put("args", new JsonArray().add("-c").add("b = b'x' * (64 << 20)\nwhile True:\n    pass\n")));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    JsonObject busy = metrics(id, m -> m.getDouble("cpu_percent") > 20 && m.getDouble("memory_used_mb") >= 64);
    assertThat(busy.getDouble("cpu_percent")).isGreaterThan(20.0).isLessThanOrEqualTo(220.0);
    assertThat(busy.getDouble("memory_used_mb")).isGreaterThanOrEqualTo(64.0).isLessThan(1024.0);
    assertThat(busy.getInteger("processes")).isGreaterThanOrEqualTo(1);

    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    Resp gone = gw.get("/v1/sandboxes/" + id + "/metrics", key);
    assertThat(gone.status()).isEqualTo(409);
    assertThat(gone.detail()).isEqualTo("sandbox is destroyed");
  }

  @Test
  void docker_metrics_come_from_the_engine() throws Exception {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("memory_mb", 256));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    try {
      execute(id, "dd if=/dev/urandom of=/tmp/blob bs=1048576 count=5");
      Resp spin = gw.post("/v1/sandboxes/" + id + "/executions", key, new JsonObject().put("command", "yes > /dev/null"));
      assertThat(spin.status()).as(spin.body()).isEqualTo(202);
      JsonObject m = metrics(id, s -> s.getDouble("cpu_percent") != null && s.getDouble("cpu_percent") > 20);
      assertThat(m.getDouble("memory_limit_mb")).isEqualTo(256.0);
      assertThat(m.getDouble("memory_used_mb")).isGreaterThan(0.0).isLessThanOrEqualTo(256.0);
      assertThat(m.getDouble("disk_used_mb")).isGreaterThanOrEqualTo(5.0);
      assertThat(m.getDouble("disk_limit_mb")).isNull();
      assertThat(m.getInteger("processes")).isGreaterThanOrEqualTo(2);
    } finally {
      gw.delete("/v1/sandboxes/" + id, key);
    }
  }

  @Test
  void a_cloud_backends_metrics_come_from_its_provider_and_its_logs_from_the_gateway() {
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "e2b"));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    try {
      Resp m = gw.get("/v1/sandboxes/" + id + "/metrics", key);
      assertThat(m.status()).as(m.body()).isEqualTo(200);
      assertThat(m.json().getDouble("memory_limit_mb")).as("E2B's template, whether or not it sampled yet")
          .isEqualTo((double) E2bSimulator.MEMORY_MB);
      assertThat(m.json().getDouble("disk_limit_mb")).isEqualTo((double) E2bSimulator.DISK_SIZE_MB);
      assertThat(objects(gw.get(logsPath(id, null), key).array())).extracting(e -> e.getString("message"))
          .containsExactly("sandbox requested on backend e2b", "sandbox created and running");
    } finally {
      gw.delete("/v1/sandboxes/" + id, key);
    }
  }

  /** Polls the sandbox's metrics until {@code done} holds (30 s at most) and returns the last sample. */
  static JsonObject metrics(String id, Predicate<JsonObject> done) {
    return Waits.upTo(30).alias("metrics showed the expected load").until(() -> {
      Resp r = gw.get("/v1/sandboxes/" + id + "/metrics", key);
      assertThat(r.status()).as(r.body()).isEqualTo(200);
      return r.json();
    }, done);
  }

  static List<JsonObject> objects(JsonArray a) {
    List<JsonObject> out = new ArrayList<>();
    a.forEach(o -> out.add((JsonObject) o));
    return out;
  }
}
