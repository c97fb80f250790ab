package ai.bespokelabs.sandbox.adapters.codecapsules;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import ai.bespokelabs.sandbox.adapters.sim.OnContext;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The codecapsules adapter against the simulator, which refuses anything outside the assumed wire layout. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CodeCapsulesProviderTest {
  static CodeCapsulesSimulator sim;
  static Vertx vertx;
  static CodeCapsulesProvider provider;
  static Context context;
  static int seq;

  @BeforeAll
  static void start() {
    sim = CodeCapsulesSimulator.start();
    vertx = Vertx.vertx();
    provider = provider(CodeCapsulesSimulator.API_KEY);
    context = vertx.getOrCreateContext();
  }

  static CodeCapsulesProvider provider(String key) {
    return new CodeCapsulesProvider(vertx, new CodeCapsulesSettings(sim.apiUrl(), new Secret(key), "python-3.12", 60,
        Duration.ofSeconds(2)));
  }

  @AfterEach
  void conforming() {
    sim.faults().clear();
    sim.quota(Integer.MAX_VALUE);
    assertThat(sim.violations()).as("requests the assumed layout refuses").isEmpty();
  }

  @AfterAll
  static void stop() throws Exception {
    await(provider::close);
    sim.close();
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  static <T> T await(Supplier<Future<T>> work) {
    return OnContext.await(context, work);
  }

  static CreateSandbox request(SandboxConfig config) {
    seq++;
    return new CreateSandbox("sbx_" + seq, "org_1", "codecapsules", "ctk_" + seq + "_" + System.nanoTime(), config);
  }

  static SandboxConfig config(Double cpu, Integer memoryMb, Integer timeoutSecs, String template,
      Map<String, String> env) {
    return new SandboxConfig(null, cpu, memoryMb, null, null, timeoutSecs, null, env, null, null, template, null, null,
        null, null);
  }

  static String create() {
    return await(() -> provider.lifecycle().create(request(config(null, null, 600, null, Map.of()))));
  }

  static ExecSandbox exec(String rid, String command, int timeout, boolean keepStdin) {
    return new ExecSandbox("sbx", "exe_" + System.nanoTime(), rid, null, null, command, null, Map.of(), null, timeout,
        1 << 20, keepStdin, null, null);
  }

  static FileOp op(String rid, String path) {
    return new FileOp("op", "sbx", rid, path, null, null, false, false);
  }

  static ProviderError providerError(Throwable t) {
    assertThat(t).isInstanceOf(ProviderException.class);
    assertThat(t.getMessage() == null ? "" : t.getMessage()).doesNotContain(CodeCapsulesSimulator.API_KEY);
    ProviderError e = ((ProviderException) t).error();
    assertThat(e.toJson().encode()).doesNotContain(CodeCapsulesSimulator.API_KEY);
    return e;
  }

  /** Records output and the end; a closed {@code gate} holds output back, as a slow client does. */
  static final class Recording implements OutputSink {
    final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    final StringBuilder order = new StringBuilder();
    final CountDownLatch ended = new CountDownLatch(1);
    final CountDownLatch gate;
    volatile long bytes;
    volatile int exitCode;
    volatile boolean timedOut;
    volatile boolean cancelled;

    Recording(CountDownLatch gate) {
      this.gate = gate;
    }

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      bytes += data.length;
      (stream == Stream.STDOUT ? stdout : stderr).writeBytes(data);
      order.append(stream.wire()).append(':').append(new String(data, StandardCharsets.UTF_8));
      if (gate == null || gate.getCount() == 0) {
        return Future.succeededFuture();
      }
      Context ctx = Vertx.currentContext();
      java.util.concurrent.CompletableFuture<Void> opened = new java.util.concurrent.CompletableFuture<>();
      Thread.ofVirtual().start(() -> {
        try {
          gate.await();
        } catch (InterruptedException ignored) {
          // released all the same
        }
        opened.complete(null);
      });
      return Future.fromCompletionStage(opened, ctx);
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      this.exitCode = exitCode;
      this.timedOut = timedOut;
      this.cancelled = cancelled;
      ended.countDown();
    }

    Recording await() throws InterruptedException {
      assertThat(ended.await(30, TimeUnit.SECONDS)).as("execution ended").isTrue();
      return this;
    }

    synchronized String out() {
      return stdout.toString(StandardCharsets.UTF_8);
    }

    synchronized String err() {
      return stderr.toString(StandardCharsets.UTF_8);
    }
  }

  static Recording run(ExecSandbox request) throws InterruptedException {
    Recording sink = new Recording(null);
    await(() -> provider.executions().start(request, sink));
    return sink.await();
  }

  @Test
  void create_maps_the_settings_and_marks_the_sandbox_and_destroy_deletes_it() {
    CreateSandbox req = request(config(2.0, 2048, 1799, "node-20", Map.of("GREETING", "hi")));
    String rid = await(() -> provider.lifecycle().create(req));
    CodeCapsulesSimulator.Sandbox s = sim.sandboxes().get(rid);
    assertThat(s.flavor).isEqualTo("node-20");
    assertThat(s.cpu).isEqualTo(2);
    assertThat(s.memory).isEqualTo(2048);
    assertThat(s.ttlMinutes).as("seconds rounded up to minutes").isEqualTo(30);
    assertThat(s.metadata).containsEntry("bespoke_sandbox_id", req.sandboxId())
        .containsEntry("bespoke_organization_id", "org_1").containsEntry("bespoke_create_token", req.createToken());

    String defaults = await(() -> provider.lifecycle().create(request(null)));
    assertThat(sim.sandboxes().get(defaults).flavor).isEqualTo("python-3.12");
    assertThat(sim.sandboxes().get(defaults).ttlMinutes).isEqualTo(60);

    assertThat(await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid))).alreadyGone()).isFalse();
    assertThat(sim.sandboxes()).doesNotContainKey(rid);
    assertThat(await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid))).alreadyGone()).isTrue();
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", defaults)));
  }

  @Test
  void settings_outside_the_documented_limits_are_refused_before_any_call() {
    int before = sim.requests().size();
    List<SandboxConfig> refused = List.of(config(null, 8193, null, null, null), config(5.0, null, null, null, null),
        config(1.5, null, null, null, null), config(null, null, 480 * 60 + 1, null, null),
        config(null, null, null, "ubuntu", null),
        new SandboxConfig(null, null, null, null, "A100", null, null, null, null, null, null, null, null, null, null),
        new SandboxConfig(null, null, null, null, null, null, null, null, false, null, null, null, null, null, null),
        new SandboxConfig(null, null, null, null, null, null, null, null, null, null, null, "snap", null, null, null));
    for (SandboxConfig c : refused) {
      Throwable t = catchThrowable(() -> await(() -> provider.lifecycle().create(request(c))));
      assertThat(t).as(c.toString()).isInstanceOf(ApiException.class);
      assertThat(((ApiException) t).status()).isEqualTo(422);
    }
    assertThat(sim.requests()).hasSize(before);
  }

  @Test
  void executions_stream_interleaved_output_with_the_sandbox_env_and_report_timeouts() throws Exception {
    String rid = await(() -> provider.lifecycle().create(request(config(null, null, 600, null,
        Map.of("GREETING", "hello from codecapsules")))));
    Recording r = run(exec(rid, "echo \"$GREETING\"; sleep 0.2; echo oops >&2; sleep 0.2; echo done; exit 3", 30,
        false));
    assertThat(r.exitCode).isEqualTo(3);
    assertThat(r.order.toString()).isEqualTo("stdout:hello from codecapsules\nstderr:oops\nstdout:done\n");
    assertThat(sim.requests()).contains("POST /v1/sandboxes/" + rid + "/exec/stream");

    Recording slow = run(exec(rid, "echo started; sleep 30", 1, false));
    assertThat(slow.timedOut).isTrue();
    assertThat(slow.exitCode).isEqualTo(124);
    assertThat(slow.out()).isEqualTo("started\n");
    assertThat(slow.err()).contains("timed out after 1s");

    Recording quoted = run(new ExecSandbox("sbx", "exe_q", rid, null, null, "printf", List.of("%s|", "a b", "it's"),
        Map.of("X", "1"), null, 30, 1 << 20, false, null, null));
    assertThat(quoted.out()).isEqualTo("a b|it's|");
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
  }

  @Test
  void the_sandbox_env_is_kept_in_the_sandbox_and_read_once_by_a_node_that_does_not_know_it() throws Exception {
    String rid = await(() -> provider.lifecycle().create(request(config(null, null, 600, null,
        Map.of("GREETING", "kept inside", "OTHER", "x")))));
    assertThat(sim.sandboxes().get(rid).workspace().resolve(CodeCapsulesEnv.PATH)).as("written at create").exists();
    CodeCapsulesProvider other = provider(CodeCapsulesSimulator.API_KEY);
    try {
      String files = "GET /v1/sandboxes/" + rid + "/files";
      long reads = sim.requests().stream().filter(files::equals).count();
      Recording sink = new Recording(null);
      await(() -> other.executions().start(new ExecSandbox("sbx", "exe_other", rid, null, null,
          "echo \"$GREETING/$OTHER\"", null, Map.of("OTHER", "mine"), null, 30, 1 << 20, false, null, null), sink));
      assertThat(sink.await().out()).as("the execution's env on top").isEqualTo("kept inside/mine\n");
      Recording again = new Recording(null);
      await(() -> other.executions().start(exec(rid, "echo \"$GREETING\"", 30, false), again));
      assertThat(again.await().out()).isEqualTo("kept inside\n");
      assertThat(sim.requests().stream().filter(files::equals).count() - reads).as("read once, then cached")
          .isEqualTo(1);
    } finally {
      await(other::close);
    }
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));

    long uploads = sim.requests().stream().filter(r -> r.startsWith("PUT ")).count();
    String plain = create();
    assertThat(sim.requests().stream().filter(r -> r.startsWith("PUT ")).count()).as("no env, no file")
        .isEqualTo(uploads);
    Recording none = run(exec(plain, "echo \"${GREETING:-unset}\"", 30, false));
    assertThat(none.out()).isEqualTo("unset\n");
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", plain)));
  }

  @Test
  void a_sandbox_whose_env_cannot_be_written_is_deleted() {
    int deletes = sim.deletes();
    sim.faults().status(HttpMethod.PUT, "/v1/sandboxes/", 500, Map.of(), null, 1);
    ProviderError e = providerError(catchThrowable(() -> await(() -> provider.lifecycle().create(request(config(null,
        null, 600, null, Map.of("K", "v")))))));
    assertThat(e.op()).isEqualTo("create");
    assertThat(e.context()).containsEntry("cleanup_status", "deleted");
    assertThat(sim.deletes()).isEqualTo(deletes + 1);
  }

  @Test
  void stdin_is_sent_whole_with_the_command_once_closed() throws Exception {
    String rid = create();
    Recording sink = new Recording(null);
    Execution e = await(() -> provider.executions().start(exec(rid, "cat; echo end >&2", 30, true), sink));
    await(() -> e.write(Buffer.buffer("héllo\n")));
    await(() -> e.write(Buffer.buffer(new byte[] {0, 1, 2})));
    await(e::closeStdin);
    sink.await();
    assertThat(sink.stdout.toByteArray()).isEqualTo("héllo\n\0\1\2".getBytes(StandardCharsets.UTF_8));
    assertThat(sink.err()).isEqualTo("end\n");
    assertThat(sink.exitCode).isZero();
    assertThatThrownBy(() -> await(() -> e.write(Buffer.buffer("late")))).isInstanceOf(ApiException.class);

    Recording timed = new Recording(null);
    Execution t = await(() -> provider.executions().start(exec(rid, "sleep 30", 1, true), timed));
    await(t::closeStdin);
    timed.await();
    assertThat(timed.timedOut).isTrue();
    assertThat(timed.exitCode).isEqualTo(124);
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
  }

  @Test
  void a_signal_ends_a_streamed_command_and_a_slow_sink_holds_the_output_back() throws Exception {
    String rid = create();
    Recording sink = new Recording(null);
    Execution e = await(() -> provider.executions().start(exec(rid, "echo up; sleep 30", 60, false), sink));
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> sink.out().equals("up\n"));
    await(() -> e.signal("TERM"));
    sink.await();
    assertThat(sink.cancelled).isTrue();

    CountDownLatch gate = new CountDownLatch(1);
    Recording slow = new Recording(gate);
    long total = 32L << 20;
    await(() -> provider.executions().start(exec(rid, "head -c " + total + " /dev/zero | tr '\\0' 'x'", 120, false),
        slow));
    Thread.sleep(1500);
    assertThat(slow.bytes).as("nothing more is read while the sink is full").isLessThan(total / 2);
    gate.countDown();
    slow.await();
    assertThat(slow.bytes).isEqualTo(total);
    assertThat(slow.exitCode).isZero();
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
  }

  @Test
  void files_upload_list_download_archive_and_delete() throws Exception {
    String rid = create();
    FileWriter w = await(() -> provider.files().openWrite(new FileOp("write", "sbx", rid, "dir/run.sh", null, null,
        true, false)));
    await(() -> w.write(Buffer.buffer("#!/bin/sh\necho ran\n")));
    FileEntry written = await(w::commit);
    assertThat(written.size()).isEqualTo(19);
    assertThat(written.mode()).isEqualTo(0755);
    assertThat(Files.isExecutable(sim.sandboxes().get(rid).workspace().resolve("dir/run.sh"))).isTrue();

    List<FileEntry> listed = await(() -> provider.files().list(op(rid, "dir")));
    assertThat(listed).extracting(FileEntry::name).containsExactly("run.sh");
    assertThat(listed.get(0).size()).isEqualTo(19);
    assertThat(listed.get(0).type()).isEqualTo(FileEntry.FILE);
    assertThat(listed.get(0).path()).isEqualTo(sim.sandboxes().get(rid).workspace().resolve("dir/run.sh").toString());
    assertThat(await(() -> provider.files().list(op(rid, "."))).get(0).isDir()).isTrue();

    FileReader r = await(() -> provider.files().openRead(op(rid, "dir/run.sh")));
    assertThat(r.size()).isEqualTo(19);
    assertThat(read(r)).isEqualTo("#!/bin/sh\necho ran\n");
    Throwable dir = catchThrowable(() -> await(() -> provider.files().openRead(op(rid, "dir"))));
    assertThat(((ApiException) dir).status()).isEqualTo(422);
    Throwable missing = catchThrowable(() -> await(() -> provider.files().openRead(op(rid, "nope"))));
    assertThat(((ApiException) missing).status()).isEqualTo(404);

    FileReader archive = await(() -> provider.files().openArchiveRead(op(rid, "dir")));
    ByteArrayOutputStream tgz = new ByteArrayOutputStream();
    Buffer chunk;
    while ((chunk = await(() -> archive.read(65536))) != null) {
      tgz.writeBytes(chunk.getBytes());
    }
    await(archive::close);
    FileWriter extract = await(() -> provider.files().openArchiveWrite(op(rid, "copy")));
    await(() -> extract.write(Buffer.buffer(tgz.toByteArray())));
    await(extract::commit);
    assertThat(Files.readString(sim.sandboxes().get(rid).workspace().resolve("copy/run.sh")))
        .isEqualTo("#!/bin/sh\necho ran\n");

    Throwable notEmpty = catchThrowable(() -> await(() -> provider.files().delete(op(rid, "dir"))));
    assertThat(((ApiException) notEmpty).status()).isEqualTo(409);
    await(() -> provider.files().delete(new FileOp("delete", "sbx", rid, "dir", null, null, false, true)));
    Throwable gone = catchThrowable(() -> await(() -> provider.files().delete(op(rid, "dir"))));
    assertThat(((ApiException) gone).status()).isEqualTo(404);

    SandboxMetrics m = await(() -> provider.metrics().sample(new MetricsRequest("sbx", rid, null, null)));
    assertThat(m.cpuPercent()).isEqualTo(1.5);
    assertThat(m.memoryLimitMb()).isEqualTo(512.0);
    assertThat(m.processes()).isNull();
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
  }

  @Test
  void relative_paths_resolve_under_the_working_directory_and_may_not_climb_out_of_it() throws Exception {
    String rid = create();
    java.nio.file.Path workspace = sim.sandboxes().get(rid).workspace();
    FileWriter w = await(() -> provider.files().openWrite(op(rid, "notes/hello.txt")));
    await(() -> w.write(Buffer.buffer("hello\n")));
    FileEntry written = await(w::commit);
    assertThat(workspace.resolve("notes/hello.txt")).hasContent("hello\n");
    assertThat(written.path()).as("reported absolute, as commands see it")
        .isEqualTo(workspace.resolve("notes/hello.txt").toString());
    assertThat(run(exec(rid, "cat notes/hello.txt", 30, false)).out()).isEqualTo("hello\n");

    for (String same : List.of("notes/hello.txt", "./notes//hello.txt", "notes/../notes/hello.txt",
        workspace.resolve("notes/hello.txt").toString())) {
      assertThat(read(await(() -> provider.files().openRead(op(rid, same))))).as(same).isEqualTo("hello\n");
    }
    List<FileEntry> listed = await(() -> provider.files().list(op(rid, "notes")));
    assertThat(listed).extracting(FileEntry::path).containsExactly(workspace.resolve("notes/hello.txt").toString());

    int requests = sim.requests().size();
    for (String escape : List.of("../outside.txt", "notes/../../outside.txt", "..")) {
      Throwable read = catchThrowable(() -> await(() -> provider.files().openRead(op(rid, escape))));
      Throwable write = catchThrowable(() -> await(() -> provider.files().openWrite(op(rid, escape))));
      Throwable list = catchThrowable(() -> await(() -> provider.files().list(op(rid, escape))));
      Throwable delete = catchThrowable(() -> await(() -> provider.files().delete(op(rid, escape))));
      for (Throwable t : List.of(read, write, list, delete)) {
        assertThat(t).as(escape).isInstanceOf(ApiException.class);
        assertThat(((ApiException) t).status()).isEqualTo(422);
        assertThat(((ApiException) t).detail()).isEqualTo("path must stay inside the sandbox");
      }
    }
    assertThat(sim.requests()).as("refused before any call").hasSize(requests);
    Throwable workdir = catchThrowable(() -> await(() -> provider.files().delete(
        new FileOp("delete", "sbx", rid, "notes/..", null, null, false, true))));
    assertThat(((ApiException) workdir).status()).as("the working directory itself").isEqualTo(422);
    assertThat(workspace.resolve("notes/hello.txt")).exists();

    await(() -> provider.files().delete(op(rid, "notes/hello.txt")));
    assertThat(workspace.resolve("notes/hello.txt")).doesNotExist();
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
  }

  static String read(FileReader r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Buffer chunk;
    while ((chunk = await(() -> r.read(4))) != null) {
      out.writeBytes(chunk.getBytes());
    }
    await(r::close);
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void provider_failures_map_onto_the_contract_without_provider_text() throws Exception {
    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 401, Map.of(), null, 1);
    ProviderError auth = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(auth.retryable()).isFalse();

    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 429, Map.of("Retry-After", "7"), null, 1);
    ProviderError limited = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L);

    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 429, Map.of(),
        new JsonObject().put("error", new JsonObject().put("code", "rate_limited").put("retryAfterMs", 1500)), 1);
    ProviderError hinted = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(hinted.context()).containsEntry("retry_after_secs", 2L).containsEntry("provider_code", "rate_limited");

    sim.quota(0);
    ProviderError quota = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(quota.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(quota.retryable()).isFalse();
    assertThat(quota.context()).containsEntry("provider_code", "quota_exceeded");
    sim.quota(Integer.MAX_VALUE);

    sim.faults().status(HttpMethod.POST, "/v1/sandboxes", 500, Map.of(), null, 1);
    ProviderError failed = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(failed.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(failed.context()).containsEntry("cleanup_status", "unknown");

    int before = sim.sandboxes().size();
    sim.faults().loseResponse(HttpMethod.POST, "/v1/sandboxes", 1);
    ProviderError lost = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(lost.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(sim.sandboxes()).hasSize(before + 1);

    sim.faults().delay(HttpMethod.POST, "/v1/sandboxes", 3000, 1);
    ProviderError slow = providerError(catchThrowable(CodeCapsulesProviderTest::create));
    assertThat(slow.code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(slow.httpStatus()).isEqualTo(504);

    String rid = create();
    sim.faults().status(HttpMethod.POST, "/v1/sandboxes/" + rid + "/exec/stream", 503, Map.of("Retry-After", "3"),
        null, 1);
    ProviderError busy = providerError(catchThrowable(() -> run(exec(rid, "true", 10, false))));
    assertThat(busy.code()).isEqualTo(ErrorCode.EXECUTION_FAILED);
    assertThat(busy.retryable()).isTrue();
    assertThat(busy.context()).containsEntry("retry_after_secs", 3L);

    sim.faults().dropStream("/v1/sandboxes/" + rid + "/exec/stream", 1, 1);
    Recording dropped = run(exec(rid, "echo one; sleep 0.3; echo two", 10, false));
    assertThat(dropped.exitCode).isEqualTo(-1);
    assertThat(dropped.out()).isEqualTo("one\n");

    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", rid)));
    ProviderError missing = providerError(catchThrowable(() -> run(exec(rid, "true", 10, false))));
    assertThat(missing.code()).isEqualTo(ErrorCode.NOT_FOUND);
    ProviderError noMetrics = providerError(catchThrowable(() -> await(() -> provider.metrics().sample(
        new MetricsRequest("sbx", rid, null, null)))));
    assertThat(noMetrics.code()).isEqualTo(ErrorCode.NOT_FOUND);
    sim.sandboxes().keySet().forEach(id -> await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", id))));
  }

  @Test
  void there_is_no_list_and_health_is_one_authenticated_call() {
    ProviderError list = providerError(catchThrowable(() -> await(() -> provider.inventory().list())));
    assertThat(list.code()).isEqualTo(ErrorCode.FEATURE_NOT_SUPPORTED);
    await(() -> provider.inventory().checkHealth());

    CodeCapsulesProvider wrong = provider("cc_wrong_key");
    try {
      ProviderError bad = providerError(catchThrowable(() -> await(() -> wrong.inventory().checkHealth())));
      assertThat(bad.code()).isEqualTo(ErrorCode.AUTHENTICATION);
    } finally {
      await(wrong::close);
      sim.clearViolations();
    }
  }

  @Test
  void reconciliation_looks_up_the_known_sandboxes_one_by_one() {
    CreateSandbox req = request(config(null, null, 600, null, Map.of()));
    String kept = await(() -> provider.lifecycle().create(req));
    String gone = create();
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", gone)));
    List<Resource> listed = await(() -> provider.inventory().list(List.of(kept, gone, kept)));
    assertThat(listed).as("the vanished one is left out, so it is found missing")
        .containsExactly(new Resource(kept, req.sandboxId(), "running", null));
    assertThat(await(() -> provider.inventory().list(List.of()))).isEmpty();
    assertThat(CodeCapsulesLifecycle.status("starting")).isEqualTo("provisioning");
    assertThat(CodeCapsulesLifecycle.status("stopped")).isEqualTo("terminated");
    assertThat(CodeCapsulesLifecycle.status("error")).isEqualTo("failed");

    sim.faults().status(HttpMethod.GET, "/v1/sandboxes/" + kept, 503, Map.of(), null, 1);
    ProviderError outage = providerError(catchThrowable(() -> await(() -> provider.inventory().list(List.of(kept)))));
    assertThat(outage.retryable()).isTrue();
    assertThat(outage.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", kept)));
  }

  @Test
  void the_simulator_refuses_requests_outside_the_assumed_layout() throws Exception {
    java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
        .version(java.net.http.HttpClient.Version.HTTP_1_1).build();
    String create = new JsonObject().put("flavor", "python-3.12").encode();
    record Case(String method, String path, String auth, String body, int status) {}
    List<Case> cases = List.of(
        new Case("POST", "/sandboxes", null, create, 401),
        new Case("POST", "/sandboxes", "Bearer cc_wrong", create, 401),
        new Case("POST", "/sandbox", "Bearer " + CodeCapsulesSimulator.API_KEY, create, 404),
        new Case("POST", "/sandboxes", "Bearer " + CodeCapsulesSimulator.API_KEY,
            new JsonObject().put("flavor", "python-3.12").put("image", "x").encode(), 400),
        new Case("POST", "/sandboxes", "Bearer " + CodeCapsulesSimulator.API_KEY,
            new JsonObject().put("cpu", "2").encode(), 400),
        new Case("POST", "/sandboxes", "Bearer " + CodeCapsulesSimulator.API_KEY,
            new JsonObject().put("ttl", 481).encode(), 400),
        new Case("GET", "/sandboxes", "Bearer " + CodeCapsulesSimulator.API_KEY, null, 405));
    for (Case c : cases) {
      java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(java.net.URI.create(sim.apiUrl() + c.path()))
          .header("Content-Type", "application/json").timeout(Duration.ofSeconds(5))
          .method(c.method(), c.body() == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
              : java.net.http.HttpRequest.BodyPublishers.ofString(c.body()));
      if (c.auth() != null) {
        b.header("Authorization", c.auth());
      }
      int before = sim.violations().size();
      java.net.http.HttpResponse<String> r;
      try {
        r = http.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      } catch (java.io.IOException e) {
        throw new AssertionError(c.toString(), e);
      }
      assertThat(r.statusCode()).as(c.toString()).isEqualTo(c.status());
      assertThat(sim.violations()).as(c.toString()).hasSize(before + 1);
    }
    sim.clearViolations();
  }
}
