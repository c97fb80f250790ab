package ai.bespokelabs.sandbox.adapters.modal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.sim.OnContext;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.grpc.common.GrpcStatus;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import modal.client.Api;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Modal adapter against the gRPC simulator, which refuses what Modal's protos and API do not allow. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ModalProviderTest {
  static final java.math.BigDecimal GPU_RATE = new java.math.BigDecimal("2.10");
  static ModalSimulator sim;
  static Vertx vertx;
  static ModalProvider provider;
  static Context context;
  static int seq;

  @BeforeAll
  static void start() {
    sim = ModalSimulator.start();
    vertx = Vertx.vertx();
    provider = provider(ModalSimulator.TOKEN_SECRET);
    context = vertx.getOrCreateContext();
  }

  static ModalProvider provider(String secret) {
    return provider(secret, Duration.ofSeconds(5));
  }

  static ModalProvider provider(String secret, Duration requestTimeout) {
    return provider(secret, Duration.ofSeconds(20), requestTimeout);
  }

  static ModalProvider provider(String secret, Duration createTimeout, Duration requestTimeout) {
    return new ModalProvider(vertx, new ModalSettings(sim.serverUrl(), new Secret(ModalSimulator.TOKEN_ID),
        new Secret(secret), "test-env", "bespoke-test", "python:3.12-slim", 600, createTimeout, requestTimeout),
        new PricingCatalog("test", Map.of("modal", new PricingCatalog.Rates(new java.math.BigDecimal("0.047"),
            new java.math.BigDecimal("0.0098"))), Map.of("modal", Map.of("A100", GPU_RATE))));
  }

  @AfterEach
  void conforming() {
    sim.clearFaults();
    assertThat(sim.violations()).as("requests Modal would refuse").isEmpty();
    assertThat(sim.headerValues()).as("the token secret travels only in its own header")
        .filteredOn(h -> h.contains(ModalSimulator.TOKEN_SECRET))
        .allMatch(h -> h.equals("x-modal-token-secret: " + ModalSimulator.TOKEN_SECRET));
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

  static CreateSandbox createRequest(SandboxConfig config) {
    seq++;
    return new CreateSandbox("sbx_" + seq + "_" + System.nanoTime(), "org_1", "modal", "ctk_" + seq + "_"
        + System.nanoTime(), config);
  }

  static SandboxConfig config(Double cpu, Integer memoryMb, String gpu, String image, Map<String, String> env,
      Boolean internet, String snapshotId) {
    return new SandboxConfig(null, cpu, memoryMb, null, gpu, 120, image, env, internet, null, null, snapshotId, null,
        null, null);
  }

  static String create(SandboxConfig config) {
    return await(() -> provider.lifecycle().create(createRequest(config)));
  }

  static ExecSandbox exec(String rid, String command, boolean keepStdin, int timeoutSecs) {
    return new ExecSandbox("sbx", "exe_" + System.nanoTime(), rid, null, null, command, null, Map.of("EXTRA", "x"),
        null, timeoutSecs, 1 << 20, keepStdin, null, null);
  }

  /** Records the output and the end. */
  static final class Recording implements OutputSink {
    final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    final CountDownLatch ended = new CountDownLatch(1);
    volatile int exitCode;
    volatile boolean timedOut;
    volatile int exits;

    volatile boolean splitCharacter;
    volatile boolean cancelled;

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      (stream == Stream.STDOUT ? stdout : stderr).writeBytes(data);
      if (!java.util.Arrays.equals(new String(data, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8), data)) {
        splitCharacter = true;
      }
      return Future.succeededFuture();
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      this.cancelled = cancelled;
      this.exitCode = exitCode;
      this.timedOut = timedOut;
      exits++;
      ended.countDown();
    }

    void await() throws InterruptedException {
      assertThat(ended.await(30, TimeUnit.SECONDS)).as("execution ended").isTrue();
    }

    synchronized String out() {
      return stdout.toString(StandardCharsets.UTF_8);
    }

    synchronized String err() {
      return stderr.toString(StandardCharsets.UTF_8);
    }
  }

  static Recording run(ExecSandbox request) throws InterruptedException {
    Recording sink = new Recording();
    await(() -> provider.executions().start(request, sink));
    sink.await();
    return sink;
  }

  static ProviderError error(Runnable r) {
    try {
      r.run();
    } catch (ProviderException e) {
      assertThat(String.valueOf(e.getMessage()) + e.error().context()).doesNotContain(ModalSimulator.TOKEN_SECRET);
      return e.error();
    }
    throw new AssertionError("expected a provider error");
  }

  static FileOp fileOp(String rid, String path, boolean executable, boolean recursive) {
    return new FileOp("files", "sbx_files", rid, path, null, null, executable, recursive);
  }

  static FileEntry upload(FileWriter w, byte[] data, int chunk) {
    for (int at = 0; at < data.length; at += chunk) {
      Buffer b = Buffer.buffer(java.util.Arrays.copyOfRange(data, at, Math.min(data.length, at + chunk)));
      await(() -> w.write(b));
    }
    return await(w::commit);
  }

  static byte[] download(FileReader r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      Buffer b;
      while ((b = await(() -> r.read(64 << 10))) != null) {
        assertThat(b.length()).isLessThanOrEqualTo(64 << 10);
        out.writeBytes(b.getBytes());
      }
    } finally {
      await(r::close);
    }
    return out.toByteArray();
  }

  static int status(Supplier<Future<?>> work) {
    try {
      await(() -> work.get().map(x -> (Object) x));
    } catch (ApiException e) {
      return e.status();
    }
    return 0;
  }

  @Test
  void files_upload_list_download_delete_and_archives_through_the_filesystem_calls() throws Exception {
    String rid = create(config(null, null, null, null, null, null, null));
    java.nio.file.Path root = sim.dir(rid);
    FileSystem fs = provider.files();
    byte[] blob = new byte[300_000];
    new java.util.Random(7).nextBytes(blob);
    FileEntry up = upload(await(() -> fs.openWrite(fileOp(rid, "tools/blob.bin", false, false))), blob, 100_000);
    assertThat(up.size()).isEqualTo(blob.length);
    upload(await(() -> fs.openWrite(fileOp(rid, "/tools/run.sh", true, false))),
        "#!/bin/sh\necho ran\n".getBytes(StandardCharsets.UTF_8), 1024);
    assertThat(java.nio.file.Files.readAllBytes(root.resolve("tools/blob.bin"))).isEqualTo(blob);
    try (var left = java.nio.file.Files.list(root.resolve("tools"))) {
      assertThat(left.map(p -> p.getFileName().toString())).as("no temporary file left")
          .containsExactlyInAnyOrder("blob.bin", "run.sh");
    }

    List<FileEntry> listed = await(() -> fs.list(fileOp(rid, "tools", false, false)));
    assertThat(listed).extracting(FileEntry::name).containsExactly("blob.bin", "run.sh");
    assertThat(listed.get(0).size()).isEqualTo(blob.length);
    assertThat(listed.get(0).mode()).isEqualTo(0644);
    assertThat(listed.get(1).mode()).isEqualTo(0755);
    assertThat(listed.get(0).path()).isEqualTo("tools/blob.bin");
    assertThat(await(() -> fs.list(fileOp(rid, ".", false, false)))).singleElement()
        .satisfies(e -> assertThat(e.isDir()).isTrue());
    assertThat(await(() -> fs.list(fileOp(rid, "tools/run.sh", false, false)))).singleElement()
        .satisfies(e -> assertThat(e.path()).isEqualTo("tools/run.sh"));

    assertThat(download(await(() -> fs.openRead(fileOp(rid, "tools/blob.bin", false, false))))).isEqualTo(blob);
    assertThat(status(() -> fs.openRead(fileOp(rid, "tools", false, false)))).isEqualTo(422);
    assertThat(status(() -> fs.openRead(fileOp(rid, "tools/none", false, false)))).isEqualTo(404);
    assertThat(status(() -> fs.openWrite(fileOp(rid, "tools", false, false))
        .compose(w -> w.write(Buffer.buffer("x")).compose(v -> w.commit())))).as("a directory is not replaced")
        .isEqualTo(422);
    assertThat(root.resolve("tools")).isDirectory();

    // directories as tar.gz, built on the single-file calls
    byte[] tree = download(await(() -> fs.openArchiveRead(fileOp(rid, "tools", false, false))));
    upload(await(() -> fs.openArchiveWrite(fileOp(rid, "copy", false, false))), tree, 50_000);
    assertThat(java.nio.file.Files.readAllBytes(root.resolve("copy/blob.bin"))).isEqualTo(blob);
    assertThat(java.nio.file.Files.readString(root.resolve("copy/run.sh"))).isEqualTo("#!/bin/sh\necho ran\n");

    assertThat(status(() -> fs.delete(fileOp(rid, "tools", false, false)))).isEqualTo(409);
    await(() -> fs.delete(fileOp(rid, "tools/blob.bin", false, false)));
    assertThat(root.resolve("tools/blob.bin")).doesNotExist();
    await(() -> fs.delete(fileOp(rid, "tools", false, true)));
    assertThat(root.resolve("tools")).doesNotExist();
    assertThat(status(() -> fs.list(fileOp(rid, "tools", false, false)))).isEqualTo(404);
    assertThat(status(() -> fs.delete(fileOp(rid, "tools", false, false)))).isEqualTo(404);
    assertThat(status(() -> fs.delete(fileOp(rid, "/", false, true)))).isEqualTo(422);

    // the helper programs (stat) look the router up again when its token expired
    sim.expireRouterTokens();
    assertThat(await(() -> fs.list(fileOp(rid, ".", false, false)))).extracting(FileEntry::name).contains("copy");

    // a path Modal refuses (outside the container's root): 403, and nothing was read
    assertThat(status(() -> fs.openRead(fileOp(rid, "../../etc/passwd", false, false)))).isEqualTo(403);
  }

  @Test
  void signals_reach_the_programs_process_group_through_a_helper_exec() throws Exception {
    String rid = create(config(null, null, null, null, null, null, null));
    Recording trapped = new Recording();
    Execution term = await(() -> provider.executions().start(exec(rid,
        "trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 0.1; done", false, 60), trapped));
    ai.bespokelabs.sandbox.testkit.Waits.upTo(10).until(() -> trapped.out().equals("ready\n"));
    await(() -> term.signal("TERM"));
    trapped.await();
    assertThat(trapped.out()).isEqualTo("ready\ngot TERM\n");
    assertThat(trapped.exitCode).isEqualTo(3);
    assertThat(trapped.cancelled).isTrue();

    Recording killed = new Recording();
    Execution kill = await(() -> provider.executions().start(exec(rid,
        "trap '' TERM; sleep 30 & echo $! > child.pid; echo ready; wait", false, 60), killed));
    ai.bespokelabs.sandbox.testkit.Waits.upTo(10).until(() -> killed.out().equals("ready\n"));
    long child = Long.parseLong(java.nio.file.Files.readString(sim.dir(rid).resolve("child.pid")).trim());
    await(() -> kill.signal("KILL"));
    killed.await();
    assertThat(killed.exitCode).as("128 + SIGKILL").isEqualTo(137);
    assertThat(killed.cancelled).isTrue();
    assertThat(killed.timedOut).isFalse();
    ai.bespokelabs.sandbox.testkit.Waits.upTo(5).until(() -> ProcessHandle.of(child).map(h -> !h.isAlive())
        .orElse(true));
    await(() -> kill.signal("TERM")); // after its end: nothing to do
  }

  @Test
  void the_auth_token_is_renewed_before_it_expires_and_once_after_the_server_calls_it_expired() throws Exception {
    ModalProvider own = provider(ModalSimulator.TOKEN_SECRET);
    sim.authTokenLifetime(Duration.ofSeconds(3));
    try {
      int fetched = sim.calls("AuthTokenGet");
      int refused = sim.expiredRefusals();
      await(() -> own.inventory().checkHealth());
      assertThat(sim.calls("AuthTokenGet")).isEqualTo(fetched + 1);
      await(() -> own.inventory().checkHealth());
      assertThat(sim.calls("AuthTokenGet")).as("reused while fresh").isEqualTo(fetched + 1);

      // the token's last half of life began between two calls: renewed before use, never refused
      Thread.sleep(2_200);
      await(() -> own.inventory().checkHealth());
      assertThat(sim.calls("AuthTokenGet")).isEqualTo(fetched + 2);
      assertThat(sim.expiredRefusals()).isEqualTo(refused);

      // the server calls the token expired (a clock jump, a revocation): renewed, and the call sent once more
      sim.expireAuthTokens();
      await(() -> own.inventory().checkHealth());
      assertThat(sim.expiredRefusals()).isEqualTo(refused + 1);
      assertThat(sim.calls("AuthTokenGet")).isEqualTo(fetched + 3);

      // expired again right after renewal: one retry only, then the contract's authentication error
      sim.authTokenLifetime(Duration.ZERO);
      sim.expireAuthTokens();
      assertThatThrownBy(() -> await(() -> own.inventory().checkHealth())).isInstanceOfSatisfying(
          ProviderException.class, e -> assertThat(e.error().code()).isEqualTo(ErrorCode.AUTHENTICATION));
      assertThat(sim.expiredRefusals()).isEqualTo(refused + 3);
      assertThat(sim.headerValues()).anyMatch(h -> h.startsWith("x-modal-auth-token: "));
    } finally {
      sim.authTokenLifetime(Duration.ofMinutes(20));
      await(own::close);
    }
  }

  @Test
  void declares_files_snapshots_and_adoption() {
    assertThat(provider.name()).isEqualTo("modal");
    assertThat(provider.nodeBound()).isFalse();
    assertThat(provider.capabilities()).containsExactlyInAnyOrder(Capability.FILES, Capability.SNAPSHOT,
        Capability.ADOPT);
  }

  @Test
  void settings_need_both_tokens_and_never_print_the_secret() {
    assertThat(ModalSettings.from(ProviderSettings.withDefaults(Map.of("MODAL_TOKEN_ID", "x")))).isEmpty();
    ModalSettings s = ModalSettings.from(ProviderSettings.withDefaults(Map.of("MODAL_TOKEN_ID", "id", "MODAL_TOKEN_SECRET",
        "very-secret", "MODAL_SERVER_URL", "http://127.0.0.1:1", "MODAL_APP_NAME", "a", "MODAL_IMAGE", "img",
        "MODAL_SANDBOX_TIMEOUT_SECS", "60", "MODAL_REQUEST_TIMEOUT_SECS", "5"))).orElseThrow();
    assertThat(s.toString()).doesNotContain("very-secret");
    assertThat(s.environment()).isNull();
    assertThat(s.createTimeout()).as("conf/gateway.json's default").isEqualTo(Duration.ofSeconds(600));
  }

  @Test
  void create_maps_resources_gpu_env_network_and_tags() throws Exception {
    CreateSandbox req = createRequest(config(1.5, 2048, "a100:2", "ubuntu:24.04", Map.of("GREETING", "hi there"),
        false, null));
    String id = await(() -> provider.lifecycle().create(req));
    Api.Sandbox d = sim.definition(id);
    assertThat(d.getResources().getMilliCpu()).isEqualTo(1500);
    assertThat(d.getResources().getMemoryMb()).isEqualTo(2048);
    assertThat(d.getResources().getGpuConfig().getGpuType()).isEqualTo("A100");
    assertThat(d.getResources().getGpuConfig().getCount()).isEqualTo(2);
    assertThat(d.getNetworkAccess().getNetworkAccessType()).isEqualTo(Api.NetworkAccess.NetworkAccessType.BLOCKED);
    assertThat(d.getTimeoutSecs()).isEqualTo(120 + ModalLifecycle.DEADLINE_GRACE_SECS);
    assertThat(d.getSecretIdsCount()).isEqualTo(1);
    assertThat(sim.tags(id)).extracting(Api.SandboxTag::getTagName)
        .containsExactlyInAnyOrder(ModalProvider.TAG_SANDBOX, ModalProvider.TAG_ORG, ModalProvider.TAG_TOKEN);

    Recording r = run(exec(id, "echo \"$GREETING/$EXTRA\"; echo oops >&2; exit 3", false, 30));
    assertThat(r.out()).isEqualTo("hi there/x\n");
    assertThat(r.err()).isEqualTo("oops\n");
    assertThat(r.exitCode).isEqualTo(3);
    assertThat(r.exits).isEqualTo(1);
    await(() -> provider.lifecycle().destroy(new DestroySandbox(req.sandboxId(), id)));
  }

  @Test
  void invalid_gpu_and_unsupported_settings_are_422_before_any_call() {
    int before = sim.calls("AppGetOrCreate");
    for (String gpu : List.of("A100:0", "H100:99", "A100:x", "", "gpu please")) {
      assertThatThrownBy(() -> create(config(null, null, gpu, null, null, null, null)))
          .isInstanceOf(ApiException.class).extracting(e -> ((ApiException) e).status()).isEqualTo(422);
    }
    assertThatThrownBy(() -> create(new SandboxConfig(null, null, null, null, null, 60, null, null, null, null, null,
        null, "/w", null, null))).isInstanceOf(ApiException.class);
    assertThat(sim.calls("AppGetOrCreate")).isEqualTo(before);
  }

  @Test
  void exec_with_stdin_then_eof() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    Recording sink = new Recording();
    Execution e = await(() -> provider.executions().start(exec(id, "cat; echo done", true, 30), sink));
    await(() -> e.write(Buffer.buffer("line one\n")));
    await(() -> e.write(Buffer.buffer("line two\n")));
    await(e::closeStdin);
    sink.await();
    assertThat(sink.out()).isEqualTo("line one\nline two\ndone\n");
    assertThat(sink.exitCode).isZero();
    assertThatThrownBy(() -> await(() -> e.write(Buffer.buffer("late")))).isInstanceOf(ApiException.class);
  }

  @Test
  void a_dropped_output_stream_resumes_at_its_offset_without_loss_or_duplication() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    sim.dropStdoutAfter(1500);
    Recording r = run(exec(id, "seq 1 3000", false, 30));
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 3000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(r.out()).isEqualTo(expected.toString());
    assertThat(r.exitCode).isZero();
  }

  @Test
  void a_stream_dropped_inside_a_character_resumes_and_every_chunk_is_whole_utf8() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    sim.dropStdoutAfter(1001);
    Recording r = run(exec(id, "python3 -c \"print('\u00e9' * 1500)\"", false, 30));
    assertThat(r.out()).isEqualTo("\u00e9".repeat(1500) + "\n");
    assertThat(r.splitCharacter).as("a chunk cut a character").isFalse();
  }

  @Test
  void closing_the_backend_abandons_running_executions_without_a_result() throws Exception {
    ModalProvider other = provider(ModalSimulator.TOKEN_SECRET);
    String id = await(() -> other.lifecycle().create(createRequest(config(null, null, null, null, null, null, null))));
    Recording sink = new Recording();
    await(() -> other.executions().start(exec(id, "echo hi; sleep 30", false, 60), sink));
    await(other::close);
    assertThat(sink.ended.await(1, TimeUnit.SECONDS)).as("an abandoned execution reports no end").isFalse();
    assertThat(sink.exits).isZero();
  }

  @Test
  void the_router_is_remembered_per_sandbox_and_looked_up_again_when_its_token_expired() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    assertThat(run(exec(id, "echo one", false, 30)).out()).isEqualTo("one\n");
    int lookups = sim.calls("TaskGetCommandRouterAccess");
    assertThat(run(exec(id, "echo two", false, 30)).out()).isEqualTo("two\n");
    assertThat(sim.calls("TaskGetCommandRouterAccess")).as("remembered").isEqualTo(lookups);
    sim.expireRouterTokens();
    assertThat(run(exec(id, "echo three", false, 30)).out()).isEqualTo("three\n");
    assertThat(sim.calls("TaskGetCommandRouterAccess")).as("looked up again").isEqualTo(lookups + 1);
  }

  @Test
  void an_unavailable_router_is_asked_again_for_the_exit_status() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    sim.fail("TaskExecWait", GrpcStatus.UNAVAILABLE);
    Recording r = run(exec(id, "echo fine; exit 7", false, 30));
    assertThat(r.out()).isEqualTo("fine\n");
    assertThat(r.exitCode).isEqualTo(7);
  }

  @Test
  void a_command_past_its_timeout_is_killed_and_reported_timed_out() throws Exception {
    String id = create(config(null, null, null, null, null, null, null));
    Recording r = run(exec(id, "echo start; sleep 30", false, 1));
    assertThat(r.out()).isEqualTo("start\n");
    assertThat(r.timedOut).isTrue();
    assertThat(r.exitCode).isEqualTo(ModalExecution.TIMED_OUT);
  }

  @Test
  void snapshot_then_create_from_it_keeps_the_files() throws Exception {
    CreateSandbox req = createRequest(config(null, null, null, null, null, null, null));
    String id = await(() -> provider.lifecycle().create(req));
    assertThat(run(exec(id, "echo kept > state.txt", false, 30)).exitCode).isZero();
    String snapshot = await(() -> provider.lifecycle().snapshot(new SnapshotSandbox(req.sandboxId(), "org_1", id)));
    assertThat(snapshot).matches("org_1\\.[0-9a-f]{32}\\.im-.+");
    String restored = create(config(null, null, null, null, null, null, snapshot));
    assertThat(run(exec(restored, "cat state.txt", false, 30)).out()).isEqualTo("kept\n");
  }

  /** Modal images carry no label: the id handed out is bound to its organization, and nobody else's. */
  @Test
  void a_snapshot_restores_for_its_organization_only() throws Exception {
    CreateSandbox req = createRequest(config(null, null, null, null, null, null, null));
    String id = await(() -> provider.lifecycle().create(req));
    String snapshot = await(() -> provider.lifecycle().snapshot(new SnapshotSandbox(req.sandboxId(), "org_1", id)));
    String image = snapshot.substring(snapshot.lastIndexOf('.') + 1);
    int before = sim.calls("SandboxCreate");
    for (String[] attempt : new String[][] {{"org_other", snapshot}, {"org_1", image}, {"org_other", image},
        {"org_other", "org_other" + snapshot.substring("org_1".length())}, {"org_1", snapshot + "x"}}) {
      CreateSandbox foreign = new CreateSandbox("sbx_f" + System.nanoTime(), attempt[0], "modal", "ctk_f" + System.nanoTime(),
          config(null, null, null, null, null, null, attempt[1]));
      assertThatThrownBy(() -> await(() -> provider.lifecycle().create(foreign))).as(String.join(" ", attempt))
          .hasMessageContaining("snapshot not found");
    }
    assertThat(sim.calls("SandboxCreate")).as("nothing was created").isEqualTo(before);
  }

  @Test
  void adopt_confirms_a_running_sandbox_is_this_sandboxs_and_this_organizations() {
    CreateSandbox req = createRequest(config(null, null, null, null, null, null, null));
    String id = await(() -> provider.lifecycle().create(req));
    assertThat(await(() -> provider.lifecycle().adopt(req, id))).isEqualTo(id);
    CreateSandbox foreign = new CreateSandbox(req.sandboxId(), "org_other", "modal", req.createToken(), req.config());
    assertThat(error(() -> await(() -> provider.lifecycle().adopt(foreign, id))).code()).isEqualTo(ErrorCode.NOT_FOUND);
    await(() -> provider.lifecycle().destroy(new DestroySandbox(req.sandboxId(), id)));
    assertThat(error(() -> await(() -> provider.lifecycle().adopt(req, id))).code()).isEqualTo(ErrorCode.NOT_FOUND);
  }

  @Test
  void destroy_terminates_and_a_second_destroy_reports_already_gone() {
    CreateSandbox req = createRequest(config(null, null, null, null, null, null, null));
    String id = await(() -> provider.lifecycle().create(req));
    assertThat(await(() -> provider.lifecycle().destroy(new DestroySandbox(req.sandboxId(), id))).alreadyGone())
        .isFalse();
    assertThat(sim.liveSandboxes()).doesNotContain(id);
    assertThat(await(() -> provider.lifecycle().destroy(new DestroySandbox(req.sandboxId(), id))).alreadyGone())
        .isTrue();
    assertThat(await(() -> provider.lifecycle().destroy(new DestroySandbox(req.sandboxId(), "sb-unknown")))
        .alreadyGone()).isTrue();
  }

  @Test
  void gpu_time_modal_reports_is_priced_at_the_catalogs_rate_for_its_type() throws Exception {
    long t0 = System.nanoTime();
    String gpu = create(config(null, null, "A100:2", null, null, null, null));
    long created = System.nanoTime();
    String unpriced = create(config(null, null, "H100", null, null, null, null));
    Thread.sleep(1_000);
    long asked = System.nanoTime();
    List<Resource> listed = await(() -> provider.inventory().list());
    long answered = System.nanoTime();
    java.math.BigDecimal cost = listed.stream().filter(r -> r.resourceId().equals(gpu)).findFirst().orElseThrow()
        .providerCostUsd();
    // two A100s for at least the time between the create's answer and the listing, at most the whole span
    java.math.BigDecimal perSecond = GPU_RATE.multiply(java.math.BigDecimal.TWO)
        .divide(java.math.BigDecimal.valueOf(3600), java.math.MathContext.DECIMAL64);
    assertThat(cost).isGreaterThanOrEqualTo(perSecond.multiply(java.math.BigDecimal.valueOf((asked - created) / 1e9)));
    assertThat(cost).isLessThanOrEqualTo(perSecond.add(new java.math.BigDecimal("0.001"))
        .multiply(java.math.BigDecimal.valueOf((answered - t0) / 1e9 + 1)));
    assertThat(listed).filteredOn(r -> r.resourceId().equals(unpriced)).singleElement()
        .satisfies(r -> assertThat(r.providerCostUsd()).as("a GPU type the catalog does not price: no cost")
            .isNull());
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", gpu, null)));
    await(() -> provider.lifecycle().destroy(new DestroySandbox("sbx", unpriced, null)));
  }

  @Test
  void list_pages_through_our_tagged_sandboxes_and_health_is_one_authenticated_call() {
    CreateSandbox a = createRequest(config(null, null, null, null, null, null, null));
    String ida = await(() -> provider.lifecycle().create(a));
    List<String> ids = List.of(ida, create(config(null, null, null, null, null, null, null)),
        create(config(null, null, null, null, null, null, null)));
    List<Resource> listed = await(() -> provider.inventory().list());
    assertThat(listed).extracting(Resource::resourceId).containsAll(ids);
    assertThat(listed).filteredOn(r -> r.resourceId().equals(ida)).extracting(Resource::sandboxId)
        .containsExactly(a.sandboxId());
    assertThat(listed).filteredOn(r -> ids.contains(r.resourceId()))
        .allSatisfy(r -> assertThat(r.providerCostUsd()).as("cost from the usage Modal reports").isPositive());
    await(() -> provider.inventory().checkHealth());
  }

  @Test
  void statuses_map_onto_the_contract_without_echoing_the_token() {
    ModalProvider bad = provider("wrong-secret");
    try {
      ProviderError auth = error(() -> await(() -> bad.inventory().checkHealth()));
      assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
      assertThat(auth.retryable()).isFalse();
    } finally {
      await(bad::close);
    }
    sim.fail("SandboxList", GrpcStatus.RESOURCE_EXHAUSTED);
    ProviderError busy = error(() -> await(() -> provider.inventory().list()));
    assertThat(busy.retryable()).isTrue();
    sim.fail("SandboxList", GrpcStatus.UNAVAILABLE);
    assertThat(error(() -> await(() -> provider.inventory().list())).retryable()).isTrue();
    // the wait a server asks for in gRPC's retry pushback trailer is the error's wait hint
    sim.fail("SandboxList", GrpcStatus.RESOURCE_EXHAUSTED, 2_500L);
    assertThat(error(() -> await(() -> provider.inventory().list())).context())
        .containsEntry("retry_after_ms", 2_500L).containsEntry("retry_after_secs", 3L);
    sim.fail("SandboxList", GrpcStatus.RESOURCE_EXHAUSTED, -1L);
    assertThat(error(() -> await(() -> provider.inventory().list())).context()).as("a negative pushback is no hint")
        .doesNotContainKeys("retry_after_ms", "retry_after_secs");
    sim.fail("SandboxSnapshotFs", GrpcStatus.DEADLINE_EXCEEDED);
    ProviderError slow = error(() -> await(() -> provider.lifecycle().snapshot(new SnapshotSandbox("s", "o", "x"))));
    assertThat(slow.code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(slow.httpStatus()).isEqualTo(504);
    ProviderError gone = error(() -> await(() -> provider.executions().start(exec("sb-nope", "true", false, 5),
        new Recording())));
    assertThat(gone.code()).isEqualTo(ErrorCode.NOT_FOUND);
  }

  @Test
  void a_call_modal_answers_too_late_times_out_at_its_deadline() {
    ModalProvider impatient = provider(ModalSimulator.TOKEN_SECRET, Duration.ofSeconds(1));
    try {
      await(() -> impatient.inventory().checkHealth());
      sim.delay("SandboxList", 4_000);
      long t0 = System.nanoTime();
      ProviderError slow = error(() -> await(() -> impatient.inventory().list()));
      assertThat(slow.code()).isEqualTo(ErrorCode.TIMEOUT);
      assertThat(slow.outcome()).as("a listing changes nothing").isEqualTo(Outcome.FAILED);
      assertThat(slow.retryable()).isTrue();
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("at the deadline, not at the late answer")
          .isLessThan(Duration.ofMillis(3_000));
    } finally {
      await(impatient::close);
    }
  }

  @Test
  void a_create_whose_answer_is_lost_is_cleaned_up_by_its_create_token() {
    CreateSandbox req = createRequest(config(null, null, null, null, null, null, null));
    java.util.Set<String> before = sim.liveSandboxes();
    sim.failAfter("SandboxCreate", GrpcStatus.UNAVAILABLE);
    ProviderError e = error(() -> await(() -> provider.lifecycle().create(req)));
    assertThat(e.context()).containsEntry("cleanup_status", "deleted");
    assertThat(e.outcome()).isEqualTo(Outcome.FAILED);
    assertThat(sim.liveSandboxes()).isEqualTo(before);
  }

  // ---- images Modal has not built yet ---------------------------------------------------------------------------

  /** A registry reference no create has used yet, so that Modal (the simulator) has to build it. */
  static String newImage() {
    return "registry.example/first-use-" + System.nanoTime() + ":1";
  }

  static List<Api.ImageJoinStreamingRequest> joinsSince(int before) {
    return List.copyOf(sim.joins().subList(before, sim.joins().size()));
  }

  @Test
  void a_first_use_of_an_image_waits_for_its_build_then_creates() {
    String image = newImage();
    int builds = sim.buildsStarted();
    int joins = sim.joins().size();
    String id = create(config(null, null, null, image, null, null, null));
    assertThat(sim.liveSandboxes()).contains(id);
    assertThat(sim.buildsStarted()).as("the image was built for this create").isEqualTo(builds + 1);
    assertThat(joinsSince(joins)).as("the build was joined").isNotEmpty()
        .allSatisfy(j -> assertThat(j.getTimeout()).isPositive().isLessThanOrEqualTo(55f));

    // built now: ImageGetOrCreate answers with the result, nothing is joined
    int again = sim.joins().size();
    String second = create(config(null, null, null, image, null, null, null));
    assertThat(sim.liveSandboxes()).contains(second);
    assertThat(sim.joins()).hasSize(again);
    assertThat(sim.buildsStarted()).isEqualTo(builds + 1);
  }

  @Test
  void a_join_that_ends_without_a_result_is_resumed_from_its_last_entry() {
    int joins = sim.joins().size();
    sim.endJoinAfter(1);
    String id = create(config(null, null, null, newImage(), null, null, null));
    assertThat(sim.liveSandboxes()).contains(id);
    List<Api.ImageJoinStreamingRequest> sent = joinsSince(joins);
    assertThat(sent).hasSizeGreaterThanOrEqualTo(2);
    assertThat(sent.get(0).getLastEntryId()).isEmpty();
    // the simulator refuses (as a violation) an entry id it never sent, so this is the first stream's entry
    assertThat(sent.get(1).getLastEntryId()).as("resumed after the entry the first stream ended on").isNotEmpty();
    assertThat(sent.get(1).getImageId()).isEqualTo(sent.get(0).getImageId());
  }

  @Test
  void a_failed_build_is_a_configuration_error_naming_the_image_and_creates_nothing() {
    java.util.Set<String> live = sim.liveSandboxes();
    int creates = sim.calls("SandboxCreate");
    for (int attempt = 0; attempt < 2; attempt++) { // building, then answered from the failed result at once
      int joins = sim.joins().size();
      Throwable t = org.assertj.core.api.Assertions.catchThrowable(
          () -> create(config(null, null, null, ModalSimulator.FAILING_IMAGE, null, null, null)));
      assertThat(t).as("the tenant's image: 422, recorded by the gateway as a configuration failure")
          .isInstanceOf(ApiException.class);
      ApiException e = (ApiException) t;
      assertThat(e.status()).isEqualTo(422);
      assertThat((String) e.detail()).isEqualTo("image " + ModalSimulator.FAILING_IMAGE
          + " failed to build on Modal: " + ModalSimulator.BUILD_FAILURE.replaceAll("\\s+", " "))
          .doesNotContain(ModalSimulator.BUILD_LOG);
      assertThat(sim.joins().size() > joins).as("joined only while it was building").isEqualTo(attempt == 0);
    }
    assertThat(sim.calls("SandboxCreate")).as("no sandbox was asked for").isEqualTo(creates);
    assertThat(sim.liveSandboxes()).isEqualTo(live);
  }

  @Test
  void a_build_slower_than_the_create_timeout_is_a_timeout_and_creates_nothing() {
    ModalProvider hurried = provider(ModalSimulator.TOKEN_SECRET, Duration.ofSeconds(1), Duration.ofSeconds(5));
    try {
      java.util.Set<String> live = sim.liveSandboxes();
      int creates = sim.calls("SandboxCreate");
      sim.buildTime(Duration.ofSeconds(10));
      long t0 = System.nanoTime();
      ProviderError e = error(() -> await(() -> hurried.lifecycle().create(createRequest(
          config(null, null, null, newImage(), null, null, null)))));
      assertThat(e.code()).isEqualTo(ErrorCode.TIMEOUT);
      assertThat(e.outcome()).as("no sandbox was created").isEqualTo(Outcome.FAILED);
      assertThat(e.retryable()).as("Modal goes on building").isTrue();
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(4));
      assertThat(sim.calls("SandboxCreate")).isEqualTo(creates);
      assertThat(sim.liveSandboxes()).isEqualTo(live);
    } finally {
      await(hurried::close);
    }
  }

  @Test
  void a_join_modal_never_answers_ends_at_the_create_timeout() {
    ModalProvider hurried = provider(ModalSimulator.TOKEN_SECRET, Duration.ofSeconds(1), Duration.ofSeconds(5));
    try {
      int creates = sim.calls("SandboxCreate");
      sim.holdJoins(100);
      long t0 = System.nanoTime();
      ProviderError e = error(() -> await(() -> hurried.lifecycle().create(createRequest(
          config(null, null, null, newImage(), null, null, null)))));
      assertThat(e.code()).isEqualTo(ErrorCode.TIMEOUT);
      assertThat(e.outcome()).isEqualTo(Outcome.FAILED);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("the client's deadline, not the server's silence")
          .isLessThan(Duration.ofSeconds(4));
      assertThat(sim.calls("SandboxCreate")).isEqualTo(creates);
    } finally {
      await(hurried::close);
    }
  }
}
