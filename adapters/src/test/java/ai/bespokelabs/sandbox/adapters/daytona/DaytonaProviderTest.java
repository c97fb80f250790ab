package ai.bespokelabs.sandbox.adapters.daytona;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend.Capture;
import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend.Download;
import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend.Handle;
import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend.Upload;
import ai.bespokelabs.sandbox.core.model.FileEntry;
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
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Daytona adapter against the simulator, which refuses anything Daytona's published API would. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DaytonaProviderTest {
  static final String KEY = "dtn_test_key_0123456789";
  static DaytonaSimulator sim;
  static Vertx vertx;
  static BlockingDaytona provider;
  static String sandbox;
  static final PricingCatalog PRICING = new PricingCatalog("test", Map.of("daytona",
      new PricingCatalog.Rates(new BigDecimal("0.036"), new BigDecimal("0.018"))));

  @BeforeAll
  static void start() {
    sim = DaytonaSimulator.start(KEY).startDelayMs(100);
    vertx = Vertx.vertx();
    provider = provider(KEY, sim.url(), Duration.ofSeconds(10));
    sandbox = provider.create(create("sbx_main", config(null, null)));
  }

  @AfterAll
  static void stop() throws Exception {
    provider.close();
    vertx.close().await(10, TimeUnit.SECONDS);
    sim.close();
  }

  @AfterEach
  void everyRequestConformed() {
    assertThat(sim.violations()).isEmpty();
  }

  /** A Daytona backend started on a context of its own, as an adapter starts it. */
  static BlockingDaytona provider(String key, String url, Duration requestTimeout) {
    return new BlockingDaytona(new DaytonaProvider(vertx, new DaytonaSettings(url, new Secret(key), "eu", null,
        Duration.ofSeconds(10), requestTimeout, 32), PRICING, Clock.systemUTC()), vertx.getOrCreateContext());
  }

  static SandboxConfig config(String image, Integer timeoutSecs) {
    return new SandboxConfig(null, 1.5, 1536, 2048, null, timeoutSecs, image, Map.of("GREETING", "hi there"), null,
        null, null, null, null, null, null);
  }

  static CreateSandbox create(String sandboxId, SandboxConfig config) {
    return new CreateSandbox(sandboxId, "org_test", "daytona", "tok-" + UUID.randomUUID(), config);
  }

  static ExecSandbox command(String command, List<String> args, int timeoutSecs, boolean keepStdin) {
    return new ExecSandbox("sbx_main", "exe_" + UUID.randomUUID().toString().replace("-", ""), sandbox, null, null,
        command, args, Map.of(), null, timeoutSecs, 1 << 20, keepStdin, null, null);
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
  void create_sends_image_resources_labels_and_ttl_only_when_a_timeout_is_given() {
    CreateSandbox req = create("sbx_image", config("python:3.12-slim", 90));
    String id = provider.create(req);
    JsonObject body = sim.createRequest(id);
    assertThat(sim.sandbox(id).getString("state")).isEqualTo("started");
    assertThat(body.getJsonObject("buildInfo").getString("dockerfileContent")).isEqualTo("FROM python:3.12-slim\n");
    assertThat(body.getInteger("cpu")).isEqualTo(2);
    assertThat(body.getInteger("memory")).isEqualTo(2);
    assertThat(body.getInteger("disk")).isEqualTo(2);
    assertThat(body.getString("target")).isEqualTo("eu");
    assertThat(body.getJsonObject("env").getString("GREETING")).isEqualTo("hi there");
    assertThat(body.getJsonObject("labels").getMap()).containsEntry(DaytonaProvider.LABEL_SANDBOX, "sbx_image")
        .containsEntry(DaytonaProvider.LABEL_ORGANIZATION, "org_test")
        .containsEntry(DaytonaProvider.LABEL_CREATE_TOKEN, req.createToken())
        .containsEntry(DaytonaProvider.LABEL_MANAGED, "true");
    assertThat(body.getInteger("autoStopInterval")).isEqualTo(2);
    assertThat(body.getInteger("autoDeleteInterval")).isZero();
    JsonObject plain = sim.createRequest(sandbox);
    assertThat(plain.containsKey("autoStopInterval")).isFalse();
    assertThat(plain.containsKey("autoDeleteInterval")).isFalse();
    assertThat(plain.containsKey("buildInfo")).isFalse();
    assertThat(provider.destroy(new DestroySandbox("sbx_image", id)).alreadyGone()).isFalse();
    assertThat(sim.sandbox(id)).isNull();
    assertThat(provider.destroy(new DestroySandbox("sbx_image", id)).alreadyGone()).isTrue();
  }

  @Test
  void commands_code_cwd_and_env_run_like_on_the_local_backend() throws Exception {
    ExecResult r = provider.exec(command("echo out; echo err >&2; exit 3", null, 10, false));
    assertThat(r.stdout()).isEqualTo("out\n");
    assertThat(r.stderr()).isEqualTo("err\n");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.timedOut()).isFalse();

    ExecResult args = provider.exec(command("printf", List.of("%s|", "a b", "it's", "$HOME"), 10, false));
    assertThat(args.stdout()).isEqualTo("a b|it's|$HOME|");

    java.nio.file.Files.createDirectories(sim.dir(sandbox).resolve("work"));
    ExecSandbox inDir = new ExecSandbox("sbx_main", "exe_cwd", sandbox, null, null, "pwd; echo $GREETING $EXTRA",
        null, Map.of("EXTRA", "x'y"), "work", 10, 1 << 20);
    ExecResult cwd = provider.exec(inDir);
    assertThat(cwd.stdout()).isEqualTo(sim.dir(sandbox).resolve("work") + "\nhi there x'y\n");

    ExecSandbox code = new ExecSandbox("sbx_main", "exe_code", sandbox, "import sys\nprint(1 + 1)\nsys.exit(4)",
        "python", null, null, Map.of(), null, 10, 1 << 20);
    ExecResult py = provider.exec(code);
    assertThat(py.stdout()).isEqualTo("2\n");
    assertThat(py.exitCode()).isEqualTo(4);

    ExecResult reads = provider.exec(command("cat; echo done", null, 10, false));
    assertThat(reads.stdout()).as("without kept stdin a program reads end-of-file").isEqualTo("done\n");
  }

  @Test
  void stdin_streams_in_and_closing_it_ends_the_program() throws Exception {
    Collecting sink = new Collecting();
    Handle h = provider.start(command("cat; echo end >&2", null, 20, true), sink);
    h.writeStdin("héllo\n".getBytes(StandardCharsets.UTF_8));
    h.writeStdin(new byte[] {0, 1, 2, (byte) 0xff, '\n'});
    h.closeStdin();
    ExecResult r = sink.await();
    assertThat(r.exitCode()).isZero();
    assertThat(sink.stdout()).isEqualTo(concat("héllo\n".getBytes(StandardCharsets.UTF_8),
        new byte[] {0, 1, 2, (byte) 0xff, '\n'}));
    assertThat(r.stderr()).isEqualTo("end\n");
    assertThatThrownBy(() -> h.writeStdin(new byte[] {1})).hasMessageContaining("stdin is closed");
  }

  @Test
  void a_timeout_kills_the_program_and_reports_124() {
    long t0 = System.nanoTime();
    // 3 s: starting a session command takes a while on a loaded machine, and "started" must come out first
    ExecResult r = provider.exec(command("echo started; sleep 30; echo never", null, 3, false));
    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.timedOut()).isTrue();
    assertThat(r.stdout()).isEqualTo("started\n");
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void a_signal_reaches_the_whole_process_group() throws Exception {
    Collecting sink = new Collecting();
    Handle h = provider.start(command("sleep 31 & wait; echo not-reached", null, 20, false), sink);
    Thread.sleep(300);
    h.signal("TERM");
    ExecResult r = sink.await();
    assertThat(r.cancelled()).isTrue();
    assertThat(r.exitCode()).isEqualTo(143);
    assertThat(r.stdout()).doesNotContain("not-reached");
    // a sleep of its own length, so no other test's process is counted; dying takes a moment
    String left = "";
    for (int i = 0; i < 20 && !left.equals("0"); i++) {
      left = provider.exec(command("ps -eo args | grep -c '^sleep 31$' || true", null, 10, false)).stdout().trim();
      Thread.sleep(left.equals("0") ? 0 : 100);
    }
    assertThat(left).as("no sleep of the group survives").isEqualTo("0");
  }

  @Test
  void a_blocked_sink_stops_the_log_stream_and_nothing_is_lost() throws Exception {
    long total = 48L << 20;
    Promise<Void> release = Promise.promise();
    AtomicLong received = new AtomicLong();
    Capture done = new Capture(16);
    long before = sim.streamedBytes();
    OutputSink blocking = new OutputSink() {
      @Override
      public Future<Void> output(Stream stream, byte[] data) {
        // taken only once released
        return release.future().andThen(v -> received.addAndGet(data.length));
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        done.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    provider.start(command("head -c " + total + " /dev/zero", null, 30, false), blocking);
    try {
      // the stream fills what the buffers hold, then stops: wait until it has (slower on a loaded machine)
      long streamedWhileBlocked = -1;
      for (long end = System.nanoTime() + 15_000_000_000L; System.nanoTime() < end; ) {
        Thread.sleep(300);
        long now = sim.streamedBytes() - before;
        if (now > 0 && now == streamedWhileBlocked) {
          break;
        }
        streamedWhileBlocked = now;
      }
      Thread.sleep(300);
      assertThat(sim.streamedBytes() - before).as("the daemon waits for the blocked reader")
          .isEqualTo(streamedWhileBlocked).isLessThan(total / 2);
      assertThat(sim.drainWaits()).isPositive();
    } finally {
      release.complete();
    }
    ExecResult r = done.await();
    assertThat(r.exitCode()).isZero();
    assertThat(received.get()).isEqualTo(total);
  }

  @Test
  void a_log_stream_cut_mid_way_is_resumed_without_loss_or_repeats() {
    sim.inject(HttpMethod.GET, ".*/logs", DaytonaSimulator.Fault.cutStreamAfter(5_000));
    ExecResult r = provider.exec(command("seq 1 20000", null, 20, false));
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 20000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(r.stdout()).isEqualTo(expected.toString());
    assertThat(r.exitCode()).isZero();
    assertThat(sim.count(HttpMethod.GET, ".*/logs")).isGreaterThanOrEqualTo(2);
  }

  static FileOp fileOp(String path, boolean executable, boolean recursive) {
    return new FileOp("files", "sbx_main", sandbox, path, null, null, executable, recursive);
  }

  static int apiStatus(Runnable r) {
    try {
      r.run();
    } catch (ApiException e) {
      return e.status();
    }
    throw new AssertionError("no files API answer");
  }

  static byte[] readAll(Download f) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[70_000];
    int n;
    while ((n = f.read(buf)) > 0) {
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }

  static long spools() throws IOException {
    try (var files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return files.filter(p -> p.getFileName().toString().startsWith("daytona-upload-")).count();
    }
  }

  @Test
  void upload_is_sent_whole_at_commit_with_its_mode_then_read_listed_and_run() throws Exception {
    byte[] script = "#!/bin/sh\necho ran \"$1\"\n".getBytes(StandardCharsets.UTF_8);
    byte[] blob = new byte[300_000];
    new java.util.Random(7).nextBytes(blob);
    long uploadsBefore = sim.count(HttpMethod.POST, ".*/files/upload");
    Upload w = provider.openWrite(fileOp("data/bin/run.sh", true, false));
    w.write(Arrays.copyOf(script, 10));
    w.write(Arrays.copyOfRange(script, 10, script.length));
    Path onDisk = sim.dir(sandbox).resolve("data/bin/run.sh");
    assertThat(onDisk).doesNotExist();
    assertThat(sim.count(HttpMethod.POST, ".*/files/upload")).isEqualTo(uploadsBefore);
    FileEntry entry = w.commit();
    assertThat(entry.name()).isEqualTo("run.sh");
    assertThat(entry.size()).isEqualTo(script.length);
    assertThat(entry.mode()).isEqualTo(0755);
    assertThat(Files.readAllBytes(onDisk)).isEqualTo(script);
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(onDisk))).isEqualTo("rwxr-xr-x");
    // the multipart body was sent with its exact length: preamble + file + epilogue
    assertThat(sim.uploadLengths().getLast()).isGreaterThan(script.length).isLessThan(script.length + 400L);
    ExecResult ran = provider.exec(command("data/bin/run.sh", List.of("ok"), 20, false));
    assertThat(ran.stdout()).isEqualTo("ran ok\n");

    Upload b = provider.openWrite(fileOp("data/blob.bin", false, false));
    b.write(blob);
    assertThat(b.commit().mode()).isEqualTo(0644);
    try (Download r = provider.openRead(fileOp("data/blob.bin", false, false))) {
      assertThat(r.size()).isEqualTo(blob.length);
      assertThat(readAll(r)).isEqualTo(blob);
    }
    List<FileEntry> entries = provider.listFiles(fileOp("data", false, false));
    assertThat(entries).extracting(FileEntry::name).containsExactly("bin", "blob.bin");
    assertThat(entries).extracting(FileEntry::path).containsExactly("data/bin", "data/blob.bin");
    assertThat(entries.get(0).isDir()).isTrue();
    assertThat(entries.get(1).size()).isEqualTo(blob.length);
    assertThat(entries.get(1).mode()).isEqualTo(0644);
    assertThat(entries.get(1).modified()).isNotNull();
    // a file lists as itself
    assertThat(provider.listFiles(fileOp("./data/bin/../bin/run.sh", false, false))).singleElement()
        .satisfies(e -> {
          assertThat(e.path()).isEqualTo("data/bin/run.sh");
          assertThat(e.mode()).isEqualTo(0755);
        });
    assertThat(apiStatus(() -> provider.listFiles(fileOp("nowhere", false, false)))).isEqualTo(404);
    assertThat(apiStatus(() -> provider.openRead(fileOp("data/missing", false, false)))).isEqualTo(404);
    assertThat(apiStatus(() -> provider.openRead(fileOp("data/bin", false, false)))).isEqualTo(422);
    assertThat(apiStatus(() -> provider.openRead(fileOp(" ", false, false)))).isEqualTo(422);
    Upload onDir = provider.openWrite(fileOp("data/bin", false, false));
    onDir.write(script);
    assertThat(apiStatus(onDir::commit)).isEqualTo(422);
    assertThat(sim.dir(sandbox).resolve("data/bin")).isDirectory();
  }

  @Test
  void an_aborted_upload_sends_nothing_and_leaves_no_spool() throws Exception {
    long spoolsBefore = spools();
    long uploadsBefore = sim.count(HttpMethod.POST, ".*/files/upload");
    Upload w = provider.openWrite(fileOp("aborted.txt", false, false));
    w.write(new byte[100_000]);
    assertThat(spools()).isEqualTo(spoolsBefore + 1);
    w.abort();
    w.abort();
    assertThat(spools()).isEqualTo(spoolsBefore);
    assertThat(sim.dir(sandbox).resolve("aborted.txt")).doesNotExist();
    assertThat(sim.count(HttpMethod.POST, ".*/files/upload")).isEqualTo(uploadsBefore);
  }

  @Test
  void a_failed_upload_reports_and_cleans_up() throws Exception {
    long spoolsBefore = spools();
    sim.inject(HttpMethod.POST, ".*/files/upload", DaytonaSimulator.Fault.status(500));
    Upload w = provider.openWrite(fileOp("failed.txt", false, false));
    w.write(new byte[10]);
    ProviderError e = error(w::commit);
    assertThat(e.retryable()).isTrue();
    assertThat(e.toString()).doesNotContain(KEY);
    assertThat(spools()).isEqualTo(spoolsBefore);
    assertThat(sim.dir(sandbox).resolve("failed.txt")).doesNotExist();
  }

  @Test
  void downloads_stream_with_backpressure() throws Exception {
    byte[] big = new byte[32 << 20];
    new java.util.Random(11).nextBytes(big);
    Files.write(sim.dir(sandbox).resolve("big.bin"), big);
    long streamedBefore = sim.streamedBytes();
    long waitsBefore = sim.drainWaits();
    try (Download r = provider.openRead(fileOp("big.bin", false, false))) {
      byte[] first = new byte[64 * 1024];
      assertThat(r.read(first)).isEqualTo(first.length);
      Thread.sleep(500);
      // the simulator is held back by the reader: far less than the file left it, and it waited for room
      assertThat(sim.streamedBytes() - streamedBefore).isLessThan(big.length / 2);
      assertThat(sim.drainWaits()).isGreaterThan(waitsBefore);
      byte[] rest = readAll(r);
      assertThat(first.length + rest.length).isEqualTo(big.length);
      assertThat(Arrays.equals(first, 0, first.length, big, 0, first.length)).isTrue();
      assertThat(Arrays.equals(rest, 0, rest.length, big, first.length, big.length)).isTrue();
    }
    // closing early stops the transfer
    Download early = provider.openRead(fileOp("big.bin", false, false));
    assertThat(early.read(new byte[1024])).isEqualTo(1024);
    early.close();
    Files.delete(sim.dir(sandbox).resolve("big.bin"));
  }

  @Test
  void directory_archives_are_built_on_the_single_file_operations() throws Exception {
    Path dir = sim.dir(sandbox);
    Files.createDirectories(dir.resolve("tree/sub"));
    Files.writeString(dir.resolve("tree/a.txt"), "alpha");
    Files.writeString(dir.resolve("tree/sub/b.txt"), "beta");
    byte[] tgz;
    try (Download r = provider.openArchiveRead(fileOp("tree", false, false))) {
      assertThat(r.size()).isEqualTo(-1);
      tgz = readAll(r);
    }
    Map<String, String> files = new java.util.TreeMap<>();
    try (var tar = new org.apache.commons.compress.archivers.tar.TarArchiveInputStream(
        new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(tgz)))) {
      for (var e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        if (e.isFile()) {
          files.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
        }
      }
    }
    assertThat(files).containsExactly(Map.entry("a.txt", "alpha"), Map.entry("sub/b.txt", "beta"));
    assertThat(apiStatus(() -> provider.openArchiveRead(fileOp("tree/a.txt", false, false)))).isEqualTo(422);

    Upload w = provider.openArchiveWrite(fileOp("copy", false, false));
    w.write(Arrays.copyOf(tgz, 10));
    w.write(Arrays.copyOfRange(tgz, 10, tgz.length));
    assertThat(dir.resolve("copy")).doesNotExist();
    w.commit();
    assertThat(Files.readString(dir.resolve("copy/a.txt"))).isEqualTo("alpha");
    assertThat(Files.readString(dir.resolve("copy/sub/b.txt"))).isEqualTo("beta");
    Upload broken = provider.openArchiveWrite(fileOp("broken", false, false));
    broken.write(Arrays.copyOf(tgz, tgz.length / 2));
    assertThat(apiStatus(broken::commit)).isEqualTo(422);
    assertThat(dir.resolve("broken")).doesNotExist();
  }

  @Test
  void delete_files_and_directories() throws Exception {
    Path dir = sim.dir(sandbox);
    Files.createDirectories(dir.resolve("del/full/sub"));
    Files.createDirectories(dir.resolve("del/empty"));
    Files.writeString(dir.resolve("del/full/sub/f.txt"), "x");
    Files.writeString(dir.resolve("del/file.txt"), "x");
    provider.deleteFile(fileOp("del/file.txt", false, false));
    assertThat(dir.resolve("del/file.txt")).doesNotExist();
    provider.deleteFile(fileOp("del/empty", false, false));
    assertThat(dir.resolve("del/empty")).doesNotExist();
    assertThat(apiStatus(() -> provider.deleteFile(fileOp("del/full", false, false)))).isEqualTo(409);
    assertThat(dir.resolve("del/full/sub/f.txt")).exists();
    provider.deleteFile(fileOp("del/full", false, true));
    assertThat(dir.resolve("del/full")).doesNotExist();
    assertThat(apiStatus(() -> provider.deleteFile(fileOp("del/full", false, false)))).isEqualTo(404);
    assertThat(apiStatus(() -> provider.deleteFile(fileOp("del/..", false, true)))).isEqualTo(422);
    assertThat(dir).isDirectory();
  }

  @Test
  void file_modes_parse_from_either_field() {
    assertThat(DaytonaFiles.mode(new JsonObject().put("permissions", "0750"))).isEqualTo(0750);
    assertThat(DaytonaFiles.mode(new JsonObject().put("permissions", "rwxr-x---").put("mode", "-rwxr-x---")))
        .isEqualTo(0750);
    assertThat(DaytonaFiles.mode(new JsonObject().put("mode", "drwxr-xr-x"))).isEqualTo(0755);
  }

  @Test
  void list_finds_our_sandboxes_across_pages_with_status_and_cost() {
    String foreign = sim.createDirectly(new JsonObject().put("team", "other"));
    String orphan = sim.createDirectly(new JsonObject().put(DaytonaProvider.LABEL_MANAGED, "true")
        .put(DaytonaProvider.LABEL_SANDBOX, "sbx_orphan"));
    long pagesBefore = sim.count(HttpMethod.GET, "/api/sandbox");
    List<Resource> all;
    try {
      all = provider.pageSize(1).list();
    } finally {
      provider.pageSize(200);
    }
    assertThat(sim.count(HttpMethod.GET, "/api/sandbox") - pagesBefore).as("one request per page").isGreaterThanOrEqualTo(2);
    assertThat(all).extracting(Resource::resourceId).contains(sandbox, orphan).doesNotContain(foreign);
    Resource main = all.stream().filter(r -> r.resourceId().equals(sandbox)).findFirst().orElseThrow();
    assertThat(main.sandboxId()).isEqualTo("sbx_main");
    assertThat(main.status()).isEqualTo("running");
    assertThat(main.providerCostUsd()).isNotNull();
    assertThat(DaytonaInventory.status("build_failed")).isEqualTo("failed");
    assertThat(DaytonaInventory.status("pending_build")).isEqualTo("provisioning");
    assertThat(DaytonaInventory.status("stopped")).isEqualTo("stopping");
    provider.destroy(new DestroySandbox("sbx_orphan", orphan));
    sim.vanish(foreign);
  }

  // ------------------------------------------------------------------------------------ metrics and adopt

  static MetricsRequest metricsOf(String rid) {
    return new MetricsRequest("sbx", rid, 4096, 8192);
  }

  static Map<String, Double> point(double cpuPct, double memUsed, double diskUsed) {
    return Map.of(DaytonaMetrics.CPU_UTILIZATION, cpuPct, DaytonaMetrics.CPU_LIMIT, 2.0,
        DaytonaMetrics.MEMORY_USAGE, memUsed, DaytonaMetrics.MEMORY_LIMIT, (double) (2L << 30),
        DaytonaMetrics.DISK_USAGE, diskUsed, DaytonaMetrics.DISK_TOTAL, (double) (2L << 30),
        "daytona.sandbox.memory.utilization", 50.0);
  }

  @Test
  void metrics_are_the_newest_telemetry_points_with_cpu_as_percent_of_one_cpu() {
    sim.telemetryIntervalMs(0);
    try {
      String id = provider.create(create("sbx_metrics", config(null, null)));
      java.time.Instant now = java.time.Instant.now();
      sim.addTelemetry(id, now.minusSeconds(900), point(99.0, 1L << 30, 1L << 30));
      sim.addTelemetry(id, now.minusSeconds(30), point(10.0, 100L << 20, 1L << 30));
      sim.addTelemetry(id, now.minusSeconds(5), point(25.0, 200L << 20, 3L << 29));
      assertThat(provider.metrics(metricsOf(id))).as("25 % of two CPUs; bytes as MiB; Daytona's limits")
          .isEqualTo(new SandboxMetrics(50.0, 200.0, 2048.0, 1536.0, 2048.0, null));
      assertThat(sim.count(HttpMethod.GET, "/api/sandbox/" + id + "/telemetry/metrics")).isOne();
    } finally {
      sim.telemetryIntervalMs(1_000);
    }
  }

  @Test
  void metrics_follow_the_sandboxs_real_processes_and_files() throws Exception {
    sim.telemetryIntervalMs(200);
    Handle busy = null;
    try {
      Files.write(sim.dir(sandbox).resolve("metrics.bin"), new byte[3 << 20]);
      busy = provider.start(command("while :; do :; done", null, 30, false), new Capture(1024));
      SandboxMetrics m = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (System.nanoTime() < deadline) {
        m = provider.metrics(metricsOf(sandbox));
        if (m.cpuPercent() != null && m.cpuPercent() >= 20) {
          break;
        }
        Thread.sleep(200);
      }
      assertThat(m.cpuPercent()).as("a busy loop keeps about one CPU busy").isBetween(20.0, 250.0);
      assertThat(m.memoryUsedMb()).isPositive();
      assertThat(m.diskUsedMb()).isGreaterThanOrEqualTo(3.0);
      assertThat(m.memoryLimitMb()).as("1536 MB rounded up to 2 GB at create").isEqualTo(2048.0);
      assertThat(m.diskLimitMb()).isEqualTo(2048.0);
      assertThat(m.processes()).isNull();
    } finally {
      if (busy != null) {
        busy.signal("KILL");
      }
      Files.deleteIfExists(sim.dir(sandbox).resolve("metrics.bin"));
      sim.telemetryIntervalMs(1_000);
    }
  }

  @Test
  void without_telemetry_metrics_are_the_sandboxs_limits_and_a_stopped_or_gone_sandbox_has_none() {
    sim.telemetryIntervalMs(0);
    try {
      String id = provider.create(create("sbx_limits", config(null, null)));
      SandboxMetrics limitsOnly = new SandboxMetrics(null, null, 2048.0, null, 2048.0, null);
      assertThat(provider.metrics(metricsOf(id))).as("no data points yet").isEqualTo(limitsOnly);
      sim.telemetryEnabled(false);
      sim.addTelemetry(id, java.time.Instant.now(), point(25.0, 1L << 20, 1L << 20));
      assertThat(provider.metrics(metricsOf(id))).as("telemetry not enabled for the organization (403)")
          .isEqualTo(limitsOnly);
      sim.telemetryEnabled(true);

      sim.inject(HttpMethod.GET, "/api/sandbox/" + id + "/telemetry/metrics", DaytonaSimulator.Fault.status(503));
      ProviderError failing = error(() -> provider.metrics(metricsOf(id)));
      assertThat(failing.code()).isEqualTo(ErrorCode.COMMAND_FAILED);
      assertThat(failing.op()).isEqualTo("metrics");
      assertThat(failing.retryable()).isTrue();

      sim.stopDirectly(id);
      assertThatThrownBy(() -> provider.metrics(metricsOf(id))).isInstanceOf(ApiException.class)
          .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(409));
      assertThat(sim.sandbox(id).getString("state")).as("not started just to be measured").isEqualTo("stopped");
      sim.vanish(id);
      assertThat(error(() -> provider.metrics(metricsOf(id))).code()).isEqualTo(ErrorCode.NOT_FOUND);
    } finally {
      sim.telemetryEnabled(true);
      sim.telemetryIntervalMs(1_000);
    }
  }

  @Test
  void the_simulator_refuses_a_telemetry_query_daytona_would() throws Exception {
    java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
    String base = sim.url() + "/sandbox/" + sandbox + "/telemetry/metrics";
    String now = java.time.Instant.now().toString();
    for (String query : List.of("to=" + now, "from=yesterday&to=" + now, "from=" + now)) {
      java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
          base + "?" + query)).header("Authorization", "Bearer " + KEY).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(query).isEqualTo(400);
    }
    assertThat(sim.violations()).hasSize(3);
    sim.clearViolations();
  }

  @Test
  void adopt_checks_the_labels_and_starts_a_stopped_sandbox_of_ours_again() {
    CreateSandbox req = create("sbx_adopt", config(null, null));
    String id = provider.create(req);
    try (BlockingDaytona restarted = provider(KEY, sim.url(), Duration.ofSeconds(10))) {
      assertThat(restarted.adopt(req, id)).isEqualTo(id);
      assertThat(sim.count(HttpMethod.POST, "/api/sandbox/" + id + "/start")).isZero();

      sim.stopDirectly(id);
      assertThat(restarted.adopt(req, id)).isEqualTo(id);
      assertThat(sim.sandbox(id).getString("state")).isEqualTo("started");
      assertThat(sim.count(HttpMethod.POST, "/api/sandbox/" + id + "/start")).isOne();
      assertThat(restarted.exec(new ExecSandbox("sbx_adopt", "exe_adopt", id, null, null, "echo adopted", null,
          Map.of(), null, 10, 1024)).stdout()).isEqualTo("adopted\n");

      sim.stopDirectly(id);
      for (CreateSandbox wrong : List.of(create("sbx_other", config(null, null)),
          new CreateSandbox("sbx_adopt", "org_other", "daytona", "tok", config(null, null)))) {
        ProviderError refused = error(() -> restarted.adopt(wrong, id));
        assertThat(refused.code()).isEqualTo(ErrorCode.NOT_FOUND);
        assertThat(refused.op()).isEqualTo("adopt");
      }
      assertThat(sim.sandbox(id).getString("state")).as("nothing is started for a sandbox that is not ours")
          .isEqualTo("stopped");
      String unlabelled = sim.createDirectly(new JsonObject().put(DaytonaProvider.LABEL_SANDBOX, "sbx_adopt"));
      assertThat(error(() -> restarted.adopt(req, unlabelled)).code()).isEqualTo(ErrorCode.NOT_FOUND);

      sim.vanish(id);
      ProviderError missing = error(() -> restarted.adopt(req, id));
      assertThat(missing.code()).isEqualTo(ErrorCode.NOT_FOUND);
      assertThat(missing.context()).containsEntry("provider_status", 404L);
      sim.vanish(unlabelled);
    }
  }

  @Test
  void provider_failures_map_onto_the_error_contract() {
    try (BlockingDaytona wrongKey = provider("not-the-key", sim.url(), Duration.ofSeconds(5))) {
      ProviderError auth = error(() -> wrongKey.create(create("sbx_auth", config(null, null))));
      assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
      assertThat(auth.retryable()).isFalse();
      assertThatThrownBy(wrongKey::checkHealth).isInstanceOf(ProviderException.class)
          .hasMessageNotContaining("not-the-key");
    }
    provider.checkHealth();

    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.rateLimited(7));
    ProviderError limited = error(() -> provider.create(create("sbx_429", config(null, null))));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L).containsEntry("provider_status", 429L);

    sim.inject(HttpMethod.GET, "/api/sandbox", DaytonaSimulator.Fault.status(503));
    ProviderError unavailable = error(provider::list);
    assertThat(unavailable.retryable()).isTrue();
    assertThat(unavailable.context()).containsEntry("provider_status", 503L);

    try (BlockingDaytona impatient = provider(KEY, sim.url(), Duration.ofMillis(300))) {
      sim.inject(HttpMethod.GET, "/api/sandbox", DaytonaSimulator.Fault.delay(1_500));
      ProviderError slow = error(impatient::list);
      assertThat(slow.code()).isEqualTo(ErrorCode.TIMEOUT);
    }

    try (BlockingDaytona nowhere = provider(KEY, "http://127.0.0.1:1/api", Duration.ofSeconds(2))) {
      ProviderError refused = error(() -> nowhere.create(create("sbx_refused", config(null, null))));
      assertThat(refused.code()).isEqualTo(ErrorCode.CONNECTION);
      assertThat(refused.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    }

    String gone = provider.create(create("sbx_gone", config(null, null)));
    sim.vanish(gone);
    ProviderError missing = error(() -> provider.exec(new ExecSandbox("sbx_gone", "exe_gone", gone, null, null,
        "true", null, Map.of(), null, 5, 1024)));
    assertThat(missing.code()).isEqualTo(ErrorCode.NOT_FOUND);
    assertThat(provider.destroy(new DestroySandbox("sbx_gone", gone)).alreadyGone()).isTrue();
  }

  @Test
  void a_create_whose_answer_is_lost_is_found_by_its_token_and_deleted_once() {
    CreateSandbox req = create("sbx_lost", config(null, null));
    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.loseResponse());
    long deletesBefore = sim.count(HttpMethod.DELETE, "/api/sandbox/.*");
    ProviderError lost = error(() -> provider.create(req));
    assertThat(lost.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(lost.retryable()).isFalse();
    assertThat(lost.context()).containsEntry("cleanup_status", "deleted");
    assertThat(sim.count(HttpMethod.DELETE, "/api/sandbox/.*") - deletesBefore).isEqualTo(1);
    assertThat(sim.sandboxes()).noneMatch(s -> req.createToken().equals(
        s.getJsonObject("labels").getString(DaytonaProvider.LABEL_CREATE_TOKEN)));

    sim.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.drop());
    ProviderError dropped = error(() -> provider.create(create("sbx_dropped", config(null, null))));
    assertThat(dropped.outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    assertThat(dropped.context()).containsEntry("cleanup_status", "not_found");
  }

  @Test
  void a_failed_build_is_deleted_and_reported_as_creation_failed() {
    sim.failNextBuild();
    ProviderError failed = error(() -> provider.create(create("sbx_broken", config("broken:latest", null))));
    assertThat(failed.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(failed.outcome()).isEqualTo(ProviderError.Outcome.FAILED);
    assertThat(failed.context()).containsEntry("cleanup_status", "deleted");
    assertThat(sim.sandbox((String) failed.context().get("provider_resource_id"))).isNull();
  }

  @Test
  void an_idle_stopped_sandbox_is_started_again_for_an_exec_and_one_with_a_ttl_vanishes() throws Exception {
    String idle = provider.create(create("sbx_idle", config(null, null)));
    String ttl = provider.create(create("sbx_ttl", config(null, 30)));
    sim.minuteMs(20);
    try {
      for (int i = 0; i < 100 && !"stopped".equals(sim.sandbox(idle).getString("state")); i++) {
        Thread.sleep(20);
      }
      assertThat(sim.sandbox(idle).getString("state")).isEqualTo("stopped");
      assertThat(sim.sandbox(ttl)).as("stopped, then deleted at once").isNull();
      sim.minuteMs(60_000);
      ExecResult r = provider.exec(new ExecSandbox("sbx_idle", "exe_idle", idle, null, null, "echo back", null,
          Map.of(), null, 10, 1024));
      assertThat(r.stdout()).isEqualTo("back\n");
      provider.destroy(new DestroySandbox("sbx_idle", idle));
    } finally {
      sim.minuteMs(60_000);
    }
  }

  /** Collects raw stdout and the result. */
  static final class Collecting implements OutputSink {
    private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    private final Capture capture = new Capture(1 << 20);

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      if (stream == Stream.STDOUT) {
        out.writeBytes(data);
      }
      return capture.output(stream, data);
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      capture.exited(exitCode, timedOut, cancelled, durationMs);
    }

    ExecResult await() {
      return capture.await();
    }

    synchronized byte[] stdout() {
      return out.toByteArray();
    }
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] r = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }

}
