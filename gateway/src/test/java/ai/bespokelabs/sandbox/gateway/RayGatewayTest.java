package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.ray.RaySimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Ray backend through the gateway's REST, SSE, WebSocket and reconciliation, against the Ray simulator;
 * at the end, the cluster token appears in no response body, no log event (the gateway's own at debug level
 * included) and no database row.
 */
class RayGatewayTest {
  static final String TOKEN = "ray_gateway_test_token_secret_17";
  static RaySimulator sim;
  static TestGateway gw;
  static String key;
  static SecretWatch watch;

  @BeforeAll
  static void start() {
    watch = SecretWatch.start();
    sim = RaySimulator.start(TOKEN);
    gw = new TestGateway(Map.of("RAY_ADDRESS", sim.url(), "RAY_JOB_TOKEN", TOKEN,
        "BESPOKE_SUPERVISION_INTERVAL_SECS", "1",
        "RAY_REQUEST_TIMEOUT_SECS", String.valueOf(ProviderFailures.REQUEST_TIMEOUT_SECS)));
    key = gw.bootstrap("Ray users");
  }

  @AfterAll
  static void stop() {
    try {
      watch.assertNeverLeaked(gw, "ray", TOKEN);
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

  static JsonObject create(String org, JsonObject extra) {
    Resp created = seen(gw.post("/v1/sandboxes", org, new JsonObject().put("backend", "ray").mergeIn(extra)));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    return created.json();
  }

  /** The jobs of a sandbox at Ray, its anchor included. */
  static List<JsonObject> jobsOf(String sandboxId) {
    return sim.jobs().stream().filter(j -> sandboxId.equals(j.getJsonObject("metadata")
        .getString("bespokelabs.ai/sandbox-id"))).toList();
  }

  /** The jobs of a sandbox's executions. */
  static List<JsonObject> executionJobsOf(String sandboxId) {
    return jobsOf(sandboxId).stream().filter(j -> !"sandbox".equals(j.getJsonObject("metadata")
        .getString("bespokelabs.ai/role"))).toList();
  }

  @Test
  void create_exec_stream_signal_and_destroy_over_rest_sse_and_websocket() throws Exception {
    JsonObject sbx = create(key, new JsonObject().put("env_vars", new JsonObject().put("WHO", "ray")));
    String id = sbx.getString("id");
    assertThat(sbx.getString("status")).isEqualTo("running");
    assertThat(sbx.getString("provider_resource_id")).isEqualTo(id);

    Resp exec = seen(gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "echo hello $WHO; echo oops >&2; exit 2")));
    assertThat(exec.status()).as(exec.body()).isEqualTo(200);
    assertThat(exec.json().getString("stdout")).as("Ray merges the streams").isEqualTo("hello ray\noops\n");
    assertThat(exec.json().getString("stderr")).isEqualTo("Job entrypoint command failed with exit code 2\n");
    assertThat(exec.json().getInteger("exit_code")).isEqualTo(2);
    JsonObject job = executionJobsOf(id).get(0);
    assertThat(job.getJsonObject("metadata").getString("bespokelabs.ai/execution-id")).startsWith("exe_");
    assertThat(job.getJsonObject("metadata").getString("bespokelabs.ai/organization-id")).isNotBlank();
    assertThat(job.getJsonObject("runtime_env").getJsonObject("env_vars").getString("WHO")).isEqualTo("ray");

    Resp code = seen(gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("code", "print(6 * 7)").put("language", "python")));
    assertThat(code.json().getString("stdout")).isEqualTo("42\n");

    Resp stdin = seen(gw.post("/v1/sandboxes/" + id + "/executions", key,
        new JsonObject().put("command", "cat").put("stdin", true)));
    assertThat(stdin.status()).as(stdin.body()).isEqualTo(502);
    assertThat(stdin.json().getJsonObject("detail").getString("code")).isEqualTo("feature_not_supported");

