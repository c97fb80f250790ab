package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.exec.CappedOutput;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The docker backend against a real Docker Engine API (Podman's), with real containers. */
class DockerProviderTest {
  static Vertx vertx;
  static TestEngine engine;
  static DockerProvider provider;

  @BeforeAll
  static void start() {
    engine = TestEngine.get();
    vertx = Vertx.vertx(new io.vertx.core.VertxOptions().setPreferNativeTransport(true));
    provider = new DockerProvider(vertx, new DockerSettings(engine.dockerHost(), TestEngine.IMAGE));
    await(provider.start(vertx.getOrCreateContext()));
  }

  @AfterAll
  static void stop() {
    await(provider.close());
    vertx.close();
  }

  /** The outcome of an asynchronous call; its failure is thrown as is. */
  static <T> T await(Future<T> f) {
    try {
      return f.toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Collects an execution's capped output; {@link #await()} waits for its end. */
  static class CapturingSink implements OutputSink {
    private final CappedOutput stdout;
    private final CappedOutput stderr;
    private final CompletableFuture<ExecResult> done = new CompletableFuture<>();

    CapturingSink(int limitBytes) {
      stdout = new CappedOutput(limitBytes);
      stderr = new CappedOutput(limitBytes);
    }

    @Override
    public synchronized Future<Void> output(Stream stream, byte[] data) {
      (stream == Stream.STDOUT ? stdout : stderr).append(data);
      return Future.succeededFuture();
    }

    @Override
    public synchronized void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      done.complete(new ExecResult(exitCode, stdout.text(), stderr.text(), stdout.truncated(), stderr.truncated(),
          timedOut, durationMs, cancelled, 0));
    }

    ExecResult await() {
      try {
        return done.get(120, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }

  static String create(CreateSandbox request) {
    return await(provider.lifecycle().create(request));
  }

  static ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed destroy(DestroySandbox request) {
    return await(provider.lifecycle().destroy(request));
  }

  static ExecResult exec(ExecSandbox request) {
    CapturingSink sink = new CapturingSink(request.outputLimitBytes());
    await(provider.executions().start(request, sink));
    return sink.await();
  }

  static SandboxConfig config(Boolean internet, Integer memoryMb, Map<String, String> env) {
    return new SandboxConfig(null, 0.5, memoryMb, null, null, null, null, env, internet, null, null, null, null, null,
        null);
  }

  static String sandboxId() {
    return "sbx_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  static ExecSandbox shell(String id, String container, String line, int timeout, boolean stdin) {
    return new ExecSandbox(id, "exe_" + UUID.randomUUID(), container, null, null, line, null, Map.of("EXEC_VAR", "e"),
        null, timeout, 64 * 1024, stdin, null, null);
  }

  static JsonObject inspect(String container) {
    return new JsonArray(engine.podman("inspect", container)).getJsonObject(0);
  }

  @Test
  void a_container_runs_commands_with_separate_streams_exit_codes_env_and_limits() {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "tok_" + id,
        config(false, 256, Map.of("SANDBOX_VAR", "s"))));
    try {
      JsonObject labels = inspect(container).getJsonObject("Config").getJsonObject("Labels");
      assertThat(labels.getString(DockerProvider.SANDBOX)).isEqualTo(id);
      assertThat(labels.getString(DockerProvider.ORGANIZATION)).isEqualTo("org_a");
      assertThat(labels.getString(DockerProvider.CREATE_TOKEN)).isEqualTo("tok_" + id);
      assertThat(inspect(container).getJsonObject("HostConfig").getLong("Memory")).isEqualTo(256L << 20);

      ExecResult r = exec(shell(id, container,
          "echo out; echo err >&2; echo \"$SANDBOX_VAR$EXEC_VAR\"; pwd; printf 'h\\303\\251'; exit 7", 10, false));
      assertThat(r.exitCode()).isEqualTo(7);
      assertThat(r.stdout()).isEqualTo("out\nse\n/workspace\nhé");
      assertThat(r.stderr()).isEqualTo("err\n");

      // no network but loopback when allow_internet is false
      assertThat(exec(shell(id, container, "ls /sys/class/net", 10, false)).stdout().strip()).isEqualTo("lo");
      // code runs through its interpreter, args without a shell
      assertThat(exec(new ExecSandbox(id, "exe_c", container, "echo from-code; pwd", "sh", null, null, Map.of(),
          "/tmp", 10, 1024)).stdout()).isEqualTo("from-code\n/tmp\n");
      assertThat(exec(new ExecSandbox(id, "exe_a", container, null, null, "echo", List.of("a b", "$HOME"),
          Map.of(), null, 10, 1024)).stdout()).isEqualTo("a b $HOME\n");
      // a repeated create of the same sandbox answers with the same container
      assertThat(create(new CreateSandbox(id, "org_a", "docker", "tok_" + id, config(false, 256, Map.of()))))
          .isEqualTo(container);
    } finally {
      assertThat(destroy(new DestroySandbox(id, container)).alreadyGone()).isFalse();
    }
    assertThat(destroy(new DestroySandbox(id, container)).alreadyGone()).isTrue();
    assertThat(await(provider.inventory().list())).noneMatch(r -> r.resourceId().equals(container));
  }

  /**
   * A download read slowly (the engine has sent everything and closed its side long before) still delivers
   * every byte: a paused response must not lose what was already received when the connection ends.
   */
  @Test
  void a_large_file_read_slowly_arrives_whole() throws Exception {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "t", config(false, null, Map.of())));
    try {
      byte[] blob = new byte[3 << 20];
      new java.util.Random(11).nextBytes(blob);
      FileWriter writer = await(provider.files().openWrite(new ai.bespokelabs.sandbox.core.bus.Messages.FileOp(
          "open_write", id, container, "blob.bin", null, null, false, false)));
      await(writer.write(Buffer.buffer(blob)));
      await(writer.commit());
      FileReader reader = await(provider.files().openRead(new ai.bespokelabs.sandbox.core.bus.Messages.FileOp(
          "open_read", id, container, "blob.bin", null, null, false, false)));
      try {
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        for (Buffer chunk; (chunk = await(reader.read(64 * 1024))) != null; ) {
          got.write(chunk.getBytes());
          Thread.sleep(5);
        }
        assertThat(got.size()).isEqualTo(blob.length);
        assertThat(got.toByteArray()).isEqualTo(blob);
      } finally {
        await(reader.close());
      }
    } finally {
      destroy(new DestroySandbox(id, container));
    }
  }

  /** Reads a download whole. */
  static byte[] readAll(FileReader reader) {
    try {
      java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
      for (Buffer chunk; (chunk = await(reader.read(64 * 1024))) != null; ) {
        got.writeBytes(chunk.getBytes());
      }
      return got.toByteArray();
    } finally {
      await(reader.close());
    }
  }

  /**
   * A directory download re-packs the engine's tar as it streams: names longer than a tar header holds (sent
   * with extended headers) and links survive; a file download follows a link to its target.
   */
  @Test
  void a_directory_downloads_with_long_names_and_links_and_a_link_reads_as_its_target() throws Exception {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "t", config(false, null, Map.of())));
    try {
      String deep = "d".repeat(90) + "/" + "e".repeat(90);
      assertThat(exec(shell(id, container, "mkdir -p tree/" + deep + " && printf hi > tree/" + deep + "/f.txt && "
          + "ln -s f.txt tree/" + deep + "/link && printf top > tree/top.txt", 10, false)).exitCode()).isZero();
      var op = new ai.bespokelabs.sandbox.core.bus.Messages.FileOp("open_archive_read", id, container, "tree", null,
          null, false, false);
      byte[] archive = readAll(await(provider.files().openArchiveRead(op)));
      Map<String, String> entries = new java.util.TreeMap<>();
      try (var tar = new org.apache.commons.compress.archivers.tar.TarArchiveInputStream(
          new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(archive)))) {
        for (var e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
          entries.put(e.getName(), e.isSymbolicLink() ? "-> " + e.getLinkName() : e.isDirectory() ? "dir"
              : new String(tar.readAllBytes(), StandardCharsets.UTF_8));
        }
      }
      assertThat(entries).containsEntry("top.txt", "top").containsEntry(deep + "/f.txt", "hi")
          .containsEntry(deep + "/link", "-> f.txt");
      assertThat(readAll(await(provider.files().openRead(new ai.bespokelabs.sandbox.core.bus.Messages.FileOp(
          "open_read", id, container, "tree/" + deep + "/link", null, null, false, false)))))
          .isEqualTo("hi".getBytes(StandardCharsets.UTF_8));
    } finally {
      destroy(new DestroySandbox(id, container));
    }
  }

  @Test
  void stdin_streams_in_and_output_streams_out_while_the_program_runs() throws Exception {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "t", config(false, null, Map.of())));
    try {
      java.util.concurrent.LinkedBlockingQueue<String> chunks = new java.util.concurrent.LinkedBlockingQueue<>();
      CapturingSink sink = new CapturingSink(1 << 20);
      Execution h = await(provider.executions().start(shell(id, container,
          "echo ready; while read l; do echo \"got $l\"; done; echo eof", 10, true), new OutputSink() {
            @Override
            public Future<Void> output(Stream stream, byte[] data) {
              chunks.add(new String(data, StandardCharsets.UTF_8));
              return sink.output(stream, data);
            }

            @Override
            public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
              sink.exited(exitCode, timedOut, cancelled, durationMs);
            }
          }));
      assertThat(chunks.poll(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("ready\n");
      await(h.write(Buffer.buffer("one\n")));
      assertThat(chunks.poll(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("got one\n");
      await(h.write(Buffer.buffer("two\n")));
      await(h.closeStdin());
      ExecResult r = sink.await();
      assertThat(r.stdout()).isEqualTo("ready\ngot one\ngot two\neof\n");
      assertThat(r.exitCode()).isZero();
    } finally {
      destroy(new DestroySandbox(id, container));
    }
  }

  /**
   * Output is read only as fast as the sink takes it: while the sink holds its answer nothing more is read,
   * so the program blocks on its full pipe; once the sink takes more, everything arrives.
   */
  @Test
  void a_slow_sink_slows_the_program_down_and_loses_nothing() throws Exception {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "t", config(false, null, Map.of())));
    try {
      int total = 8 << 20;
      io.vertx.core.Promise<Void> held = io.vertx.core.Promise.promise();
      java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong();
      java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
      CapturingSink sink = new CapturingSink(1024);
      await(provider.executions().start(shell(id, container, "head -c " + total + " /dev/zero; echo done >&2", 60,
          false), new OutputSink() {
            @Override
            public Future<Void> output(Stream stream, byte[] data) {
              if (stream == Stream.STDOUT) {
                received.addAndGet(data.length);
                return calls.incrementAndGet() == 1 ? held.future() : Future.succeededFuture();
              }
              return sink.output(stream, data);
            }

            @Override
            public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
              sink.exited(exitCode, timedOut, cancelled, durationMs);
            }
          }));
      Thread.sleep(2_000);
      assertThat(calls.get()).isEqualTo(1);
      assertThat(received.get()).isLessThan(total);
      held.complete();
      ExecResult r = sink.await();
      assertThat(r.exitCode()).isZero();
      assertThat(r.stderr()).isEqualTo("done\n");
      assertThat(received.get()).isEqualTo(total);
    } finally {
      destroy(new DestroySandbox(id, container));
    }
  }

  @Test
  void a_timeout_kills_the_whole_process_group_and_a_signal_cancels() {
    String id = sandboxId();
    String container = create(new CreateSandbox(id, "org_a", "docker", "t", config(false, null, Map.of())));
    try {
      ExecResult r = exec(shell(id, container, "sleep 300 & echo started; wait", 1, false));
      assertThat(r.timedOut()).isTrue();
      assertThat(r.exitCode()).isEqualTo(124);
      assertThat(r.stdout()).isEqualTo("started\n");
      // the background sleep died with its group (and was reaped): only the container's own sleep is left
      assertThat(exec(shell(id, container, "cat /proc/[0-9]*/stat | grep -c '(sleep)' || true", 10, false))
          .stdout()).isEqualTo("1\n");

      CapturingSink sink = new CapturingSink(1024);
      Execution h = await(provider.executions().start(shell(id, container, "echo up; sleep 300", 30, false), sink));
      await(h.signal("TERM"));
      ExecResult cancelled = sink.await();
      assertThat(cancelled.cancelled()).isTrue();
      assertThat(cancelled.exitCode()).isEqualTo(143);
      assertThat(cancelled.durationMs()).isLessThan(10_000);
    } finally {
      destroy(new DestroySandbox(id, container));
    }
  }

  @Test
  void an_engine_that_is_not_there_is_reported_in_the_error_contract() {
    DockerProvider none = new DockerProvider(vertx, DockerSettings.from(ProviderSettings.withDefaults(
        Map.of("DOCKER_HOST", "unix:///nonexistent/docker.sock"))));
    assertThatThrownBy(() -> await(none.lifecycle().create(new CreateSandbox("sbx_x", "org_a", "docker", "t",
        config(null, null, null)))))
        .isInstanceOfSatisfying(ProviderException.class,
            e -> assertThat(e.error().code()).isEqualTo(ErrorCode.BACKEND_NOT_INSTALLED));
    assertThat(await(none.inventory().list())).isEmpty();
    assertThatThrownBy(() -> await(none.inventory().checkHealth())).isInstanceOf(ProviderException.class);
    await(none.close());
  }

  @Test
  void an_image_that_cannot_be_had_fails_the_create_and_leaves_nothing() {
    String id = sandboxId();
    SandboxConfig cfg = new SandboxConfig(null, null, null, null, null, null, "localhost/no-such-image:0", null, false,
        null, null, null, null, null, null);
    assertThatThrownBy(() -> create(new CreateSandbox(id, "org_a", "docker", "tok_" + id, cfg)))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.error().code()).isEqualTo(ErrorCode.CREATION_FAILED);
          assertThat(e.error().context()).containsEntry("cleanup_status", "not_found");
        });
    assertThat(await(provider.inventory().list())).noneMatch(r -> id.equals(r.sandboxId()));
    await(provider.inventory().checkHealth());
  }
}
