package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.http.WindowedDownload;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The E2B adapter against the simulator, which refuses anything E2B's specs and protos do not allow. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class E2bProviderTest {
  static E2bSimulator sim;
  static Vertx vertx;
  static BlockingE2b provider;

  @BeforeAll
  static void start() {
    sim = E2bSimulator.start();
    vertx = Vertx.vertx();
    provider = provider(sim.apiUrl(), E2bSimulator.API_KEY);
  }

  static BlockingE2b provider(String apiUrl, String key) {
    return new BlockingE2b(vertx, new E2bProvider(vertx, new E2bSettings(apiUrl, new Secret(key), "e2b.app",
        sim.sandboxUrl(), "base", "test-scope", 600, Duration.ofSeconds(2)), Clock.systemUTC()));
  }

  /** Runs the program to its end, as a synchronous execute does. */
  static ExecResult exec(BlockingE2b backend, ExecSandbox request) {
    Recording sink = new Recording(null);
    backend.start(request, sink);
    try {
      sink.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
    return new ExecResult(sink.exitCode, sink.out(), sink.err(), false, false, sink.timedOut, sink.durationMs,
        sink.cancelled, 0);
  }

  @AfterEach
  void conforming() {
    sim.faults().clear();
    assertThat(sim.violations()).as("requests E2B would refuse").isEmpty();
  }

  @AfterAll
  static void stop() throws Exception {
    provider.close();
    sim.close();
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  static int seq;

  static CreateSandbox createRequest(SandboxConfig config) {
    seq++;
    return new CreateSandbox("sbx_" + seq + "_" + System.nanoTime(), "org_1", "e2b", "ctk_" + seq + "_" + System.nanoTime(),
        config);
  }

  static SandboxConfig config(Map<String, String> env, Integer timeoutSecs) {
    return new SandboxConfig(null, null, null, null, null, timeoutSecs, null, env, false, null, null, null, null,
        null, null);
  }

  static String create() {
    return provider.create(createRequest(config(Map.of(), 300)));
  }

  static ExecSandbox exec(String rid, String code, String language, String command, List<String> args, int timeout,
      boolean keepStdin) {
    return new ExecSandbox("sbx", "exe_" + System.nanoTime(), rid, code, language, command, args, Map.of(), null,
        timeout, 1 << 20, keepStdin, null, null);
  }

  /** Records every output chunk and the end; {@code gate} (when closed) holds output back, as a slow client does. */
  static final class Recording implements OutputSink {
    final LinkedBlockingQueue<String> chunks = new LinkedBlockingQueue<>();
    final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    final AtomicLong bytes = new AtomicLong();
    final CountDownLatch ended = new CountDownLatch(1);
    final CountDownLatch gate;
    volatile int exitCode;
    volatile boolean timedOut;
    volatile boolean cancelled;
    volatile long durationMs;
    volatile int exits;

    Recording(CountDownLatch gate) {
      this.gate = gate;
    }

    @Override
    public Future<Void> output(Stream stream, byte[] data) {
      bytes.addAndGet(data.length);
      synchronized (this) {
        (stream == Stream.STDOUT ? stdout : stderr).writeBytes(data);
      }
      chunks.add(stream.wire() + ":" + new String(data, StandardCharsets.UTF_8));
      if (gate == null || gate.getCount() == 0) {
        return Future.succeededFuture();
      }
      // taken only once the gate opens; the backend reads nothing more of the program until then
      io.vertx.core.Context context = Vertx.currentContext();
      java.util.concurrent.CompletableFuture<Void> opened = new java.util.concurrent.CompletableFuture<>();
      Thread.ofVirtual().start(() -> {
        try {
          gate.await();
        } catch (InterruptedException ignored) {
          // released all the same
        }
        opened.complete(null);
      });
      return Future.fromCompletionStage(opened, context);
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      this.exitCode = exitCode;
      this.timedOut = timedOut;
      this.cancelled = cancelled;
      this.durationMs = durationMs;
      exits++;
      ended.countDown();
    }

    void await() throws InterruptedException {
      assertThat(ended.await(20, TimeUnit.SECONDS)).as("execution ended").isTrue();
    }

    synchronized String out() {
      return stdout.toString(StandardCharsets.UTF_8);
    }

    synchronized String err() {
      return stderr.toString(StandardCharsets.UTF_8);
    }
  }

  static ProviderError error(Runnable r) {
    try {
      r.run();
    } catch (ProviderException e) {
      assertThat(e.getMessage()).doesNotContain(E2bSimulator.API_KEY);
      return e.error();
    }
    throw new AssertionError("expected a provider error");
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------------

  @Test
  void create_stamps_our_marks_and_runs_code_shell_lines_and_programs_like_the_local_backend() {
    CreateSandbox req = createRequest(config(Map.of("GREETING", "hi there"), 120));
    String id = provider.create(req);
    E2bSimulator.Sandbox s = sim.sandboxes().get(id);
    assertThat(s.metadata).containsEntry(E2bProvider.META_SCOPE, "test-scope")
        .containsEntry(E2bProvider.META_SANDBOX, req.sandboxId())
        .containsEntry(E2bProvider.META_ORG, "org_1")
        .containsEntry(E2bProvider.META_TOKEN, req.createToken());
    assertThat(s.templateId).isEqualTo("base");
    assertThat(Duration.between(s.startedAt, s.endAt()).toSeconds()).isBetween(179L, 181L);

    ExecResult py = exec(provider, exec(id, "print(6 * 7)", "python", null, null, 10, false));
    assertThat(py.stdout()).isEqualTo("42\n");
    assertThat(py.exitCode()).isZero();

    ExecResult sh = exec(provider, exec(id, null, null, "echo \"$GREETING\"; echo oops >&2; exit 3", null, 10, false));
    assertThat(sh.stdout()).isEqualTo("hi there\n");
    assertThat(sh.stderr()).isEqualTo("oops\n");
    assertThat(sh.exitCode()).isEqualTo(3);

    ExecResult argv = exec(provider, exec(id, null, null, "printf", List.of("[%s]", "a b"), 10, false));
    assertThat(argv.stdout()).isEqualTo("[a b]");

    ExecResult utf8 = exec(provider, exec(id, null, null, "printf 'h\\303\\251llo \\360\\237\\230\\200'", null, 10, false));
    assertThat(utf8.stdout()).isEqualTo("héllo 😀");

    assertThat(provider.destroy(new DestroySandbox(req.sandboxId(), id)).alreadyGone()).isFalse();
    assertThat(sim.sandboxes()).doesNotContainKey(id);
    assertThat(provider.destroy(new DestroySandbox(req.sandboxId(), id)).alreadyGone()).isTrue();
  }

  @Test
  void output_streams_while_the_program_runs_and_stdin_reaches_it() throws Exception {
    String id = create();
    Recording sink = new Recording(null);
    ExecHandle h = provider.start(exec(id, null, null, "read line; echo got:$line; cat; echo bye", null, 10, true), sink);
    h.writeStdin("hello\n".getBytes(StandardCharsets.UTF_8));
    assertThat(sink.chunks.poll(10, TimeUnit.SECONDS)).as("output before stdin is closed").isEqualTo("stdout:got:hello\n");
    h.writeStdin("more\n".getBytes(StandardCharsets.UTF_8));
    h.closeStdin();
    sink.await();
    assertThat(sink.out()).isEqualTo("got:hello\nmore\nbye\n");
    assertThat(sink.exitCode).isZero();
    assertThatThrownBy(() -> h.writeStdin(new byte[] {1})).isInstanceOf(ApiException.class)
        .extracting(e -> ((ApiException) e).status()).isEqualTo(409);

    Recording closed = new Recording(null);
    ExecHandle noStdin = provider.start(exec(id, null, null, "cat; echo eof", null, 10, false), closed);
    closed.await();
    assertThat(closed.out()).isEqualTo("eof\n");
    assertThatThrownBy(() -> noStdin.writeStdin(new byte[] {1})).isInstanceOf(ApiException.class);
  }

  @Test
  void signals_end_the_program_as_cancelled_and_int_is_refused() throws Exception {
    String id = create();
    Recording term = new Recording(null);
    ExecHandle h = provider.start(exec(id, null, null, "echo ready; exec sleep 30", null, 20, false), term);
    assertThat(term.chunks.poll(10, TimeUnit.SECONDS)).isEqualTo("stdout:ready\n");
    assertThatThrownBy(() -> h.signal("INT")).isInstanceOf(ApiException.class)
        .extracting(e -> ((ApiException) e).status()).isEqualTo(422);
    h.signal("TERM");
    term.await();
    assertThat(term.exitCode).isEqualTo(143);
    assertThat(term.cancelled).isTrue();
    assertThat(term.timedOut).isFalse();

    Recording kill = new Recording(null);
    ExecHandle k = provider.start(exec(id, null, null, "echo ready; exec sleep 30", null, 20, false), kill);
    assertThat(kill.chunks.poll(10, TimeUnit.SECONDS)).isEqualTo("stdout:ready\n");
    k.signal("KILL");
    kill.await();
    assertThat(kill.exitCode).isEqualTo(137);
    assertThat(kill.cancelled).isTrue();
  }

  @Test
  void a_program_past_its_timeout_is_killed_and_reports_124() throws Exception {
    String id = create();
    Recording sink = new Recording(null);
    provider.start(exec(id, null, null, "echo started; exec sleep 30", null, 1, false), sink);
    sink.await();
    assertThat(sink.exitCode).isEqualTo(124);
    assertThat(sink.timedOut).isTrue();
    assertThat(sink.out()).isEqualTo("started\n");
    assertThat(sink.durationMs).isBetween(900L, 8_000L);
    assertThat(sink.exits).isEqualTo(1);
    assertThat(sim.sandboxes().get(id).pids()).as("the program was killed in the sandbox").isEmpty();
  }

  @Test
  void a_blocked_sink_holds_the_program_back_and_every_byte_arrives_once_it_reads() throws Exception {
    String id = create();
    CountDownLatch gate = new CountDownLatch(1);
    Recording sink = new Recording(gate);
    int total = 32 << 20;
    provider.start(exec(id, null, null, "head -c " + total + " /dev/zero | tr '\\0' x; echo done >&2", null, 20,
        false), sink);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (sink.bytes.get() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    // with the sink blocked nothing is read: the program (32 MiB, milliseconds of work) cannot finish
    Thread.sleep(1000);
    assertThat(sim.sandboxes().get(id).pids()).as("the program is held back").isNotEmpty();
    assertThat(sink.ended.getCount()).isEqualTo(1);
    gate.countDown();
    sink.await();
    assertThat(sink.exitCode).isZero();
    assertThat(sink.out()).hasSize(total).matches("x+");
    assertThat(sink.chunks).contains("stderr:done\n");
  }

  // ---- files, listing, timeouts -----------------------------------------------------------------------------

  static FileOp fileOp(String rid, String path, boolean executable, boolean recursive) {
    return new FileOp("files", "sbx_files", rid, path, null, null, executable, recursive);
  }

  /** Uploads {@code data} in chunks of 100 000 bytes, as the gateway's file sessions do. */
  static FileEntry put(String rid, String path, byte[] data, boolean executable) throws Exception {
    WritableFile w = provider.openWrite(fileOp(rid, path, executable, false));
    for (int off = 0; off < data.length; off += 100_000) {
      w.write(Arrays.copyOfRange(data, off, Math.min(data.length, off + 100_000)));
    }
    return w.commit();
  }

  static byte[] get(String rid, String path) throws Exception {
    try (ReadableFile r = provider.openRead(fileOp(rid, path, false, false))) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[64 * 1024];
      for (int n; (n = r.read(buf)) >= 0; ) {
        out.write(buf, 0, n);
      }
      assertThat((long) out.size()).isEqualTo(r.size());
      return out.toByteArray();
    }
  }

  static List<String> names(String rid, String path) {
    return provider.listFiles(fileOp(rid, path, false, false)).stream().map(FileEntry::name).toList();
  }

  /** The status of the files API answer {@code r} throws. */
  static int refused(org.assertj.core.api.ThrowableAssert.ThrowingCallable r) {
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(r);
    assertThat(t).isInstanceOf(ApiException.class);
    return ((ApiException) t).status();
  }

  @Test
  void files_round_trip_through_envd() throws Exception {
    String id = create();
    byte[] data = new byte[300_000];
    new Random(7).nextBytes(data);
    FileEntry up = put(id, "work/dir/data.bin", data, false);
    assertThat(up.path()).isEqualTo("/home/user/work/dir/data.bin");
    assertThat(up.name()).isEqualTo("data.bin");
    assertThat(up.size()).isEqualTo(300_000);
    assertThat(up.isDir()).isFalse();
    assertThat(up.mode() & 0111).as("not executable").isZero();
    assertThat(sim.uploadLengths()).as("streamed with a known length").contains(300_000L).doesNotContain(-1L);
    put(id, "/tmp/note.txt", "hello".getBytes(StandardCharsets.UTF_8), false);
    FileEntry script = put(id, "bin/run.sh", "#!/bin/sh\necho ran\n".getBytes(StandardCharsets.UTF_8), true);
    assertThat(script.mode()).isEqualTo(0755);
    assertThat(exec(provider, exec(id, null, null, "bin/run.sh", null, 10, false)).stdout()).isEqualTo("ran\n");

    assertThat(get(id, "work/dir/data.bin")).isEqualTo(data);
    assertThat(get(id, "/tmp/note.txt")).asString().isEqualTo("hello");
    put(id, "/tmp/note.txt", "bye".getBytes(StandardCharsets.UTF_8), false);
    assertThat(get(id, "/tmp/note.txt")).asString().as("replaced").isEqualTo("bye");
    put(id, "/tmp/empty", new byte[0], false);
    assertThat(get(id, "/tmp/empty")).isEmpty();
    assertThat(names(id, "work/dir")).as("no hidden upload left").containsExactly("data.bin");
    assertThat(names(id, ".")).contains("bin", "work");
    List<FileEntry> work = provider.listFiles(fileOp(id, "work", false, false));
    assertThat(work).singleElement().satisfies(e -> {
      assertThat(e.isDir()).isTrue();
      assertThat(e.path()).isEqualTo("/home/user/work/dir");
      assertThat(e.mode()).as("permission bits only").isLessThanOrEqualTo(0777);
    });
    assertThat(provider.listFiles(fileOp(id, "work/dir/data.bin", false, false))).singleElement()
        .satisfies(e -> assertThat(e.size()).isEqualTo(300_000));
    ExecResult seen = exec(provider, exec(id, null, null, "wc -c < work/dir/data.bin", null, 10, false));
    assertThat(seen.stdout().trim()).isEqualTo("300000");

    assertThat(refused(() -> provider.openRead(fileOp(id, "missing.txt", false, false)))).isEqualTo(404);
    assertThat(refused(() -> provider.openRead(fileOp(id, "work", false, false)))).isEqualTo(422);
    assertThat(refused(() -> provider.openWrite(fileOp(id, "work", false, false)))).isEqualTo(422);
    assertThat(refused(() -> provider.listFiles(fileOp(id, "nowhere", false, false)))).isEqualTo(404);
    assertThat(refused(() -> provider.deleteFile(fileOp(id, "work", false, false)))).as("not empty").isEqualTo(409);
    provider.deleteFile(fileOp(id, "work/dir/data.bin", false, false));
    assertThat(refused(() -> provider.openRead(fileOp(id, "work/dir/data.bin", false, false)))).isEqualTo(404);
    assertThat(refused(() -> provider.deleteFile(fileOp(id, "work/dir/data.bin", false, false)))).isEqualTo(404);
    provider.deleteFile(fileOp(id, "work/dir", false, false));
    put(id, "work/again/x", new byte[10], false);
    provider.deleteFile(fileOp(id, "work", false, true));
    assertThat(sim.sandboxes().get(id).hostPath("work")).doesNotExist();
  }

  @Test
  void an_aborted_or_failed_upload_leaves_nothing_behind() throws Exception {
    String id = create();
    E2bSimulator.Sandbox remote = sim.sandboxes().get(id);
    int posts = uploads();
    WritableFile w = provider.openWrite(fileOp(id, "gone/never.bin", false, false));
    w.write(new byte[1000]);
    Path spool = ((BlockingE2b.Upload) w).spool();
    assertThat(spool).exists();
    w.abort();
    w.abort();
    assertThat(spool).doesNotExist();
    assertThat(uploads()).as("nothing was sent").isEqualTo(posts);

    // the upload itself fails
    WritableFile full = provider.openWrite(fileOp(id, "gone/full.bin", false, false));
    full.write(new byte[1000]);
    sim.faults().status(HttpMethod.POST, "/files", 507, Map.of(), null, 1);
    assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(ProviderException.class, full::commit).error()
        .code()).isEqualTo(ErrorCode.WORKSPACE);
    assertThat(((BlockingE2b.Upload) full).spool()).doesNotExist();

    // uploaded, but the rename fails: the hidden file is removed again
    put(id, "gone/kept.bin", new byte[] {1}, false);
    WritableFile moved = provider.openWrite(fileOp(id, "gone/kept.bin", false, false));
    moved.write(new byte[] {2, 2});
    sim.faults().status(HttpMethod.POST, "/filesystem.Filesystem/Move", 500, Map.of(),
        new JsonObject().put("code", "internal").put("message", "no"), 1);
    assertThat(error(() -> {
      try {
        moved.commit();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }).code()).isEqualTo(ErrorCode.COMMAND_FAILED);
    assertThat(names(id, "gone")).as("the old file stays, nothing else").containsExactly("kept.bin");
    assertThat(get(id, "gone/kept.bin")).containsExactly(1);
    assertThat(remote.hostPath("gone/never.bin")).doesNotExist();
  }

  static int uploads() {
    return (int) sim.requests().stream().filter(r -> r.equals("envd POST /files")).count();
  }

  @Test
  void a_download_reads_ahead_only_a_window_and_can_stop_midway() throws Exception {
    String id = create();
    Path big = sim.sandboxes().get(id).hostPath("big.bin");
    byte[] block = new byte[1 << 20];
    new Random(3).nextBytes(block);
    try (var out = java.nio.file.Files.newOutputStream(big)) {
      for (int i = 0; i < 48; i++) {
        out.write(block);
      }
    }
    ReadableFile r = provider.openRead(fileOp(id, "big.bin", false, false));
    assertThat(r.size()).isEqualTo(48L << 20);
    byte[] one = new byte[1];
    assertThat(r.read(one)).isEqualTo(1);
    Thread.sleep(500);
    assertThat(((BlockingE2b.Download) r).queued()).as("paused: only what was asked for").isLessThanOrEqualTo(WindowedDownload.WINDOW);
    r.close();

    try (ReadableFile all = provider.openRead(fileOp(id, "big.bin", false, false))) {
      java.security.MessageDigest seen = java.security.MessageDigest.getInstance("SHA-256");
      java.security.MessageDigest sent = java.security.MessageDigest.getInstance("SHA-256");
      for (int i = 0; i < 48; i++) {
        sent.update(block);
      }
      byte[] buf = new byte[256 * 1024];
      long total = 0;
      for (int n; (n = all.read(buf)) >= 0; ) {
        seen.update(buf, 0, n);
        total += n;
      }
      assertThat(total).isEqualTo(48L << 20);
      assertThat(seen.digest()).isEqualTo(sent.digest());
    }
  }

  @Test
  void list_pages_through_our_scope_only_and_destroy_works_without_a_resource_id() {
    String mine = create();
    sim.createBehindTheBack(Map.of(E2bProvider.META_SCOPE, "another-deployment", E2bProvider.META_SANDBOX, "sbx_x"), 60);
    sim.createBehindTheBack(Map.of(E2bProvider.META_SCOPE, "test-scope"), 60);
    for (int i = 0; i < 101; i++) {
      sim.createBehindTheBack(Map.of(E2bProvider.META_SCOPE, "test-scope", E2bProvider.META_SANDBOX, "sbx_bulk" + i), 60);
    }
    List<Resource> listed = provider.list();
    assertThat(listed).extracting(Resource::resourceId).contains(mine).doesNotHaveDuplicates();
    assertThat(listed).filteredOn(r -> r.sandboxId().startsWith("sbx_bulk")).hasSize(101);
    assertThat(listed).extracting(Resource::sandboxId).doesNotContain("sbx_x");
    assertThat(listed).allSatisfy(r -> {
      assertThat(r.status()).isEqualTo("running");
      assertThat(r.providerCostUsd()).isNull();
    });
    assertThat(sim.requests().stream().filter(r -> r.startsWith("GET /v2/sandboxes")).count()).isGreaterThanOrEqualTo(2);

    assertThat(provider.destroy(new DestroySandbox("sbx_bulk7", null)).alreadyGone()).isFalse();
    assertThat(provider.list()).extracting(Resource::sandboxId).doesNotContain("sbx_bulk7");
    assertThat(provider.destroy(new DestroySandbox("sbx_bulk7", null)).alreadyGone()).isTrue();
    for (Resource r : provider.list()) {
      if (r.sandboxId().startsWith("sbx_bulk")) {
        provider.destroy(new DestroySandbox(r.sandboxId(), r.resourceId()));
      }
    }
  }

  @Test
  void a_fresh_provider_works_from_the_resource_id_alone_and_set_timeout_moves_the_e2b_lifetime() {
    String id = create();
    BlockingE2b restarted = provider(sim.apiUrl(), E2bSimulator.API_KEY);
    try {
      assertThat(exec(restarted, exec(id, null, null, "echo again", null, 10, false)).stdout()).isEqualTo("again\n");
      java.time.Instant before = java.time.Instant.now();
      restarted.setTimeout(new SetTimeout("sbx", id, 1000));
      assertThat(sim.sandboxes().get(id).endAt()).as("the gateway's deadline plus the margin kept at create")
          .isBetween(before.plusSeconds(1000 + E2bProvider.DEADLINE_GRACE_SECS - 1),
              java.time.Instant.now().plusSeconds(1000 + E2bProvider.DEADLINE_GRACE_SECS + 1));
      // killed by another client: the sandbox proxy answers for it
      assertThat(provider.destroy(new DestroySandbox("sbx", id)).alreadyGone()).isFalse();
      assertThat(sim.sandboxes()).doesNotContainKey(id);
      ProviderError gone = error(() -> exec(restarted, exec(id, null, null, "true", null, 10, false)));
      assertThat(gone.code()).isEqualTo(ErrorCode.NOT_FOUND);
      assertThat(gone.context()).containsEntry("provider_status", 502L);
      assertThat(error(() -> restarted.setTimeout(new SetTimeout("sbx", id, 30))).code()).isEqualTo(ErrorCode.NOT_FOUND);
    } finally {
      restarted.close();
    }
  }

  // ---- metrics and adopt -------------------------------------------------------------------------------------

  static MetricsRequest metricsOf(String rid) {
    return new MetricsRequest("sbx", rid, 4096, 4096);
  }

  static JsonObject sample(long at, double cpuPct, long memUsed, long diskUsed) {
    return new JsonObject().put("timestamp", java.time.Instant.ofEpochSecond(at).toString()).put("timestampUnix", at)
        .put("cpuCount", 2).put("cpuUsedPct", cpuPct).put("memUsed", memUsed).put("memTotal", 512L << 20)
        .put("memCache", 0L).put("diskUsed", diskUsed).put("diskTotal", 10240L << 20);
  }

  @Test
  void metrics_are_the_newest_e2b_sample_with_cpu_as_percent_of_one_cpu() {
    sim.metricsIntervalMs(0);
    try {
      String rid = create();
      long now = java.time.Instant.now().getEpochSecond();
      var collected = sim.sandboxes().get(rid).metrics;
      collected.add(sample(now - 1, 75.0, 300L << 20, 2L << 30));
      collected.add(sample(now, 37.5, 100L << 20, 3L << 29));
      SandboxMetrics m = provider.metrics(metricsOf(rid));
      assertThat(m).as("E2B's percentage of two CPUs; bytes as MiB; the provider's limits over the config's")
          .isEqualTo(new SandboxMetrics(75.0, 100.0, 512.0, 1536.0, 10240.0, null));
      assertThat(sim.requests()).contains("GET /sandboxes/" + rid + "/metrics");
    } finally {
      sim.metricsIntervalMs(1_000);
    }
  }

  @Test
  void metrics_follow_the_sandboxs_real_processes_and_files() throws Exception {
    sim.metricsIntervalMs(200);
    String rid = create();
    ExecHandle busy = null;
    try {
      java.nio.file.Files.write(sim.sandboxes().get(rid).hostPath("data.bin"), new byte[3 << 20]);
      Recording sink = new Recording(null);
      busy = provider.start(exec(rid, null, null, "while :; do :; done", null, 25, false), sink);
      SandboxMetrics m = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (System.nanoTime() < deadline) {
        m = provider.metrics(metricsOf(rid));
        if (m.cpuPercent() != null && m.cpuPercent() >= 20) {
          break;
        }
        Thread.sleep(200);
      }
      assertThat(m.cpuPercent()).as("a busy loop keeps about one CPU busy").isBetween(20.0, 250.0);
      assertThat(m.memoryUsedMb()).isPositive();
      assertThat(m.diskUsedMb()).isGreaterThanOrEqualTo(3.0);
      assertThat(m.memoryLimitMb()).isEqualTo((double) E2bSimulator.MEMORY_MB);
      assertThat(m.diskLimitMb()).isEqualTo((double) E2bSimulator.DISK_SIZE_MB);
      assertThat(m.processes()).as("E2B does not count processes").isNull();
    } finally {
      if (busy != null) {
        busy.signal("KILL");
      }
      sim.metricsIntervalMs(1_000);
    }
  }

  @Test
  void a_sandbox_without_a_sample_yet_reports_its_limits_and_a_gone_one_is_not_found() {
    sim.metricsIntervalMs(0);
    try {
      String rid = create();
      assertThat(provider.metrics(metricsOf(rid))).isEqualTo(new SandboxMetrics(null, null,
          (double) E2bSimulator.MEMORY_MB, null, (double) E2bSimulator.DISK_SIZE_MB, null));
      provider.destroy(new DestroySandbox("sbx", rid));
      ProviderError gone = error(() -> provider.metrics(metricsOf(rid)));
      assertThat(gone.code()).isEqualTo(ErrorCode.NOT_FOUND);
      assertThat(gone.op()).isEqualTo("metrics");
      assertThat(gone.outcome()).isEqualTo(ProviderError.Outcome.FAILED);

      sim.faults().status(HttpMethod.GET, "/sandboxes/", 503, Map.of("Retry-After", "3"), null, 1);
      String other = create();
      ProviderError busy = error(() -> provider.metrics(metricsOf(other)));
      assertThat(busy.code()).isEqualTo(ErrorCode.COMMAND_FAILED);
      assertThat(busy.retryable()).isTrue();
      assertThat(busy.outcome()).as("reading metrics changes nothing").isEqualTo(ProviderError.Outcome.FAILED);
      assertThat(busy.context()).containsEntry("retry_after_secs", 3L);
    } finally {
      sim.metricsIntervalMs(1_000);
    }
  }

  @Test
  void the_simulator_refuses_a_metrics_query_e2b_would() throws Exception {
    String rid = create();
    java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
    for (String query : List.of("start=-1", "start=yesterday", "end=1.5")) {
      java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
              sim.apiUrl() + "/sandboxes/" + rid + "/metrics?" + query)).header("X-API-Key", E2bSimulator.API_KEY)
          .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(query).isEqualTo(400);
    }
    assertThat(sim.violations()).hasSize(3);
    sim.clearViolations();
  }

  @Test
  void adopt_checks_with_e2b_that_the_sandbox_is_this_ones() {
    CreateSandbox req = createRequest(config(Map.of(), 300));
    String rid = provider.create(req);
    BlockingE2b restarted = provider(sim.apiUrl(), E2bSimulator.API_KEY);
    try {
      assertThat(restarted.adopt(req, rid)).isEqualTo(rid);
      assertThat(exec(restarted, exec(rid, null, null, "echo adopted", null, 10, false)).stdout())
          .isEqualTo("adopted\n");
      assertThat(sim.connects()).as("a running sandbox is not connected again").isZero();

      // one E2B paused meanwhile is resumed by adopting it
      sim.pause(rid);
      BlockingE2b again = provider(sim.apiUrl(), E2bSimulator.API_KEY);
      try {
        assertThat(again.adopt(req, rid)).isEqualTo(rid);
        assertThat(sim.connects()).isEqualTo(1);
        assertThat(exec(again, exec(rid, null, null, "echo resumed", null, 10, false)).stdout()).isEqualTo("resumed\n");
      } finally {
        again.close();
      }

      CreateSandbox otherSandbox = new CreateSandbox("sbx_other", req.organizationId(), "e2b", "ctk_x", req.config());
      CreateSandbox otherOrg = new CreateSandbox(req.sandboxId(), "org_2", "e2b", "ctk_x", req.config());
      for (CreateSandbox wrong : List.of(otherSandbox, otherOrg)) {
        ProviderError refused = error(() -> restarted.adopt(wrong, rid));
        assertThat(refused.code()).isEqualTo(ErrorCode.NOT_FOUND);
        assertThat(refused.op()).isEqualTo("adopt");
      }
      String unmarked = sim.createBehindTheBack(Map.of(E2bProvider.META_SANDBOX, req.sandboxId()), 60).id;
      assertThat(error(() -> restarted.adopt(req, unmarked)).code()).as("no organization in its metadata")
          .isEqualTo(ErrorCode.NOT_FOUND);

      provider.destroy(new DestroySandbox(req.sandboxId(), rid));
      ProviderError missing = error(() -> restarted.adopt(req, rid));
      assertThat(missing.code()).isEqualTo(ErrorCode.NOT_FOUND);
      assertThat(missing.context()).containsEntry("provider_status", 404L);
    } finally {
      restarted.close();
    }
  }

  // ---- the error contract ------------------------------------------------------------------------------------

  @Test
  void provider_answers_map_onto_the_error_contract() {
    sim.faults().status(HttpMethod.POST, "/sandboxes", 401, Map.of(), null, 1);
    ProviderError auth = error(E2bProviderTest::create);
    assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(auth.retryable()).isFalse();
    assertThat(auth.outcome()).isEqualTo(ProviderError.Outcome.FAILED);

    int before = sim.requests().size();
    sim.faults().status(HttpMethod.POST, "/sandboxes", 429, Map.of("Retry-After", "7"), null, 1);
    ProviderError limited = error(E2bProviderTest::create);
    assertThat(limited.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L).containsEntry("provider_status", 429L);
    assertThat(sim.requests().subList(before, sim.requests().size())).as("a refused create needs no cleanup")
        .containsExactly("POST /sandboxes");

    sim.faults().status(HttpMethod.GET, "/v2/sandboxes", 500, Map.of(), null, 1);
    ProviderError broken = error(provider::list);
    assertThat(broken.code()).isEqualTo(ErrorCode.COMMAND_FAILED);
    assertThat(broken.retryable()).isTrue();
    assertThat(broken.outcome()).isEqualTo(ProviderError.Outcome.FAILED);

    sim.faults().delay(HttpMethod.GET, "/v2/sandboxes", 4_000, 1);
    ProviderError slow = error(provider::checkHealth);
    assertThat(slow.code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(slow.retryable()).isTrue();

    provider.checkHealth();

    BlockingE2b wrongKey = provider(sim.apiUrl(), "e2b_wrong");
    try {
      ProviderError denied = error(wrongKey::checkHealth);
      assertThat(denied.code()).isEqualTo(ErrorCode.AUTHENTICATION);
      assertThat(denied.context()).containsEntry("provider_status", 401L);
    } finally {
      wrongKey.close();
      assertThat(sim.violations()).singleElement().asString().contains("X-API-Key");
      sim.clearViolations();
    }
  }

  @Test
  void nothing_listening_is_a_connection_error_with_no_side_effect() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    BlockingE2b nowhere = provider("http://127.0.0.1:" + port, E2bSimulator.API_KEY);
    try {
      ProviderError e = error(nowhere::checkHealth);
      assertThat(e.code()).isEqualTo(ErrorCode.CONNECTION);
      assertThat(e.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
      assertThat(e.retryable()).isTrue();
    } finally {
      nowhere.close();
    }
  }

  @Test
  void a_create_whose_answer_is_lost_is_found_by_its_token_and_deleted() {
    CreateSandbox req = createRequest(config(Map.of(), 60));
    int kills = sim.kills();
    sim.faults().loseResponse(HttpMethod.POST, "/sandboxes", 1);
    ProviderError e = error(() -> provider.create(req));
    assertThat(e.op()).isEqualTo("create");
    assertThat(e.code()).isEqualTo(ErrorCode.CONNECTION);
    assertThat(e.context()).containsEntry("cleanup_status", "deleted");
    assertThat(e.outcome()).as("nothing is left behind").isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(sim.kills()).isEqualTo(kills + 1);
    assertThat(sim.sandboxes().values()).noneMatch(s -> req.createToken().equals(s.metadata.get(E2bProvider.META_TOKEN)));

    sim.faults().status(HttpMethod.POST, "/sandboxes", 503, Map.of(), null, 1);
    ProviderError unavailable = error(() -> provider.create(createRequest(config(Map.of(), 60))));
    assertThat(unavailable.context()).containsEntry("cleanup_status", "not_found").containsEntry("provider_status", 503L);
    assertThat(unavailable.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(unavailable.retryable()).isFalse();

    sim.faults().loseResponse(HttpMethod.POST, "/sandboxes", 1)
        .status(HttpMethod.GET, "/v2/sandboxes", 500, Map.of(), null, 1);
    CreateSandbox stuck = createRequest(config(Map.of(), 60));
    ProviderError unknown = error(() -> provider.create(stuck));
    assertThat(unknown.context()).containsEntry("cleanup_status", "unknown");
    assertThat(unknown.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(unknown.retryable()).isFalse();
    // the orphan is still there, carrying our marks: reconciliation will find it
    assertThat(provider.list()).extracting(Resource::sandboxId).contains(stuck.sandboxId());
  }

  @Test
  void a_stream_that_breaks_mid_run_ends_the_execution_and_stops_the_program() throws Exception {
    String id = create();
    sim.faults().dropStream("/process.Process/Start", 2, 1);
    Recording sink = new Recording(null);
    provider.start(exec(id, null, null, "echo first; sleep 0.3; echo second; exec sleep 30", null, 20, false), sink);
    sink.await();
    assertThat(sink.exitCode).isEqualTo(E2bExecution.LOST);
    assertThat(sink.timedOut).isFalse();
    assertThat(sink.out()).isEqualTo("first\n");
    assertThat(sink.durationMs).isLessThan(10_000);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!sim.sandboxes().get(id).pids().isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(sim.sandboxes().get(id).pids()).as("the orphaned program was killed").isEmpty();
  }

  @Test
  void a_program_envd_cannot_start_fails_the_start_and_a_refused_start_maps_its_status() {
    String id = create();
    ProviderError missing = error(() -> provider.start(exec(id, null, null, "no-such-program", List.of("x"), 10, false),
        new Recording(null)));
    assertThat(missing.code()).isEqualTo(ErrorCode.EXECUTION_FAILED);
    assertThat(missing.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(missing.context()).containsEntry("provider_code", "invalid_argument");

    sim.faults().status(HttpMethod.POST, "/process.Process/Start", 429, Map.of("Retry-After", "3"),
        new JsonObject().put("code", "resource_exhausted").put("message", "slow down"), 1);
    ProviderError limited = error(() -> provider.start(exec(id, null, null, "true", null, 10, false),
        new Recording(null)));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.context()).containsEntry("provider_code", "resource_exhausted")
        .containsEntry("retry_after_secs", 3L);
  }

  @Test
  void settings_come_from_the_providers_variables_and_never_print_the_key() {
    var none = ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(Map.of("E2B_DOMAIN", "example.test"));
    assertThat(E2bSettings.from(none)).isEmpty();
    E2bSettings s = E2bSettings.from(ai.bespokelabs.sandbox.core.config.ProviderSettings.withDefaults(
        Map.of("E2B_API_KEY", "e2b_secret_value", "E2B_DOMAIN", "example.test"))).orElseThrow();
    assertThat(s.apiUrl()).isEqualTo("https://api.example.test");
    assertThat(s.sandboxUrl()).isNull();
    assertThat(s.template()).isEqualTo("base");
    assertThat(s.scope()).isEqualTo("default");
    assertThat(s.toString()).doesNotContain("e2b_secret_value");
    assertThat(E2bProvider.metadataQuery(Map.of("b", "x y", "a", "1&2"))).isEqualTo("a=1%262&b=x+y");
  }
}
