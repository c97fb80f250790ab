package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Tensorlake adapter against the simulator, which refuses any request the SDK's wire format would not make. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TensorlakeProviderTest {
  static final String KEY = "tl_test_key_0123456789";
  static TensorlakeSimulator sim;
  static Vertx vertx;
  static DrivenBackend provider;
  static String sandbox;

  @BeforeAll
  static void start() {
    sim = TensorlakeSimulator.start(KEY).startDelayMs(100);
    vertx = Vertx.vertx();
    provider = provider(KEY);
    sandbox = provider.create(create("sbx_main", config(null)));
  }

  @AfterAll
  static void stop() throws Exception {
    provider.close();
    vertx.close().await(10, TimeUnit.SECONDS);
    sim.close();
  }

  @AfterEach
  void everyRequestConformed() {
    sim.faults().clear();
    assertThat(sim.violations()).isEmpty();
  }

  static DrivenBackend provider(String key) {
    return new DrivenBackend(new TensorlakeProvider(vertx, new TensorlakeSettings(sim.url(), new Secret(key),
        sim.daemonUrl(), Duration.ofSeconds(10), Duration.ofSeconds(5))), vertx.getOrCreateContext());
  }

  static SandboxConfig config(String snapshotId) {
    return new SandboxConfig(null, 1.5, 1536, null, null, 600, null, Map.of("GREETING", "hi there"), false,
        null, null, snapshotId, null, null, null);
  }

  static CreateSandbox create(String sandboxId, SandboxConfig config) {
    return new CreateSandbox(sandboxId, "org_test", "tensorlake", "ctk_" + UUID.randomUUID().toString()
        .replace("-", ""), config);
  }

  static ExecSandbox command(String command, int timeoutSecs, boolean keepStdin) {
    return new ExecSandbox("sbx_main", "exe_" + UUID.randomUUID().toString().replace("-", ""), sandbox, null, null,
        command, null, Map.of(), null, timeoutSecs, 1 << 20, keepStdin, null, null);
  }

  static ExecSandbox commandIn(String resourceId, String command) {
    return new ExecSandbox("sbx_other", "exe_" + UUID.randomUUID().toString().replace("-", ""), resourceId, null,
        null, command, null, Map.of(), null, 10, 1 << 20, false, null, null);
  }

  static FileOp op(String kind, String path, boolean recursive) {
    return new FileOp(kind, "sbx_main", sandbox, path, null, null, false, recursive);
  }

  static ProviderError error(Runnable r) {
    try {
      r.run();
    } catch (ProviderException e) {
      return e.error();
    }
    throw new AssertionError("no provider error");
  }

  /** Collects output, taking each chunk only after a pause: the reading of output waits for it. */
  static final class Slow implements OutputSink {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();
    final Promise<Integer> exit = Promise.promise();
    final Vertx timers = vertx;
    volatile boolean timedOut;
    volatile boolean cancelled;

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      (stream == Stream.STDOUT ? out : err).writeBytes(data);
      return timers.timer(2, TimeUnit.MILLISECONDS).mapEmpty();
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      this.timedOut = timedOut;
      this.cancelled = cancelled;
      exit.tryComplete(exitCode);
    }

    int await() throws Exception {
      return exit.future().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void create_names_the_marks_and_sends_resources_and_network() {
    JsonObject s = sim.sandbox(sandbox);
    assertThat(s.getString("status")).isEqualTo("running");
    TensorlakeMarks marks = TensorlakeMarks.parse(s.getString("name"));
    assertThat(marks.sandboxId()).isEqualTo("sbx_main");
    assertThat(marks.organizationId()).isEqualTo("org_test");
    assertThat(sim.count(HttpMethod.POST, "/sandboxes")).isGreaterThanOrEqualTo(1);
    String id = provider.create(create("sbx_other", config(null)));
    assertThat(provider.destroy(new DestroySandbox("sbx_other", id)).alreadyGone()).isFalse();
    assertThat(sim.sandbox(id)).isNull();
    assertThat(provider.destroy(new DestroySandbox("sbx_other", id)).alreadyGone()).isTrue();
  }

  @Test
  void commands_and_code_run_with_the_sandboxs_env() {
    ExecResult r = provider.exec(command("echo $GREETING; echo err >&2; exit 3", 10, false));
    assertThat(r.stdout()).isEqualTo("hi there\n");
    assertThat(r.stderr()).isEqualTo("err\n");
    assertThat(r.exitCode()).isEqualTo(3);
    ExecSandbox code = new ExecSandbox("sbx_main", "exe_code", sandbox, "import sys\nprint(1 + 1)\nsys.exit(4)",
        "python", null, null, Map.of(), null, 10, 1 << 20, false, null, null);
    ExecResult py = provider.exec(code);
    assertThat(py.stdout()).isEqualTo("2\n");
    assertThat(py.exitCode()).isEqualTo(4);
    assertThat(provider.exec(command("cat; echo done", 10, false)).stdout()).isEqualTo("done\n");
  }

  @Test
  void stdin_signals_and_timeouts() throws Exception {
    Slow sink = new Slow();
    DrivenBackend.Handle h = provider.start(command("cat; echo end >&2", 20, true), sink);
    h.writeStdin("héllo\n".getBytes(StandardCharsets.UTF_8));
    h.closeStdin();
    assertThat(sink.await()).isZero();
    assertThat(sink.out.toString(StandardCharsets.UTF_8)).isEqualTo("héllo\n");
    assertThat(sink.err.toString(StandardCharsets.UTF_8)).isEqualTo("end\n");
    assertThatThrownBy(() -> h.writeStdin(new byte[] {1})).hasMessageContaining("stdin is closed");

    Slow killed = new Slow();
    DrivenBackend.Handle k = provider.start(command("sleep 30", 20, false), killed);
    Thread.sleep(300);
    k.signal("TERM");
    assertThat(killed.await()).isEqualTo(128 + 15);
    assertThat(killed.cancelled).isTrue();

    ExecResult late = provider.exec(command("echo started; sleep 30; echo never", 2, false));
    assertThat(late.exitCode()).isEqualTo(124);
    assertThat(late.timedOut()).isTrue();
    assertThat(late.stdout()).isEqualTo("started\n");
    assertThat(late.stderr()).isEqualTo("Command timed out after 2s\n");
  }

  @Test
  void a_stream_dropped_mid_output_loses_and_repeats_nothing() throws Exception {
    sim.faults().dropStream("/daemon/api/v1/processes/", 5, 1);
    Slow sink = new Slow();
    provider.start(command("for i in $(seq 1 40); do echo line$i; done; echo e >&2", 10, false), sink);
    assertThat(sink.await()).isZero();
    StringBuilder want = new StringBuilder();
    for (int i = 1; i <= 40; i++) {
      want.append("line").append(i).append('\n');
    }
    assertThat(sink.out.toString(StandardCharsets.UTF_8)).isEqualTo(want.toString());
    assertThat(sink.err.toString(StandardCharsets.UTF_8)).isEqualTo("e\n");
  }

  @Test
  void files_round_trip_and_archives() throws Exception {
    DrivenBackend.Upload up = provider.openWrite(new FileOp("open_write", "sbx_main", sandbox, "dir/a.sh", null,
        null, true, false));
    up.write("#!/bin/sh\necho run\n".getBytes(StandardCharsets.UTF_8));
    FileEntry e = up.commit();
    assertThat(e.mode()).isEqualTo(0755);
    assertThat(sim.dir(sandbox).resolve("dir/a.sh").toFile().canExecute()).isTrue();
    assertThat(provider.exec(command("./dir/a.sh", 10, false)).stdout()).isEqualTo("run\n");
    List<FileEntry> listed = provider.listFiles(op("list", "dir", false));
    assertThat(listed).extracting(FileEntry::name).containsExactly("a.sh");
    assertThat(listed.get(0).size()).isEqualTo(19);
    try (DrivenBackend.Download d = provider.openRead(op("open_read", "dir/a.sh", false))) {
      byte[] buf = new byte[100];
      assertThat(d.read(buf)).isEqualTo(19);
    }
    assertThatThrownBy(() -> provider.openRead(op("open_read", "dir", false))).hasMessageContaining("directory");
    assertThatThrownBy(() -> provider.openRead(op("open_read", "nope", false))).hasMessageContaining("not found");
    assertThatThrownBy(() -> provider.deleteFile(op("delete", "dir", false))).hasMessageContaining("empty");

    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    try (DrivenBackend.Download d = provider.openArchiveRead(op("archive", "dir", false))) {
      byte[] buf = new byte[8192];
      int n;
      while ((n = d.read(buf)) > 0) {
        tar.write(buf, 0, n);
      }
    }
    DrivenBackend.Upload back = provider.openArchiveWrite(op("archive", "copy", false));
    back.write(tar.toByteArray());
    back.commit();
    assertThat(Files.readString(sim.dir(sandbox).resolve("copy/a.sh"))).isEqualTo("#!/bin/sh\necho run\n");
    provider.deleteFile(op("delete", "dir", true));
    assertThat(sim.dir(sandbox).resolve("dir")).doesNotExist();
  }

  @Test
  void a_snapshot_is_awaited_and_creates_a_sandbox_holding_its_files() throws Exception {
    assertThat(provider.exec(command("echo kept > kept.txt", 10, false)).exitCode()).isZero();
    String snapshot = provider.snapshot(new SnapshotSandbox("sbx_main", "org_test", sandbox));
    assertThat(snapshot).matches("org_test\\.[0-9a-f]{32}\\..+");
    String raw = snapshot.substring("org_test.".length() + 33);
    assertThat(sim.snapshot(raw).getString("status")).isEqualTo("completed");
    CreateSandbox foreign = new CreateSandbox("sbx_foreign", "org_other", "tensorlake", "ctk_foreign", config(snapshot));
    assertThatThrownBy(() -> provider.create(foreign)).hasMessageContaining("snapshot not found");
    // another organization that learned the Tensorlake id cannot name it as its own, with or without a MAC
    String mac = snapshot.substring("org_test.".length(), "org_test.".length() + 32);
    for (String forged : List.of("org_other." + raw, "org_other." + mac + "." + raw,
        "org_other." + "0".repeat(32) + "." + raw)) {
      CreateSandbox attempt = new CreateSandbox("sbx_forged", "org_other", "tensorlake", "ctk_forged", config(forged));
      assertThatThrownBy(() -> provider.create(attempt)).as(forged).hasMessageContaining("snapshot not found");
    }
    assertThatThrownBy(() -> provider.create(create("sbx_unknown", config("org_test.snap-unknown"))))
        .hasMessageContaining("snapshot not found");
    String restored = provider.create(create("sbx_restored", config(snapshot)));
    assertThat(Files.readString(sim.dir(restored).resolve("kept.txt"))).isEqualTo("kept\n");
    provider.destroy(new DestroySandbox("sbx_restored", restored));
    ProviderError gone = error(() -> provider.snapshot(new SnapshotSandbox("sbx_x", "org_test", "tl-missing")));
    assertThat(gone.code()).isEqualTo(ErrorCode.NOT_FOUND);
  }

  @Test
  void a_504_on_create_is_resolved_by_polling_never_by_a_second_create() {
    long before = sim.count(HttpMethod.POST, "/sandboxes");
    sim.timeoutNextCreate();
    CreateSandbox req = create("sbx_504", config(null));
    String id = provider.create(req);
    assertThat(sim.count(HttpMethod.POST, "/sandboxes")).isEqualTo(before + 1);
    assertThat(TensorlakeMarks.parse(sim.sandbox(id).getString("name")).createToken()).isEqualTo(req.createToken());
    assertThat(sim.sandbox(id).getString("status")).isEqualTo("running");
    provider.destroy(new DestroySandbox("sbx_504", id));
  }

  @Test
  void provider_failures_map_onto_the_contract() {
    sim.faults().status(HttpMethod.POST, "/sandboxes", 401, Map.of(), new JsonObject().put("message", KEY), 1);
    ProviderError auth = error(() -> provider.create(create("sbx_f", config(null))));
    assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(auth.toString()).doesNotContain(KEY);

    sim.faults().status(HttpMethod.POST, "/sandboxes", 429, Map.of("Retry-After", "7"), null, 1);
    ProviderError limited = error(() -> provider.create(create("sbx_f", config(null))));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L);

    sim.faults().status(HttpMethod.POST, "/sandboxes", 503, Map.of(), null, 1);
    ProviderError unavailable = error(() -> provider.create(create("sbx_f", config(null))));
    assertThat(unavailable.retryable()).isTrue();
    assertThat(unavailable.context()).containsEntry("provider_status", 503L);

    sim.faults().status(HttpMethod.POST, "/sandboxes", 404, Map.of(), null, 1);
    assertThat(error(() -> provider.create(create("sbx_f", config(null)))).code()).isEqualTo(ErrorCode.NOT_FOUND);

    sim.failNextCreateAfterAllocating(500);
    long before = sim.sandboxes().size();
    ProviderError failed = error(() -> provider.create(create("sbx_f", config(null))));
    assertThat(failed.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(failed.retryable()).isTrue();
    assertThat(failed.context()).containsEntry("cleanup_status", "deleted");
    assertThat(sim.sandboxes()).as("what the failed create allocated is deleted").hasSize((int) before);

    sim.faults().loseResponse(HttpMethod.POST, "/sandboxes", 1);
    CreateSandbox lost = create("sbx_lost", config(null));
    String found = provider.create(lost);
    assertThat(sim.sandbox(found)).as("a lost answer is resolved by the create token too").isNotNull();
    provider.destroy(new DestroySandbox("sbx_lost", found));

    sim.faults().status(HttpMethod.GET, "/snapshots", 403, Map.of(), null, 1);
    assertThat(error(provider::checkHealth).code()).isEqualTo(ErrorCode.AUTHENTICATION);
    provider.checkHealth();
    assertThat(sim.sandboxes()).noneMatch(s -> "sbx_f".equals(TensorlakeMarks.parse(s.getString("name")) == null
        ? null : TensorlakeMarks.parse(s.getString("name")).sandboxId()));
  }

  @Test
  void inventory_lists_what_carries_our_marks() {
    String orphan = sim.createDirectly(new TensorlakeMarks("sbx_orphan", "org_test", "ctk_x").name());
    String foreign = sim.createDirectly("someone-elses");
    List<Resource> listed = provider.list();
    assertThat(listed).extracting(Resource::resourceId).contains(sandbox, orphan).doesNotContain(foreign);
    assertThat(listed).filteredOn(r -> r.resourceId().equals(orphan)).extracting(Resource::sandboxId)
        .containsExactly("sbx_orphan");
    sim.vanish(orphan);
    sim.vanish(foreign);
  }

  @Test
  void output_arrives_as_the_daemons_text_lines_not_as_bytes() {
    // the daemon has no byte-exact output: a line is a JSON string, so what is not UTF-8 arrives replaced
    // (U+FFFD in the simulator) and a last line without a newline gains one
    ExecResult r = provider.exec(command("printf 'a\\377b\\nlast'; printf 'e\\376' >&2", 10, false));
    assertThat(r.stdout()).isEqualTo("a\uFFFDb\nlast\n");
    assertThat(r.stderr()).isEqualTo("e\uFFFD\n");
    assertThat(r.exitCode()).isZero();
  }

  @Test
  void readiness_is_polled_at_once_then_after_pauses_doubling_from_two_ms_to_a_second() {
    List<Long> pauses = new ArrayList<>();
    long pause = 0;
    for (int i = 0; i < 12; i++) {
      pause = TensorlakeLifecycle.nextPause(pause);
      pauses.add(pause);
    }
    assertThat(pauses).containsExactly(2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L, 512L, 1000L, 1000L, 1000L);
    long gets = sim.count(HttpMethod.GET, "/sandboxes/tl-.*");
    String id = provider.create(create("sbx_quick", config(null)));
    assertThat(sim.count(HttpMethod.GET, "/sandboxes/" + id)).as("polled until running").isGreaterThanOrEqualTo(1);
    assertThat(sim.count(HttpMethod.GET, "/sandboxes/tl-.*")).isGreaterThan(gets);
    provider.destroy(new DestroySandbox("sbx_quick", id));
  }

  @Test
  void metrics_are_tensorlakes_resources_and_the_daemons_process_count() throws Exception {
    SandboxConfig sized = new SandboxConfig(null, 2.0, 2048, 4096, null, 600, null, Map.of(), false, null, null,
        null, null, null, null);
    String id = provider.create(create("sbx_metrics", sized));
    MetricsRequest req = new MetricsRequest("sbx_metrics", id, 2048, 4096);
    assertThat(provider.metrics(req)).as("nothing runs yet; Tensorlake reports no use")
        .isEqualTo(new SandboxMetrics(null, null, 2048.0, null, 4096.0, 0));
    Slow sink = new Slow();
    DrivenBackend.Handle h = provider.start(new ExecSandbox("sbx_metrics", "exe_sleep", id, null, null,
        "sleep 20", null, Map.of(), null, 30, 1 << 20, false, null, null), sink);
    assertThat(provider.metrics(req).processes()).isEqualTo(1);
    assertThat(sim.count(HttpMethod.GET, "/daemon/api/v1/info")).isGreaterThanOrEqualTo(2);
    h.signal("KILL");
    sink.await();

    sim.suspendDirectly(id);
    assertThatThrownBy(() -> provider.metrics(req)).isInstanceOf(ApiException.class)
        .hasMessageContaining("not running at Tensorlake");
    sim.terminateDirectly(id);
    assertThat(error(() -> provider.metrics(req)).code()).isEqualTo(ErrorCode.NOT_FOUND);
    sim.vanish(id);
    ProviderError gone = error(() -> provider.metrics(req));
    assertThat(gone.code()).isEqualTo(ErrorCode.NOT_FOUND);
    assertThat(gone.op()).isEqualTo("metrics");
  }

  @Test
  void adopt_attaches_a_fresh_adapter_resumes_a_suspended_sandbox_and_refuses_what_is_not_ours() {
    CreateSandbox req = create("sbx_adopt", config(null));
    String id = provider.create(req);
    try (DrivenBackend restarted = provider(KEY)) {
      assertThat(restarted.adopt(req, id)).isEqualTo(id);
      assertThat(restarted.exec(commandIn(id, "echo $GREETING")).stdout()).as("the env vars kept in the sandbox")
          .isEqualTo("hi there\n");

      sim.suspendDirectly(id);
      assertThat(restarted.adopt(req, id)).isEqualTo(id);
      assertThat(sim.count(HttpMethod.POST, "/sandboxes/" + id + "/resume")).isOne();
      assertThat(sim.sandbox(id).getString("status")).as("resumed and awaited").isEqualTo("running");
      assertThat(restarted.exec(commandIn(id, "echo back")).stdout()).isEqualTo("back\n");

      for (CreateSandbox foreign : List.of(new CreateSandbox("sbx_else", "org_test", "tensorlake", "ctk_x",
          config(null)), new CreateSandbox("sbx_adopt", "org_other", "tensorlake", "ctk_x", config(null)))) {
        ProviderError e = error(() -> restarted.adopt(foreign, id));
        assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
        assertThat(e.op()).isEqualTo("adopt");
      }
      String unmarked = sim.createDirectly("someone-elses");
      assertThat(error(() -> restarted.adopt(req, unmarked)).code()).isEqualTo(ErrorCode.NOT_FOUND);
      sim.vanish(unmarked);

      sim.terminateDirectly(id);
      assertThat(error(() -> restarted.adopt(req, id)).code()).isEqualTo(ErrorCode.NOT_FOUND);
      sim.vanish(id);
      assertThat(error(() -> restarted.adopt(req, id)).code()).isEqualTo(ErrorCode.NOT_FOUND);
      assertThat(sim.count(HttpMethod.DELETE, "/sandboxes/" + id)).as("adopt deletes nothing").isZero();
    }
  }

  /** One request straight to the simulator, with the key; the answer's status. */
  static int raw(String method, String url, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + KEY)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    try (HttpClient http = HttpClient.newHttpClient()) {
      return http.send(b.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }
  }

  @Test
  void the_simulator_refuses_what_the_described_api_does_not_have() throws Exception {
    String control = sim.url() + "/sandboxes/" + sandbox;
    assertThat(raw("PATCH", control, "{\"timeout_secs\": 60}")).as("no call moves a sandbox's lifetime")
        .isEqualTo(400);
    assertThat(raw("POST", control + "/resume", "{}")).as("resume takes no body").isEqualTo(400);
    assertThat(raw("GET", sim.daemonUrl() + "/api/v1/info", null)).as("the daemon needs the sandbox header")
        .isEqualTo(400);
    assertThat(sim.violations()).hasSize(3);
    sim.clearViolations();
  }

  @Test
  void many_small_uploads_each_end_their_request_before_the_file_is_closed() {
    // an answer arriving before the upload's pipe saw the file's end used to close the file under the pipe,
    // reset the finished request and leave the next request on its connection without an answer
    for (int i = 0; i < 40; i++) {
      DrivenBackend.Upload up = provider.openWrite(new FileOp("open_write", "sbx_main", sandbox, "many/f" + i,
          null, null, i % 2 == 0, false));
      up.write(("file " + i + "\n").getBytes(StandardCharsets.UTF_8));
      assertThat(up.commit().size()).isEqualTo(("file " + i + "\n").length());
    }
    assertThat(provider.listFiles(op("list", "many", false))).hasSize(40);
    provider.deleteFile(op("delete", "many", true));
  }
}
