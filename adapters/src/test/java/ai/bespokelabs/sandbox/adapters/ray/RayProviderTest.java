package ai.bespokelabs.sandbox.adapters.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.adapters.sim.OnContext;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Ray adapter against the simulator, which refuses anything Ray's published Jobs API would. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RayProviderTest {
  static final String TOKEN = "ray_test_token_0123456789";
  static RaySimulator sim;
  static Vertx vertx;
  static Driver ray;

  @BeforeAll
  static void start() {
    sim = RaySimulator.start(TOKEN);
    vertx = Vertx.vertx();
    ray = driver(TOKEN, sim.url(), Duration.ofSeconds(10));
    ray.create(create("sbx_main", config(Map.of("GREETING", "hi there"))));
  }

  @AfterAll
  static void stop() throws Exception {
    ray.close();
    vertx.close().await(10, TimeUnit.SECONDS);
    sim.close();
  }

  @AfterEach
  void everyRequestConformed() {
    sim.faults().clear();
    assertThat(sim.violations()).isEmpty();
  }

  /** The backend on a context of its own, driven from the test thread. */
  record Driver(RayProvider backend, Context context) implements AutoCloseable {
    <T> T on(Supplier<Future<T>> call) {
      return OnContext.await(context, call);
    }

    String create(CreateSandbox request) {
      return on(() -> backend.lifecycle().create(request));
    }

    boolean destroy(String sandboxId) {
      return on(() -> backend.lifecycle().destroy(new DestroySandbox(sandboxId, sandboxId))).alreadyGone();
    }

    Execution start(ExecSandbox request, OutputSink sink) {
      return on(() -> backend.executions().start(request, sink));
    }

    ExecResult exec(ExecSandbox request) {
      Capture sink = new Capture();
      start(request, sink);
      return sink.capture.await();
    }

    List<Resource> list() {
      return on(() -> backend.inventory().list());
    }

    void checkHealth() {
      on(() -> backend.inventory().checkHealth());
    }

    @Override
    public void close() {
      on(backend::close);
    }
  }

  static Driver driver(String token, String url, Duration requestTimeout) {
    RayProvider backend = new RayProvider(vertx, new RaySettings(url, token == null ? null : new Secret(token),
        requestTimeout));
    Context context = vertx.getOrCreateContext();
    OnContext.await(context, () -> backend.start(context));
    return new Driver(backend, context);
  }

  /** Takes every chunk at once. */
  static final class Capture implements OutputSink {
    final CapturingSink capture = new CapturingSink(64 << 20);

    @Override
    public Future<Void> output(Stream stream, byte[] data) {
      capture.output(stream, data);
      return Future.succeededFuture();
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      capture.exited(exitCode, timedOut, cancelled, durationMs);
    }
  }

  static SandboxConfig config(Map<String, String> env) {
    return new SandboxConfig(null, 1.5, 512, null, null, null, null, env, null, null, null, null, null, null, null);
  }

  static CreateSandbox create(String sandboxId, SandboxConfig config) {
    return new CreateSandbox(sandboxId, "org_test", "ray", "tok-" + UUID.randomUUID(), config);
  }

  static ExecSandbox command(String sandboxId, String command, int timeoutSecs) {
    return new ExecSandbox(sandboxId, "exe_" + UUID.randomUUID().toString().replace("-", ""), sandboxId, null, null,
        command, null, Map.of(), null, timeoutSecs, 1 << 20, false, null, null);
  }

  static ProviderError error(Runnable r) {
    try {
      r.run();
    } catch (ProviderException e) {
      return e.error();
    }
    throw new AssertionError("no provider error");
  }

  @Test
  void settings_need_an_address_and_never_print_the_token() {
    assertThat(RaySettings.from(ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(Map.of()))).isEmpty();
    RaySettings s = RaySettings.from(ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(Map.of(
        "RAY_ADDRESS", "http://head:8265/", "RAY_JOB_TOKEN", TOKEN, "RAY_REQUEST_TIMEOUT_SECS", "7"))).orElseThrow();
    assertThat(s.address()).isEqualTo("http://head:8265");
    assertThat(s.requestTimeout()).isEqualTo(Duration.ofSeconds(7));
    assertThat(s.toString()).doesNotContain(TOKEN);
    assertThatThrownBy(() -> RaySettings.from(ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(Map.of(
        "RAY_ADDRESS", "head:8265", "RAY_REQUEST_TIMEOUT_SECS", "7"))))
        .isInstanceOf(ai.bespokelabs.sandbox.core.config.ConfigException.class).hasMessageContaining("RAY_ADDRESS");
    assertThatThrownBy(() -> RaySettings.from(ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(Map.of(
        "RAY_ADDRESS", "http://head:8265", "RAY_REQUEST_TIMEOUT_SECS", "0"))))
        .isInstanceOf(ai.bespokelabs.sandbox.core.config.ConfigException.class)
        .hasMessageContaining("RAY_REQUEST_TIMEOUT_SECS");
  }

  @Test
  void create_submits_one_anchor_job_and_refuses_what_ray_cannot_give_before_any_call() {
    long submits = sim.count(HttpMethod.POST, "/api/jobs/");
    CreateSandbox request = create("sbx_plain", config(Map.of("SECRET_ISH", "v a l")));
    assertThat(ray.create(request)).isEqualTo("sbx_plain");
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/") - submits).as("the anchor").isEqualTo(1);
    String anchorId = RaySandboxes.anchorId("sbx_plain");
    JsonObject anchor = sim.submitted(anchorId);
    assertThat(anchor.getString("entrypoint")).isEqualTo("true");
    assertThat(anchor.fieldNames()).as("the anchor holds no resources")
        .doesNotContain("entrypoint_num_cpus", "entrypoint_memory", "entrypoint_num_gpus");
    assertThat(anchor.getJsonObject("runtime_env").getJsonObject("env_vars").getMap())
        .isEqualTo(Map.of("SECRET_ISH", "v a l"));
    assertThat(anchor.getJsonObject("metadata").getMap()).isEqualTo(Map.of("bespokelabs.ai/managed", "true",
        "bespokelabs.ai/sandbox-id", "sbx_plain", "bespokelabs.ai/role", "sandbox",
        "bespokelabs.ai/organization-id", "org_test", "bespokelabs.ai/create-token", request.createToken(),
        "bespokelabs.ai/cpus", "1.5", "bespokelabs.ai/memory-bytes", String.valueOf(512L << 20)));
    long before = sim.requests().size();
    SandboxConfig image = new SandboxConfig(null, null, null, null, null, null, "python:3.12", null, null, null, null,
        null, null, null, null);
    assertThatThrownBy(() -> ray.create(create("sbx_image", image))).isInstanceOf(ApiException.class)
        .hasMessageContaining("image");
    SandboxConfig offline = new SandboxConfig(null, null, null, null, null, null, null, null, false, null, null,
        null, null, null, null);
    assertThatThrownBy(() -> ray.create(create("sbx_offline", offline))).isInstanceOf(ApiException.class)
        .hasMessageContaining("allow_internet");
    assertThat(sim.requests()).hasSize((int) before);
    assertThat(ray.destroy("sbx_plain")).isFalse();
    assertThat(sim.job(anchorId)).as("the anchor went with the sandbox").isNull();
  }

  @Test
  void another_node_reads_the_sandbox_from_its_anchor_once() {
    SandboxConfig c = new SandboxConfig(null, 2.0, 256, null, "1", null, null, Map.of("WHO", "anchored"), null,
        null, null, null, null, null, null);
    CreateSandbox request = create("sbx_shared", c);
    ray.create(request);
    try (Driver other = driver(TOKEN, sim.url(), Duration.ofSeconds(10))) {
      String anchorPath = "/api/jobs/" + RaySandboxes.anchorId("sbx_shared");
      long reads = sim.count(HttpMethod.GET, anchorPath);
      ExecSandbox first = command("sbx_shared", "echo $WHO", 10);
      assertThat(other.exec(first).stdout()).isEqualTo("anchored\n");
      assertThat(other.exec(command("sbx_shared", "echo again $WHO", 10)).stdout()).isEqualTo("again anchored\n");
      assertThat(sim.count(HttpMethod.GET, anchorPath) - reads).as("read once, then cached").isEqualTo(1);
      JsonObject sent = sim.submitted(RayExecutions.submissionId(first));
      assertThat(sent.getDouble("entrypoint_num_cpus")).isEqualTo(2.0);
      assertThat(sent.getLong("entrypoint_memory")).isEqualTo(256L << 20);
      assertThat(sent.getInteger("entrypoint_num_gpus")).isEqualTo(1);
      assertThat(sent.getJsonObject("metadata").getMap())
          .containsEntry("bespokelabs.ai/organization-id", "org_test")
          .containsEntry("bespokelabs.ai/create-token", request.createToken());
      assertThat(other.destroy("sbx_shared")).isFalse();
    }
    assertThat(sim.jobs()).noneMatch(j -> "sbx_shared".equals(RaySandboxes.sandboxOf(j)));
  }

  @Test
  void a_sandbox_without_an_anchor_is_not_found_and_runs_nothing() {
    long submits = sim.count(HttpMethod.POST, "/api/jobs/");
    ProviderError missing = error(() -> ray.exec(command("sbx_never_created", "true", 5)));
    assertThat(missing.code()).isEqualTo(ErrorCode.NOT_FOUND);
    assertThat(missing.op()).isEqualTo("execute");
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/")).isEqualTo(submits);
  }

  @Test
  void a_create_whose_answer_is_lost_is_resolved_by_its_anchor_never_a_second_submit() {
    long submits = sim.count(HttpMethod.POST, "/api/jobs/");
    sim.faults().loseResponse(HttpMethod.POST, "/api/jobs/", 1);
    assertThat(ray.create(create("sbx_lost", config(Map.of("K", "v"))))).isEqualTo("sbx_lost");
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/") - submits).isEqualTo(1);
    assertThat(ray.exec(command("sbx_lost", "echo $K", 10)).stdout()).isEqualTo("v\n");
    assertThat(ray.destroy("sbx_lost")).isFalse();

    sim.faults().drop(HttpMethod.POST, "/api/jobs/", 1);
    ProviderError gone = error(() -> ray.create(create("sbx_dropped", config(null))));
    assertThat(gone.code()).isEqualTo(ErrorCode.CONNECTION);
    assertThat(gone.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(gone.context()).containsEntry("cleanup_status", "not_found");
  }

  @Test
  void a_job_per_execution_with_the_sandboxs_env_resources_and_our_marks() throws Exception {
    ExecSandbox req = new ExecSandbox("sbx_main", "exe_env", "sbx_main", null, null, "mkdir -p work && cd work && "
        + "pwd && echo $GREETING $EXTRA", null, Map.of("EXTRA", "x'y"), null, 10, 1 << 20);
    ExecResult r = ray.exec(req);
    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).endsWith("/work\nhi there x'y\n");
    String submission = RayExecutions.submissionId(req);
    JsonObject sent = sim.submitted(submission);
    assertThat(sent.getJsonObject("runtime_env").getJsonObject("env_vars").getMap())
        .containsExactlyInAnyOrderEntriesOf(Map.of("GREETING", "hi there", "EXTRA", "x'y"));
    assertThat(sent.getJsonObject("metadata").getMap()).containsEntry("bespokelabs.ai/managed", "true")
        .containsEntry("bespokelabs.ai/sandbox-id", "sbx_main").containsEntry("bespokelabs.ai/organization-id",
            "org_test").containsEntry("bespokelabs.ai/execution-id", "exe_env")
        .containsKey("bespokelabs.ai/create-token");
    assertThat(sent.getDouble("entrypoint_num_cpus")).isEqualTo(1.5);
    assertThat(sent.getLong("entrypoint_memory")).isEqualTo(512L << 20);
    assertThat(sim.job(submission).getString("status")).isEqualTo("SUCCEEDED");

    ExecResult inDir = ray.exec(new ExecSandbox("sbx_main", "exe_cwd", "sbx_main", null, null, "pwd", null,
        Map.of(), "work", 10, 1 << 20));
    assertThat(inDir.stdout()).endsWith("/work\n");

    ExecResult args = ray.exec(new ExecSandbox("sbx_main", "exe_args", "sbx_main", null, null, "printf",
        List.of("%s|", "a b", "it's", "$HOME"), Map.of(), null, 10, 1 << 20));
    assertThat(args.stdout()).isEqualTo("a b|it's|$HOME|");

    ExecResult py = ray.exec(new ExecSandbox("sbx_main", "exe_py", "sbx_main", "print(6 * 7)", "python", null,
        null, Map.of(), null, 10, 1 << 20));
    assertThat(py.stdout()).isEqualTo("42\n");
  }

  @Test
  void streams_merge_into_stdout_and_a_failure_reports_rays_exit_code_and_message() {
    ExecResult r = ray.exec(command("sbx_main", "echo out; echo err >&2; exit 3", 10));
    assertThat(r.stdout()).as("Ray merges the streams").isEqualTo("out\nerr\n");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.stderr()).isEqualTo("Job entrypoint command failed with exit code 3\n");
    assertThat(r.cancelled()).isFalse();
  }

  @Test
  void keeping_stdin_open_is_refused_before_any_job() {
    long submits = sim.count(HttpMethod.POST, "/api/jobs/");
    ExecSandbox req = new ExecSandbox("sbx_main", "exe_stdin", "sbx_main", null, null, "cat", null, Map.of(), null,
        10, 1 << 20, true, null, null);
    ProviderError e = error(() -> ray.start(req, new Capture()));
    assertThat(e.code()).isEqualTo(ErrorCode.FEATURE_NOT_SUPPORTED);
    assertThat(e.op()).isEqualTo("stdin");
    assertThat(e.retryable()).isFalse();
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/")).isEqualTo(submits);
  }

  @Test
  void a_timeout_stops_the_job_and_reports_124_with_the_seeds_line() {
    long t0 = System.nanoTime();
    ExecSandbox req = command("sbx_main", "echo started; sleep 30; echo never", 2);
    ExecResult r = ray.exec(req);
    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.timedOut()).isTrue();
    assertThat(r.stdout()).isEqualTo("started\n");
    assertThat(r.stderr()).isEqualTo("Command timed out after 2s\n");
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(12));
    assertThat(sim.job(RayExecutions.submissionId(req)).getString("status")).isEqualTo("STOPPED");
  }

  @Test
  void a_signal_stops_the_job_and_the_run_is_cancelled() throws Exception {
    Capture sink = new Capture();
    ExecSandbox req = command("sbx_main", "echo go; sleep 31; echo not-reached", 20);
    Execution x = ray.start(req, sink);
    Waits.upTo(10).untilAsserted(() -> assertThat(sim.log(RayExecutions.submissionId(req))).isEqualTo("go\n"));
    ray.on(() -> x.signal("TERM"));
    ExecResult r = sink.capture.await();
    assertThat(r.cancelled()).isTrue();
    assertThat(r.exitCode()).isEqualTo(143);
    assertThat(r.stdout()).isEqualTo("go\n");
    assertThat(sim.job(RayExecutions.submissionId(req)).getString("status")).isEqualTo("STOPPED");
    assertThatThrownBy(() -> ray.on(() -> x.write(io.vertx.core.buffer.Buffer.buffer("x"))))
        .hasMessageContaining("stdin is closed");
  }

  @Test
  void a_blocked_sink_pauses_the_tail_and_nothing_is_lost() throws Exception {
    long total = 32L << 20;
    Promise<Void> release = Promise.promise();
    AtomicLong received = new AtomicLong();
    Capture done = new Capture();
    long before = sim.streamedBytes();
    OutputSink blocking = new OutputSink() {
      @Override
      public Future<Void> output(Stream stream, byte[] data) {
        return release.future().andThen(v -> received.addAndGet(data.length));
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        done.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    ray.start(command("sbx_main", "head -c " + total + " /dev/zero", 60), blocking);
    try {
      long streamedWhileBlocked = -1;
      for (long end = System.nanoTime() + 20_000_000_000L; System.nanoTime() < end; ) {
        Thread.sleep(300);
        long now = sim.streamedBytes() - before;
        if (now > 0 && now == streamedWhileBlocked) {
          break;
        }
        streamedWhileBlocked = now;
      }
      Thread.sleep(300);
      assertThat(sim.streamedBytes() - before).as("the tail waits for the blocked reader")
          .isEqualTo(streamedWhileBlocked).isLessThan(total / 2);
      assertThat(sim.drainWaits()).isPositive();
    } finally {
      release.complete();
    }
    ExecResult r = done.capture.await();
    assertThat(r.exitCode()).isZero();
    assertThat(received.get()).isEqualTo(total);
  }

  @Test
  void a_dropped_tail_is_opened_again_without_loss_or_repeats() {
    sim.faults().dropStream(HttpMethod.GET, "/api/jobs/", 2, 1);
    ExecResult r = ray.exec(command("sbx_main", "seq 1 30000", 20));
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 30000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo(expected.toString());
  }

  @Test
  void a_job_silent_for_longer_than_the_request_timeout_keeps_its_one_tail() {
    try (Driver quick = driver(TOKEN, sim.url(), Duration.ofSeconds(1))) {
      quick.create(create("sbx_quiet", config(null)));
      ExecSandbox req = command("sbx_quiet", "sleep 3; echo late", 20);
      ExecResult r = quick.exec(req);
      assertThat(r.stdout()).isEqualTo("late\n");
      assertThat(r.exitCode()).isZero();
      assertThat(sim.count(HttpMethod.GET, "/api/jobs/" + RayExecutions.submissionId(req) + "/logs/tail"))
          .isEqualTo(1);
      quick.destroy("sbx_quiet");
    }
  }

  @Test
  void provider_failures_map_onto_the_error_contract() {
    try (Driver wrong = driver("not-the-token", sim.url(), Duration.ofSeconds(5))) {
      ProviderError auth = error(() -> wrong.create(create("sbx_auth", config(null))));
      assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
      assertThat(auth.retryable()).isFalse();
      assertThatThrownBy(wrong::checkHealth).isInstanceOf(ProviderException.class)
          .hasMessageNotContaining("not-the-token");
    }
    ray.checkHealth();

    sim.faults().status(HttpMethod.POST, "/api/jobs/", 429, Map.of("Retry-After", "7"), null, 1);
    ProviderError limited = error(() -> ray.exec(command("sbx_main", "true", 5)));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L).containsEntry("provider_status", 429L);

    sim.faults().status(HttpMethod.GET, "/api/jobs/", 503, Map.of(), null, 1);
    ProviderError unavailable = error(ray::list);
    assertThat(unavailable.retryable()).isTrue();
    assertThat(unavailable.context()).containsEntry("provider_status", 503L);

    sim.faults().status(HttpMethod.POST, "/api/jobs/", 400, Map.of(), null, 1);
    ProviderError refused = error(() -> ray.exec(command("sbx_main", "true", 5)));
    assertThat(refused.code()).isEqualTo(ErrorCode.EXECUTION_FAILED);
    assertThat(refused.retryable()).isFalse();
    assertThat(refused.toString()).doesNotContain("injected failure");

    sim.faults().drop(HttpMethod.GET, "/api/version", 1);
    ProviderError dropped = error(ray::checkHealth);
    assertThat(dropped.code()).isEqualTo(ErrorCode.CONNECTION);
    assertThat(dropped.retryable()).isTrue();

    try (Driver impatient = driver(TOKEN, sim.url(), Duration.ofMillis(300))) {
      sim.faults().delay(HttpMethod.GET, "/api/jobs/", 1_500, 1);
      assertThat(error(impatient::list).code()).isEqualTo(ErrorCode.TIMEOUT);
    }

    try (Driver nowhere = driver(TOKEN, "http://127.0.0.1:1", Duration.ofSeconds(2))) {
      ProviderError conn = error(() -> nowhere.create(create("sbx_refused", config(null))));
      assertThat(conn.code()).isEqualTo(ErrorCode.CONNECTION);
      assertThat(conn.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    }

    assertThat(RayClient.statusError("destroy", 404, null).error().code()).isEqualTo(ErrorCode.NOT_FOUND);
    assertThat(RayClient.statusError("destroy", 403, null).error().code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(RayClient.statusError("list", 500, null).error().retryable()).isFalse();
  }

  @Test
  void a_submit_whose_answer_is_lost_stops_that_job_once() {
    sim.faults().loseResponse(HttpMethod.POST, "/api/jobs/", 1);
    ExecSandbox req = command("sbx_main", "sleep 30", 20);
    ProviderError lost = error(() -> ray.exec(req));
    assertThat(lost.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(lost.context()).containsEntry("cleanup_status", "deleted");
    String submission = RayExecutions.submissionId(req);
    assertThat(sim.count(HttpMethod.POST, "/api/jobs/" + submission + "/stop")).isEqualTo(1);
    Waits.upTo(10).untilAsserted(() -> assertThat(sim.job(submission).getString("status")).isEqualTo("STOPPED"));
  }

  @Test
  void list_finds_our_jobs_by_metadata_and_destroy_stops_and_deletes_them() throws Exception {
    ray.create(create("sbx_listed", config(null)));
    ExecSandbox done = command("sbx_listed", "echo done", 10);
    assertThat(ray.exec(done).exitCode()).isZero();
    Capture running = new Capture();
    ExecSandbox longOne = command("sbx_listed", "sleep 30", 60);
    ray.start(longOne, running);
    String orphan = sim.submitDirectly("sleep 30", new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", "sbx_orphan"));
    String foreign = sim.submitDirectly("sleep 30", new JsonObject().put("owner", "someone else"));
    String idleAnchor = sim.submitDirectly("true", new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", "sbx_idle_orphan").put("bespokelabs.ai/role", "sandbox"));
    String ended = sim.submitDirectly("true", new JsonObject().put("bespokelabs.ai/managed", "true")
        .put("bespokelabs.ai/sandbox-id", "sbx_ended"));
    Waits.upTo(10).until(() -> RaySandboxes.terminal(sim.job(idleAnchor).getString("status"))
        && RaySandboxes.terminal(sim.job(ended).getString("status")));

    List<Resource> listed = ray.list();
    assertThat(listed).contains(new Resource("sbx_listed", "sbx_listed", "running", null),
        new Resource("sbx_orphan", "sbx_orphan", "running", null),
        new Resource("sbx_idle_orphan", "sbx_idle_orphan", "running", null),
        new Resource("sbx_ended", "sbx_ended", "terminated", null));
    assertThat(ray.destroy("sbx_idle_orphan")).as("its anchor was there").isFalse();
    assertThat(sim.job(idleAnchor)).isNull();
    assertThat(ray.destroy("sbx_ended")).isFalse();
    assertThat(listed).noneMatch(r -> r.sandboxId() == null || r.sandboxId().isEmpty());

    assertThat(ray.destroy("sbx_orphan")).as("jobs of it were there").isFalse();
    assertThat(sim.job(orphan)).as("stopped, then deleted").isNull();
    assertThat(ray.destroy("sbx_listed")).isFalse();
    assertThat(sim.job(RayExecutions.submissionId(done))).isNull();
    assertThat(sim.job(RayExecutions.submissionId(longOne))).isNull();
    assertThat(running.capture.await().exitCode()).as("ended by the destroy's stop").isNotZero();
    assertThat(ray.list()).noneMatch(r -> r.sandboxId().equals("sbx_listed") || r.sandboxId().equals("sbx_orphan"));
    assertThat(ray.destroy("sbx_listed")).as("already gone").isTrue();
    assertThat(sim.job(foreign).getString("status")).as("not ours: left alone").isEqualTo("RUNNING");
  }
}