    try (SseClient sse = SseClient.open(gw.base + "/v1/sandboxes/" + id + "/execute", key, "POST",
        new JsonObject().put("command", "seq 1 3").encode())) {
      assertThat(sse.status).isEqualTo(200);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      String last = null;
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          out.writeBytes(e.bytes());
        } else {
          last = e.name() + ":" + e.data().getString("status");
        }
      }
      assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("1\n2\n3\n");
      assertThat(last).isEqualTo("exit:completed");
    }

    Resp started = seen(gw.post("/v1/sandboxes/" + id + "/executions", key,
        new JsonObject().put("command", "echo go; sleep 60")));
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String execution = "/v1/sandboxes/" + id + "/executions/" + started.json().getString("id");
    Waits.upTo(10).until(() -> executionJobsOf(id).stream().anyMatch(j -> "RUNNING".equals(j.getString("status"))
        && sim.log(j.getString("submission_id")).equals("go\n")));
    Resp sig = seen(gw.post(execution + "/signal", key, new JsonObject().put("signal", "TERM")));
    assertThat(sig.status()).as(sig.body()).isEqualTo(204);
    JsonObject exit = null;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (SseClient sse = SseClient.open(gw.base + execution + "/stream?after=0", key, "GET", null)) {
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          out.writeBytes(e.bytes());
        } else if (e.name().equals("exit")) {
          exit = e.data();
        }
      }
    }
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("go\n");
    assertThat(exit.getString("status")).isEqualTo("cancelled");

    WsClient c = WsClient.connect(gw.base + "/v1/sandboxes/" + id + "/executions/ws", key);
    c.send(new JsonObject().put("type", "start").put("command", "echo $WHO over ws").encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("started");
    ByteArrayOutputStream wsOut = new ByteArrayOutputStream();
    JsonObject f;
    while (!(f = c.nextJson()).getString("type").equals("exit")) {
      if (f.getString("type").equals("stdout")) {
        wsOut.writeBytes(f.containsKey("data") ? f.getString("data").getBytes(StandardCharsets.UTF_8)
            : java.util.Base64.getDecoder().decode(f.getString("data_b64")));
      }
    }
    assertThat(wsOut.toString(StandardCharsets.UTF_8)).isEqualTo("ray over ws\n");
    assertThat(f.getString("status")).isEqualTo("completed");
    assertThat(c.closeStatus(java.time.Duration.ofSeconds(10))).isEqualTo(1000);

    assertThat(seen(gw.post("/v1/providers/ray/health-check", key, null)).json().getString("status"))
        .isEqualTo("healthy");

    Resp destroyed = seen(gw.delete("/v1/sandboxes/" + id, key));
    assertThat(destroyed.status()).as(destroyed.body()).isBetween(200, 204);
    assertThat(jobsOf(id)).as("its jobs were deleted at Ray").isEmpty();
    assertThat(seen(gw.get("/v1/sandboxes/" + id, key)).json().getString("status")).isEqualTo("destroyed");
  }

  @Test
  void reconciliation_observes_ours_and_the_supervisor_stops_an_orphan_job() throws Exception {
    JsonObject kept = create(key, new JsonObject());
    String orphanSandbox = "sbx_" + "ab".repeat(16);
    String orphan = sim.submitDirectly("sleep 60", new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", orphanSandbox));
    String foreign = sim.submitDirectly("sleep 60", new JsonObject().put("owner", "someone else"));
    String idleSandbox = "sbx_" + "cd".repeat(16);
    String idleAnchor = sim.submitDirectly("true", new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", idleSandbox).put("bespokelabs.ai/role", "sandbox"));
    Waits.upTo(10).until(() -> "SUCCEEDED".equals(sim.job(idleAnchor).getString("status")));
    Resp r = seen(gw.post("/v1/reconciliation/ray", key, null));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("updated")).isGreaterThanOrEqualTo(1);
    assertThat(r.json().getInteger("missing")).isZero();
    Waits.upTo(20).untilAsserted(() -> assertThat(sim.job(orphan)).as("stopped and deleted").isNull());
    assertThat(gw.awaitOrphanStatus(orphanSandbox, "deleted")).isEqualTo("deleted");
    Waits.upTo(20).untilAsserted(() -> assertThat(sim.job(idleAnchor))
        .as("a sandbox with no running job is found by its anchor").isNull());
    assertThat(gw.awaitOrphanStatus(idleSandbox, "deleted")).isEqualTo("deleted");
    assertThat(sim.job(foreign).getString("status")).as("not ours: left alone").isEqualTo("RUNNING");
    assertThat(seen(gw.get("/v1/sandboxes/" + kept.getString("id"), key)).json().getString("status"))
        .as("a live sandbox is never an orphan").isEqualTo("running");
    seen(gw.delete("/v1/sandboxes/" + kept.getString("id"), key));
  }

  @Test
  void provider_failures_reach_the_client_in_the_error_contract() {
    sim.faults().status(HttpMethod.POST, "/api/jobs/", 401, Map.of(), null, 1);
    Resp auth = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "ray")));
    assertThat(auth.status()).isEqualTo(502);
    assertThat(auth.json().getJsonObject("detail")).isEqualTo(new JsonObject()
        .put("message", "Provider authentication failed.").put("code", "authentication").put("backend", "ray")
        .put("op", "create").put("retryable", false).put("outcome", "failed")
        .put("context", new JsonObject().put("provider_status", 401)));

    String id = create(key, new JsonObject()).getString("id");
    sim.faults().status(HttpMethod.POST, "/api/jobs/", 429, Map.of("Retry-After", "9"), null, 1);
    Resp limited = seen(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "true")));
    ProviderFailures.assertFailure(limited, ProviderFailures.payload("execution_failed", "ray", "execute", true,
        "failed", new JsonObject().put("provider_status", 429).put("retry_after_secs", 9).put("retry_after_ms", 9000)));
    assertThat(limited.body()).doesNotContain("injected failure");
    sim.faults().status(HttpMethod.POST, "/api/jobs/", 503, Map.of("Retry-After", "4"), null, 1);
    ProviderFailures.assertWaitHint(seen(gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "true"))), "ray", 4);

    Resp refused = seen(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "ray")
        .put("image", "python:3.12")));
    assertThat(refused.status()).isEqualTo(422);
    seen(gw.delete("/v1/sandboxes/" + id, key));
  }

  /**
   * After a restart the gateway reads a sandbox back from its anchor job: Ray not knowing it is
   * {@code not_found}, Ray answering too slowly a {@code timeout} at the request timeout; neither changed
   * anything, and the sandbox is served once Ray answers again.
   */
  @Test
  void a_missing_anchor_is_not_found_and_a_slow_ray_times_out() {
    String id = create(key, new JsonObject()).getString("id");
    String anchor = "/api/jobs/bsk-sandbox-" + id;
    gw = gw.restarted();
    JsonObject command = new JsonObject().put("command", "echo back");
    sim.faults().status(HttpMethod.GET, anchor, 404, Map.of(), null, 1);
    ProviderFailures.assertFailure(seen(gw.post("/v1/sandboxes/" + id + "/execute", key, command)),
        ProviderFailures.payload("not_found", "ray", "execute", false, "failed", new JsonObject()));

    sim.faults().delay(HttpMethod.GET, anchor, ProviderFailures.SLOW_ANSWER_MS, 1);
    ProviderFailures.assertTimesOut(() -> seen(gw.post("/v1/sandboxes/" + id + "/execute", key, command)),
        ProviderFailures.payload("timeout", "ray", "execute", true, "failed", new JsonObject()));
    assertThat(executionJobsOf(id)).as("nothing was submitted").isEmpty();

    Resp served = seen(gw.post("/v1/sandboxes/" + id + "/execute", key, command));
    assertThat(served.status()).as(served.body()).isEqualTo(200);
    assertThat(served.json().getString("stdout")).isEqualTo("back\n");
    assertThat(seen(gw.delete("/v1/sandboxes/" + id, key)).status()).isBetween(200, 204);
  }

  /**
   * A submit whose answer is lost may have started the job: it is stopped exactly once, by its submission id,
   * and the client learns {@code cleanup_status deleted} with outcome {@code unknown} (the program may have
   * run). A lost create answer needs no cleanup: the anchor found by its id is the sandbox.
   */
  @Test
  void a_job_whose_submit_answer_was_lost_is_stopped_exactly_once() throws Exception {
    long anchors = sim.count(HttpMethod.POST, "/api/jobs/");
    sim.faults().loseResponse(HttpMethod.POST, "/api/jobs/", 1);
    JsonObject sbx = create(key, new JsonObject());
    String id = sbx.getString("id");
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/")).as("one submit, never a second").isEqualTo(anchors + 1);
    assertThat(jobsOf(id)).hasSize(1);

    long stops = sim.count(HttpMethod.POST, "/api/jobs/[^/]+/stop");
    sim.faults().loseResponse(HttpMethod.POST, "/api/jobs/", 1);
    Resp lost = seen(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "sleep 30")));
    ProviderFailures.assertFailure(lost, ProviderFailures.payload("connection", "ray", "execute", true, "unknown",
        new JsonObject().put("cleanup_status", "deleted")));
    List<JsonObject> started = executionJobsOf(id);
    assertThat(started).as("the job did start").hasSize(1);
    String submission = started.get(0).getString("submission_id");
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/" + submission + "/stop")).as("stopped once").isEqualTo(1);
    Waits.upTo(10).until(() -> "STOPPED".equals(sim.job(submission).getString("status")));
    Thread.sleep(1_500); // a supervision pass (every second here) stops nothing more
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/[^/]+/stop")).isEqualTo(stops + 1);
    assertThat(seen(gw.delete("/v1/sandboxes/" + id, key)).status()).isBetween(200, 204);
  }

  @Test
  void a_sandbox_is_served_after_a_gateway_restart_with_its_env_and_its_deadline() {
    JsonObject sbx = create(key, new JsonObject().put("env_vars", new JsonObject().put("WHO", "still here"))
        .put("cpu", 0.5));
    String id = sbx.getString("id");
    gw = gw.restarted();
    Resp after = seen(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "echo $WHO")));
    assertThat(after.status()).as(after.body()).isEqualTo(200);
    assertThat(after.json().getString("stdout")).as("read back from the sandbox's anchor").isEqualTo("still here\n");
    assertThat(sim.submitted(executionJobsOf(id).get(0).getString("submission_id")).getDouble("entrypoint_num_cpus"))
        .as("its resources too").isEqualTo(0.5);

    Resp deadline = seen(gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", 1)));
    assertThat(deadline.status()).as(deadline.body()).isEqualTo(200);
    JsonObject ended = Waits.upTo(15).alias(id + " destroyed").until(() -> seen(gw.get("/v1/sandboxes/" + id, key))
        .json(), s -> "destroyed".equals(s.getString("status")));
    assertThat(ended.getString("termination_reason")).isEqualTo("ttl_expired");
    assertThat(jobsOf(id)).as("its anchor and jobs were deleted at Ray").isEmpty();

    JsonObject other = create(key, new JsonObject().put("env_vars", new JsonObject().put("WHO", "x")));
    gw = gw.restarted();
    Resp destroyed = seen(gw.delete("/v1/sandboxes/" + other.getString("id"), key));
    assertThat(destroyed.status()).as(destroyed.body()).isBetween(200, 204);
    assertThat(jobsOf(other.getString("id"))).isEmpty();
  }
}
