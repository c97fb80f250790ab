package ai.bespokelabs.sandbox.adapters.runpod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The RunPod adapter against the REST simulator and a real SSH server standing in for the pods' sshd. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RunPodProviderTest {
  static final String KEY = "rp_test_key_0123456789";
  static RunPodSimulator sim;
  static Vertx vertx;
  static Path data;
  static RunPodProvider provider;
  static Context context;
  static String pod;

  @BeforeAll
  static void start() throws Exception {
    sim = RunPodSimulator.start(KEY).startDelayMs(300);
    vertx = Vertx.vertx();
    data = Files.createTempDirectory("runpod-test-");
    context = vertx.getOrCreateContext();
    provider = provider(KEY);
    pod = on(() -> provider.lifecycle().create(create("sbx_main", config(null))));
  }

  @AfterAll
  static void stop() throws Exception {
    on(provider::close);
    vertx.close().await(10, TimeUnit.SECONDS);
    sim.close();
  }

  @AfterEach
  void everyRequestConformed() {
    sim.faults().clear();
    assertThat(sim.violations()).isEmpty();
  }

  static RunPodProvider provider(String key) {
    RunPodProvider p = new RunPodProvider(vertx, settings(key), Clock.systemUTC());
    on(() -> p.start(context));
    return p;
  }

  static RunPodSettings settings(String key) {
    return new RunPodSettings(sim.url(), new Secret(key), "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
        "NVIDIA GeForce RTX 4090", data.resolve("runpod/id_ecdsa"), data.resolve("runpod/host-keys.properties"),
        Duration.ofSeconds(10), Duration.ofSeconds(5));
  }

  static <T> T on(Supplier<Future<T>> call) {
    return OnContext.await(context, call);
  }

  static SandboxConfig config(Boolean allowInternet) {
    return new SandboxConfig(null, null, null, 20_480, null, 600, null, Map.of("GREETING", "hi there"),
        allowInternet, null, null, null, null, null, null);
  }

  static CreateSandbox create(String sandboxId, SandboxConfig config) {
    return new CreateSandbox(sandboxId, "org_test", "runpod", "ctk_" + UUID.randomUUID().toString()
        .replace("-", ""), config);
  }

  static ExecSandbox command(String podId, String command, int timeoutSecs, boolean keepStdin) {
    return new ExecSandbox("sbx_main", "exe_" + UUID.randomUUID().toString().replace("-", ""), podId, null, null,
        command, null, Map.of("EXTRA", "x y"), null, timeoutSecs, 1 << 20, keepStdin, null, null);
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
  static final class Sink implements OutputSink {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();
    final Promise<Integer> exit = Promise.promise();
    volatile boolean timedOut;
    volatile boolean cancelled;

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      (stream == Stream.STDOUT ? out : err).writeBytes(data);
      return vertx.timer(1, TimeUnit.MILLISECONDS).mapEmpty();
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

    synchronized String stdout() {
      return out.toString(StandardCharsets.UTF_8);
    }

    synchronized String stderr() {
      return err.toString(StandardCharsets.UTF_8);
    }
  }

  static Sink run(ExecSandbox request) throws Exception {
    Sink sink = new Sink();
    on(() -> provider.executions().start(request, sink));
    sink.await();
    return sink;
  }

  static FileOp op(String kind, String path, boolean executable, boolean recursive) {
    return new FileOp(kind, "sbx_main", pod, path, null, null, executable, recursive);
  }

  static byte[] readAll(FileReader r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Buffer b;
    while ((b = on(() -> r.read(8192))) != null) {
      out.writeBytes(b.getBytes());
    }
    on(r::close);
    return out.toByteArray();
  }

  @Test
  void files_over_sftp_upload_list_download_archive_and_delete() throws Exception {
    Path root = Files.createTempDirectory(data, "files-");
    String dir = root + "/tools";
    FileWriter w = on(() -> provider.files().openWrite(op("write", dir + "/hello.sh", true, false)));
    on(() -> w.write(Buffer.buffer("#!/bin/sh\n")));
    on(() -> w.write(Buffer.buffer("echo hello from $1\n")));
    FileEntry written = on(w::commit);
    assertThat(written.size()).isEqualTo(29);
    assertThat(written.mode() & 0111).isNotZero();
    Sink ran = run(new ExecSandbox("sbx_main", "exe_files", pod, null, null, dir + "/hello.sh", List.of("sftp"),
        Map.of(), null, 10, 1 << 20, false, null, null));
    assertThat(ran.stdout()).isEqualTo("hello from sftp\n");
    assertThat(on(() -> provider.files().list(op("list", dir, false, false)))).extracting(FileEntry::name)
        .containsExactly("hello.sh");
    assertThat(new String(readAll(on(() -> provider.files().openRead(op("read", dir + "/hello.sh", false, false)))),
        StandardCharsets.UTF_8)).isEqualTo("#!/bin/sh\necho hello from $1\n");
    byte[] tree = readAll(on(() -> provider.files().openArchiveRead(op("read", dir, false, false))));
    FileWriter unpack = on(() -> provider.files().openArchiveWrite(op("write", root + "/copy", false, false)));
    on(() -> unpack.write(Buffer.buffer(tree)));
    on(unpack::commit);
    assertThat(Files.readString(root.resolve("copy/hello.sh"))).startsWith("#!/bin/sh");
    assertThatThrownBy(() -> on(() -> provider.files().delete(op("delete", root + "/copy", false, false))))
        .isInstanceOf(ApiException.class).hasMessageContaining("not empty");
    on(() -> provider.files().delete(op("delete", root + "/copy", false, true)));
    assertThat(Files.exists(root.resolve("copy"))).isFalse();
    assertThatThrownBy(() -> on(() -> provider.files().list(op("list", root + "/nothing", false, false))))
        .isInstanceOf(ApiException.class).hasMessageContaining("not found");
  }

  /**
   * Every key {@code ssh-keygen} makes by default (ed25519, ecdsa, rsa), in its OpenSSH format and in PEM, loads as
   * the gateway's key: the pod is created with its public key and a program runs over SSH authenticated by it.
   */
  @Test
  void keys_made_by_ssh_keygen_of_every_default_type_and_format_load_and_authenticate() throws Exception {
    String[][] kinds = {{"ed25519", null, "ssh-ed25519 "}, {"ed25519", "PKCS8", "ssh-ed25519 "},
        {"ecdsa", null, "ecdsa-sha2-nistp256 "}, {"ecdsa", "PEM", "ecdsa-sha2-nistp256 "},
        {"rsa", null, "ssh-rsa "}, {"rsa", "PEM", "ssh-rsa "}};
    for (String[] kind : kinds) {
      String label = kind[0] + (kind[1] == null ? "" : " " + kind[1]);
      Path dir = Files.createTempDirectory(data, "keys-");
      Path key = dir.resolve("id_" + kind[0]);
      List<String> keygen = new java.util.ArrayList<>(List.of("ssh-keygen", "-q", "-t", kind[0], "-N", "", "-f",
          key.toString()));
      if (kind[1] != null) {
        keygen.addAll(List.of("-m", kind[1]));
      }
      Process p = new ProcessBuilder(keygen).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor()).as(label + ": " + out).isZero();
      RunPodSettings base = settings(KEY);
      RunPodProvider own = new RunPodProvider(vertx, new RunPodSettings(base.apiUrl(), base.apiKey(), base.image(),
          base.gpuType(), key, dir.resolve("host-keys.properties"), base.createTimeout(), base.requestTimeout()),
          Clock.systemUTC());
      try {
        on(() -> own.start(context));
        String podId = on(() -> own.lifecycle().create(create("sbx_key_" + kind[0], config(null))));
        assertThat(sim.pod(podId).getJsonObject("env").getString("PUBLIC_KEY")).as(label).startsWith(kind[2])
            .contains(Files.readString(dir.resolve("id_" + kind[0] + ".pub")).split(" ")[1]);
        Sink sink = new Sink();
        on(() -> own.executions().start(command(podId, "echo signed in", 30, false), sink));
        sink.await();
        assertThat(sink.stdout()).as(label).isEqualTo("signed in\n");
        on(() -> own.lifecycle().destroy(new ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox(
            "sbx_key_" + kind[0], podId, "test")));
      } finally {
        on(own::close);
      }
    }
  }

  @Test
  void create_sends_the_gpu_image_key_and_marks_and_waits_for_the_ssh_port() {
    JsonObject p = sim.pod(pod);
    RunPodMarks marks = RunPodMarks.parse(p.getString("name"));
    assertThat(marks.sandboxId()).isEqualTo("sbx_main");
    assertThat(marks.organizationId()).isEqualTo("org_test");
    assertThat(p.getJsonObject("portMappings").getInteger("22")).isEqualTo(sim.ssh().port());
    assertThat(p.getJsonObject("env").getString("PUBLIC_KEY")).startsWith("ecdsa-sha2-nistp256 ");
    assertThat(p.getJsonObject("gpu").getString("id")).isEqualTo("NVIDIA GeForce RTX 4090");
    assertThat(Files.isRegularFile(data.resolve("runpod/id_ecdsa"))).isTrue();
  }

  @Test
  void exec_streams_output_with_env_and_exit_code() throws Exception {
    Sink s = run(command(pod, "echo \"$GREETING|$EXTRA\"; echo oops >&2; exit 7", 30, false));
    assertThat(s.exit.future().result()).as(s.stderr() + "|" + s.stdout()).isEqualTo(7);
    assertThat(s.stdout()).isEqualTo("hi there|x y\n");
    assertThat(s.stderr()).isEqualTo("oops\n");
    Sink big = run(command(pod, "head -c 300000 /dev/zero | tr '\\0' a", 30, false));
    assertThat(big.stdout()).hasSize(300_000);
  }

  @Test
  void stdin_reaches_the_program_and_eof_ends_it() throws Exception {
    Sink sink = new Sink();
    Execution e = on(() -> provider.executions().start(command(pod, "tr a-z A-Z", 30, true), sink));
    on(() -> e.write(Buffer.buffer("hello ")));
    on(() -> e.write(Buffer.buffer("world\n")));
    on(e::closeStdin);
    assertThat(sink.await()).isZero();
    assertThat(sink.stdout()).isEqualTo("HELLO WORLD\n");
    assertThatThrownBy(() -> on(() -> e.write(Buffer.buffer("late")))).isInstanceOf(ApiException.class);
  }

  @Test
  void a_signal_ends_the_whole_process_group_and_a_timeout_kills() throws Exception {
    Sink sink = new Sink();
    Execution e = on(() -> provider.executions().start(command(pod, "sleep 30 & sleep 30; echo never", 60, false),
        sink));
    Thread.sleep(300);
    on(() -> e.signal("TERM"));
    assertThat(sink.await()).isEqualTo(143);
    assertThat(sink.cancelled).isTrue();
    assertThat(sink.stdout()).doesNotContain("never");
    Sink slow = run(command(pod, "sleep 30", 1, false));
    assertThat(slow.timedOut).isTrue();
    assertThat(slow.exit.future().result()).isEqualTo(124);
    assertThat(slow.stderr()).contains("timed out after 1s");
  }

  @Test
  void allow_internet_false_and_unknown_gpus_are_refused_before_any_call() {
    long creates = sim.count(HttpMethod.POST, "/pods");
    assertThatThrownBy(() -> on(() -> provider.lifecycle().create(create("sbx_x", config(false)))))
        .isInstanceOf(ApiException.class).hasMessageContaining("cannot isolate");
    SandboxConfig badGpu = new SandboxConfig(null, null, null, null, "H100!!", null, null, Map.of(), null, null,
        null, null, null, null, null);
    assertThatThrownBy(() -> on(() -> provider.lifecycle().create(create("sbx_x", badGpu))))
        .isInstanceOf(ApiException.class);
    assertThat(sim.count(HttpMethod.POST, "/pods")).isEqualTo(creates);
  }

  @Test
  void list_finds_our_pods_with_cost_and_destroy_terminates() {
    CreateSandbox made = create("sbx_other", config(null));
    String id = on(() -> provider.lifecycle().create(made));
    assertThat(on(() -> provider.lifecycle().quotedHourlyRate(made, id))).as("the pod's adjustedCostPerHr")
        .isEqualByComparingTo("0.69");
    List<Resource> found = on(() -> provider.inventory().list());
    Resource r = found.stream().filter(x -> x.resourceId().equals(id)).findFirst().orElseThrow();
    assertThat(r.sandboxId()).isEqualTo("sbx_other");
    assertThat(r.status()).isEqualTo("running");
    assertThat(r.providerCostUsd()).isNotNull();
    String orphan = sim.plant(new RunPodMarks("sbx_orphan", "org_test", "ctk_x").name());
    sim.plant("someone-elses-pod");
    assertThat(on(() -> provider.inventory().list())).extracting(Resource::resourceId).contains(orphan)
        .hasSize(found.size() + 1);
    assertThat(on(() -> provider.lifecycle().destroy(new DestroySandbox("sbx_other", id))).alreadyGone()).isFalse();
    assertThat(sim.pod(id)).isNull();
    assertThat(on(() -> provider.lifecycle().destroy(new DestroySandbox("sbx_other", id))).alreadyGone()).isTrue();
    on(() -> provider.lifecycle().destroy(new DestroySandbox("sbx_orphan", orphan)));
    on(() -> provider.inventory().checkHealth());
  }

  @Test
  void provider_failures_map_onto_the_contract() {
    sim.faults().status(HttpMethod.POST, "/v1/pods", 429, Map.of("Retry-After", "7"), null, 1);
    ProviderError limited = error(() -> on(() -> provider.lifecycle().create(create("sbx_f", config(null)))));
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.context()).containsEntry("retry_after_secs", 7L);
    sim.faults().status(HttpMethod.GET, "/v1/pods", 503, Map.of(), null, 1);
    assertThat(error(() -> on(() -> provider.inventory().checkHealth())).retryable()).isTrue();
    RunPodProvider wrong = provider("wrong_key");
    try {
      ProviderError auth = error(() -> on(() -> wrong.inventory().checkHealth()));
      assertThat(auth.code()).isEqualTo(ErrorCode.AUTHENTICATION);
      assertThat(auth.toString()).doesNotContain("wrong_key");
    } finally {
      on(wrong::close);
    }
    assertThat(error(() -> on(() -> provider.executions().start(command("nopod", "true", 5, false), new Sink())))
        .code()).isEqualTo(ErrorCode.NOT_FOUND);
  }

  @Test
  void a_lost_create_answer_is_resolved_by_the_token_never_by_a_second_create() {
    long creates = sim.count(HttpMethod.POST, "/pods");
    sim.faults().loseResponse(HttpMethod.POST, "/v1/pods", 1);
    String id = on(() -> provider.lifecycle().create(create("sbx_lost", config(null))));
    assertThat(sim.pod(id)).isNotNull();
    assertThat(sim.count(HttpMethod.POST, "/pods")).isEqualTo(creates + 1);
    on(() -> provider.lifecycle().destroy(new DestroySandbox("sbx_lost", id)));
  }

  @Test
  void a_failed_create_that_allocated_a_pod_terminates_it_and_a_dropped_connection_is_retryable() {
    sim.failNextCreateAfterAllocating();
    ProviderError e = error(() -> on(() -> provider.lifecycle().create(create("sbx_half", config(null)))));
    assertThat(e.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(e.retryable()).isTrue();
    assertThat(e.context()).containsEntry("cleanup_status", "deleted");
    assertThat(on(() -> provider.inventory().list())).extracting(Resource::sandboxId).doesNotContain("sbx_half");
    sim.faults().drop(HttpMethod.GET, "/v1/pods", 1);
    ProviderError dropped = error(() -> on(() -> provider.inventory().checkHealth()));
    assertThat(dropped.code()).isEqualTo(ErrorCode.CONNECTION);
    assertThat(dropped.retryable()).isTrue();
  }

  @Test
  void a_changed_host_key_is_refused() throws Exception {
    String id = on(() -> provider.lifecycle().create(create("sbx_keys", config(null))));
    assertThat(run(command(id, "true", 5, false)).exit.future().result()).isZero();
    java.security.KeyPair before = sim.ssh().changeHostKey();
    RunPodProvider restarted = provider(KEY); // a fresh session: the pin kept in the data directory is checked
    try {
      ProviderError e = error(() -> on(() -> restarted.executions().start(command(id, "true", 5, false), new Sink())));
      assertThat(e.code()).isEqualTo(ErrorCode.CONNECTION);
      assertThat(e.retryable()).isFalse();
      assertThat(e.context()).containsEntry("provider_code", "host_key_changed");
    } finally {
      sim.ssh().useHostKey(before); // the other pods, pinned with it, reconnect after a dropped session
      on(restarted::close);
      on(() -> provider.lifecycle().destroy(new DestroySandbox("sbx_keys", id)));
    }
  }

  @Test
  void a_connection_dropped_mid_output_resumes_without_losing_or_repeating_output() throws Exception {
    StringBuilder out = new StringBuilder();
    StringBuilder err = new StringBuilder();
    for (int i = 1; i <= 3000; i++) {
      out.append("line ").append(i).append('\n');
      err.append("err ").append(i).append('\n');
    }
    Sink sink = new Sink();
    ExecSandbox request = command(pod, "for i in $(seq 1 3000); do echo line $i; echo err $i >&2;"
        + " [ $((i % 300)) = 0 ] && sleep 0.3; done; exit 3", 60, false);
    on(() -> provider.executions().start(request, sink));
    Waits.upTo(20).until(() -> sink.stdout().length() > 100);
    sim.ssh().dropSessions();
    Waits.upTo(20).until(() -> sink.stdout().length() > out.length() / 2);
    sim.ssh().dropSessions();
    assertThat(sink.await()).isEqualTo(3);
    assertThat(sink.stdout()).isEqualTo(out.toString());
    assertThat(sink.stderr()).isEqualTo(err.toString());
    Waits.upTo(20).until(() -> !Files.exists(Path.of("/tmp/.bsk-" + request.executionId())));
  }

  @Test
  void stdin_written_across_a_dropped_connection_arrives_once() throws Exception {
    Sink sink = new Sink();
    Execution e = on(() -> provider.executions().start(command(pod, "cat", 30, true), sink));
    on(() -> e.write(Buffer.buffer("before\n")));
    Waits.upTo(20).until(() -> sink.stdout().equals("before\n"));
    sim.ssh().dropSessions();
    on(() -> e.write(Buffer.buffer("after\n")));
    on(e::closeStdin);
    assertThat(sink.await()).isZero();
    assertThat(sink.stdout()).isEqualTo("before\nafter\n");
  }

  @Test
  void a_pod_unreachable_through_every_retry_ends_the_execution_instead_of_hanging() throws Exception {
    Sink sink = new Sink();
    on(() -> provider.executions().start(command(pod, "echo started; sleep 5", 30, false), sink));
    Waits.upTo(20).until(() -> sink.stdout().equals("started\n"));
    sim.ssh().refuseLogins(true);
    try {
      sim.ssh().dropSessions();
      assertThat(sink.exit.future().toCompletionStage().toCompletableFuture().get(45, TimeUnit.SECONDS))
          .isEqualTo(RunPodExecution.LOST);
      assertThat(sink.stderr()).isEqualTo(RunPodExecution.LOST_MESSAGE);
    } finally {
      sim.ssh().refuseLogins(false);
    }
  }

  @Test
  void a_missing_cwd_fails_the_program_without_leaving_its_stdin_waiting() throws Exception {
    Sink sink = run(new ExecSandbox("sbx_main", "exe_" + UUID.randomUUID().toString().replace("-", ""), pod, null,
        null, "cat", null, Map.of(), "/nonexistent/dir", 10, 1 << 20, true, null, null));
    assertThat(sink.exit.future().result()).isEqualTo(1);
    assertThat(sink.stderr()).contains("/nonexistent/dir");
    assertThat(sink.stdout()).isEmpty();
  }

  @Test
  void a_program_that_did_not_start_fails_the_start_clearly_and_nothing_reaches_the_sink() throws Exception {
    ExecSandbox request = command(pod, "echo never", 10, false);
    Path taken = Path.of("/tmp/.bsk-" + request.executionId());
    Files.writeString(taken, "not the execution's directory"); // the launch cannot make its directory
    try {
      Sink sink = new Sink();
      assertThatThrownBy(() -> on(() -> provider.executions().start(request, sink)))
          .isInstanceOf(ProviderException.class).cause().hasMessageContaining("did not start (status 1)");
      Thread.sleep(200);
      assertThat(sink.stdout()).isEmpty();
      assertThat(sink.stderr()).isEmpty();
      assertThat(sink.exit.future().isComplete()).isFalse();
    } finally {
      Files.deleteIfExists(taken);
    }
  }

  @Test
  void a_start_dropped_before_the_program_ran_is_retried_and_starts_nothing_twice() throws Exception {
    ExecSandbox request = command(pod, "echo started again", 30, false);
    Path dir = Path.of("/tmp/.bsk-" + request.executionId());
    Files.createDirectory(dir); // as if an earlier launch made it: this one waits for that program to run
    for (String f : List.of("out", "err", "in")) {
      Files.writeString(dir.resolve(f), "");
    }
    try {
      Sink sink = new Sink();
      CompletableFuture<Execution> started = CompletableFuture.supplyAsync(
          () -> on(() -> provider.executions().start(request, sink)));
      Thread.sleep(500);
      assertThat(started).isNotDone();
      sim.ssh().dropSessions(); // while the launch waits, before the marker
      Thread.sleep(1_000); // the retried launch waits in turn
      Process ended = new ProcessBuilder("true").start();
      ended.waitFor();
      Files.writeString(dir.resolve("out"), "from the first launch\n");
      Files.writeString(dir.resolve("pid"), ended.pid() + "\n");
      Files.writeString(dir.resolve("status"), "5\n");
      started.get(20, TimeUnit.SECONDS);
      assertThat(sink.await()).isEqualTo(5);
      assertThat(sink.stdout()).isEqualTo("from the first launch\n");
      assertThat(sink.stderr()).isEmpty();
      Waits.upTo(20).until(() -> !Files.exists(dir));
    } finally {
      if (Files.exists(dir)) {
        try (var files = Files.list(dir)) {
          for (Path f : files.toList()) {
            Files.delete(f);
          }
        }
        Files.delete(dir);
      }
    }
  }

  @Test
  void a_connection_that_died_silently_is_noticed_by_its_heartbeats_and_resumed() throws Exception {
    Sink sink = new Sink();
    on(() -> provider.executions().start(command(pod, "sleep 1; head -c 6000000 /dev/zero | tr '\\0' a", 50,
        false), sink));
    sim.ssh().freezeSessions(); // before any output: without heartbeats the follow would wait forever
    assertThat(sink.exit.future().toCompletionStage().toCompletableFuture().get(50, TimeUnit.SECONDS)).isZero();
    assertThat(sink.stdout()).hasSize(6_000_000);
    assertThat(sink.stdout().chars().allMatch(c -> c == 'a')).isTrue();
  }
}
