package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Fixtures.create;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.exec;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.shell;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalProviderTest {
  @TempDir
  Path data;

  private Path root;
  private LocalProvider provider;

  @BeforeEach
  void setUp() {
    root = data.resolve("gateway/sandboxes");
    // workdirs may be anywhere in the test's directory but in the gateway's data directory
    provider = new LocalProvider(LocalProvider.BACKEND, root, Clock.systemUTC(), HostWrapper.NONE,
        new Workdirs(List.of(data), data.resolve("gateway")));
  }

  @AfterEach
  void destroyAll() {
    for (String id : List.of("sbx_a", "sbx_b")) {
      provider.destroy(new DestroySandbox(id, null));
    }
  }

  private static void assertApi(Throwable t, int status, String detail) {
    assertThat(t).isInstanceOfSatisfying(ApiException.class, e -> {
      assertThat(e.status()).isEqualTo(status);
      assertThat(e.detail()).isEqualTo(detail);
    });
  }

  /** A disabled backend (its egress rules are not in force) creates nothing and starts no program. */
  @Test
  void aDisabledBackendRefusesCreatesAndProgramsAsNotInstalled() {
    provider.create(create("sbx_a", null, null));
    assertThat(provider.unavailable().isEmpty()).isTrue();
    assertThat(provider.unavailable()).isEmpty();
    provider.disable("the reason");
    assertThat(provider.unavailable().isEmpty()).isFalse();
    assertThat(provider.unavailable()).contains("the reason");
    for (Runnable call : List.<Runnable>of(() -> provider.create(create("sbx_b", null, null)),
        () -> provider.start(shell("sbx_a", "echo ran"), new ai.bespokelabs.sandbox.adapters.host.CapturingSink(64)))) {
      assertThatThrownBy(call::run).isInstanceOfSatisfying(ai.bespokelabs.sandbox.core.error.ProviderException.class,
          e -> assertThat(e.error().code()).isEqualTo(ai.bespokelabs.sandbox.core.error.ErrorCode.BACKEND_NOT_INSTALLED));
    }
  }

  /**
   * bwrap kills its program when the program's parent ends, and for the kernel the parent is the thread that
   * started it: a program started from a short-lived thread (a virtual thread's carrier, an idle pool thread)
   * must still run to its end.
   */
  @Test
  void aBwrapProgramOutlivesTheThreadThatStartedIt() throws Exception {
    LocalProvider bwrap = new LocalProvider("bwrap", data.resolve("bwrap"), Clock.systemUTC(),
        new ai.bespokelabs.sandbox.adapters.bwrap.BwrapWrapper());
    bwrap.create(create("sbx_a", null, null));
    ai.bespokelabs.sandbox.adapters.host.CapturingSink sink = new ai.bespokelabs.sandbox.adapters.host.CapturingSink(1024);
    Thread starter = new Thread(() -> bwrap.start(shell("sbx_a", "sleep 1; echo survived"), sink));
    starter.start();
    starter.join();
    ExecResult r = sink.await();
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("survived\n");
    bwrap.destroy(new DestroySandbox("sbx_a", null));
  }

  /**
   * The gateway's secrets in a system directory a bwrap sandbox sees (a cluster node's key under /etc): made
   * readable by the sandbox's user here, as they are to the sandboxes of a gateway that does not run as root
   * (their user is the gateway's), they still read as empty inside, beside a file of the same directory that is
   * not hidden.
   */
  @Test
  void aBwrapSandboxCannotReadTheGatewaysHiddenFiles() throws Exception {
    Path dir = Path.of("/etc/bespoke-test-" + Long.toHexString(System.nanoTime()));
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isWritable(Path.of("/etc")), "a writable /etc (root)");
    Files.createDirectory(dir);
    try {
      Path key = Files.writeString(dir.resolve("node.key"), "-----BEGIN PRIVATE KEY-----secret");
      Path other = Files.writeString(dir.resolve("other.txt"), "visible");
      Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
      Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
      Files.setPosixFilePermissions(other, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
      LocalProvider bwrap = new LocalProvider("bwrap", data.resolve("bwrap"), Clock.systemUTC(),
          new ai.bespokelabs.sandbox.adapters.bwrap.BwrapWrapper(List.of(key)));
      bwrap.create(create("sbx_h", null, null));
      ExecResult r = bwrap.exec(shell("sbx_h", "cat " + key + "; echo; cat " + other));
      assertThat(r.exitCode()).as(r.stderr()).isZero();
      assertThat(r.stdout()).isEqualTo("\nvisible").doesNotContain("secret");
      bwrap.destroy(new DestroySandbox("sbx_h", null));
    } finally {
      try (var files = Files.list(dir)) {
        for (Path f : files.toList()) {
          Files.delete(f);
        }
      }
      Files.delete(dir);
    }
  }

  @Test
  void createMakesAnOwnedDirectoryUsedAsHomeAndCwd() {
    String resourceId = provider.create(create("sbx_a", Map.of("TOKEN", "s3cret"), null));

    assertThat(resourceId).isEqualTo(root.resolve("sbx_a").toAbsolutePath().toString());
    assertThat(Path.of(resourceId)).isDirectory();
    assertThat(provider.create(create("sbx_a", Map.of(), null))).as("repeated create").isEqualTo(resourceId);

    ExecResult r = provider.exec(shell("sbx_a", "pwd; echo $HOME $TOKEN; echo hi > f.txt"));
    assertThat(r.stdout()).isEqualTo(resourceId + "\n" + resourceId + " s3cret\n");
    assertThat(Path.of(resourceId, "f.txt")).hasContent("hi");
  }

  @Test
  void cwdIsResolvedInsideTheSandboxAndMayNotEscape() throws Exception {
    Path dir = Path.of(provider.create(create("sbx_a", null, null)));
    Files.createDirectory(dir.resolve("sub"));

    assertThat(provider.exec(exec("sbx_a", null, "pwd", List.of(), Map.of(), "sub")).stdout())
        .isEqualTo(dir.resolve("sub") + "\n");
    assertThatThrownBy(() -> provider.exec(exec("sbx_a", null, "pwd", List.of(), Map.of(), "../..")))
        .satisfies(t -> assertApi(t, 422, "cwd must stay inside the sandbox"));
  }

  @Test
  void execEnvOverridesSandboxEnv() {
    provider.create(create("sbx_a", Map.of("A", "sandbox", "B", "sandbox"), null));

    ExecResult r = provider.exec(exec("sbx_a", "import os; print(os.environ['A'], os.environ['B'])", null, null,
        Map.of("B", "exec"), null));

    assertThat(r.stdout()).isEqualTo("sandbox exec\n");
  }

  @Test
  void givenWorkdirIsUsedAndNeverDeleted() throws Exception {
    Path workdir = Files.createDirectory(data.resolve("project"));

    assertThat(provider.create(create("sbx_a", null, workdir.toString()))).isEqualTo(workdir.toString());
    assertThat(provider.exec(shell("sbx_a", "pwd")).stdout()).isEqualTo(workdir + "\n");
    assertThat(provider.destroy(new DestroySandbox("sbx_a", workdir.toString())).alreadyGone()).isFalse();
    assertThat(workdir).isDirectory();
  }

  @Test
  void unusableWorkdirIsRejected() {
    for (String workdir : List.of("relative/dir", data.resolve("missing").toString())) {
      assertThatThrownBy(() -> provider.create(create("sbx_b", null, workdir)))
          .satisfies(t -> assertApi(t, 422, "workdir must be an existing absolute directory"));
    }
  }

  /**
   * A sandbox can nest directories far deeper than a delete through handles goes (one open handle per level):
   * the files API refuses to delete such a tree with a clear 422, and destroy still removes it all.
   */
  @Test
  void aTreeThousandsOfLevelsDeepIsRemovedByDestroy() {
    String resourceId = provider.create(create("sbx_deep", null, null));
    // a single mkdir -p (one process, not 2000) with room for a loaded machine
    ExecResult r = provider.exec(new ExecSandbox("sbx_deep", "exe_test", null, null, null,
        "mkdir -p \"$(printf 'd/%.0s' $(seq 2000))\" && touch \"$(printf 'd/%.0s' $(seq 2000))bottom\" && echo made",
        null, java.util.Map.of(), null, 120, 64 * 1024));
    assertThat(r.stdout()).as(r.stderr()).isEqualTo("made\n");
    assertThatThrownBy(() -> provider.deleteFile(new ai.bespokelabs.sandbox.core.bus.Messages.FileOp("delete",
        "sbx_deep", resourceId, "d", null, null, false, true)))
        .satisfies(t -> assertThat(((ApiException) t).status()).isEqualTo(422));
    assertThat(provider.destroy(new DestroySandbox("sbx_deep", resourceId)).alreadyGone()).isFalse();
    assertThat(Path.of(resourceId)).doesNotExist();
  }

  @Test
  void destroyKillsBackgroundProcessesAndRemovesTheOwnedDirectory() throws InterruptedException {
    String resourceId = provider.create(create("sbx_a", null, null));
    ExecResult r = provider.exec(shell("sbx_a", "sleep 100 >/dev/null 2>&1 & echo $!"));
    long background = Long.parseLong(r.stdout().trim());
    assertThat(Fixtures.isRunning(background)).isTrue();

    assertThat(provider.destroy(new DestroySandbox("sbx_a", resourceId)).alreadyGone()).isFalse();

    assertThat(Fixtures.awaitDeath(background)).as("background process killed").isTrue();
    assertThat(Path.of(resourceId)).doesNotExist();
  }

  @Test
  void afterARestartExecIsUnavailableButDestroyStillCleansUp() throws Exception {
    String resourceId = provider.create(create("sbx_a", null, null));
    Path workdir = Files.createDirectory(data.resolve("project"));
    LocalProvider restarted = new LocalProvider(root, Clock.systemUTC());

    assertThatThrownBy(() -> restarted.exec(shell("sbx_a", "true")))
        .satisfies(t -> assertApi(t, 409, "sandbox runtime is unavailable after a control-plane restart"));
    assertThat(restarted.destroy(new DestroySandbox("sbx_a", resourceId)).alreadyGone()).isFalse();
    assertThat(Path.of(resourceId)).doesNotExist();
    assertThat(restarted.destroy(new DestroySandbox("sbx_a", resourceId)).alreadyGone()).isTrue();
    assertThat(restarted.destroy(new DestroySandbox("sbx_b", workdir.toString())).alreadyGone()).isTrue();
    assertThat(workdir).isDirectory();
  }

  @Test
  void afterARestartDestroyKillsWhatTheLostRuntimeLeftRunning() throws InterruptedException {
    String resourceId = provider.create(create("sbx_r", null, null));
    ExecResult r = provider.exec(shell("sbx_r", "sleep 300 >/dev/null 2>&1 & echo $!"));
    long background = Long.parseLong(r.stdout().trim());
    LocalProvider restarted = new LocalProvider(root, Clock.systemUTC());

    assertThat(restarted.destroy(new DestroySandbox("sbx_r", resourceId)).alreadyGone()).isFalse();

    assertThat(Fixtures.awaitDeath(background)).as("the reparented process was found and killed").isTrue();
    assertThat(Path.of(resourceId)).doesNotExist();
  }

  @Test
  void closeKillsWhatSandboxesLeftRunningAndForgetsThem() throws InterruptedException {
    provider.create(create("sbx_a", null, null));
    long background = Long.parseLong(
        provider.exec(shell("sbx_a", "sleep 100 >/dev/null 2>&1 & echo $!")).stdout().trim());

    provider.close();

    assertThat(Fixtures.awaitDeath(background)).isTrue();
    assertThatThrownBy(() -> provider.exec(shell("sbx_a", "true"))).isInstanceOf(ApiException.class);
    assertThat(root.resolve("sbx_a")).as("left for destroy").isDirectory();
  }

  @Test
  void concurrentExecsInOneSandboxRunInParallel() throws Exception {
    provider.create(create("sbx_a", null, null));
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      long start = System.nanoTime();
      List<Future<ExecResult>> runs = IntStream.range(0, 8)
          .mapToObj(i -> pool.submit(() -> provider.exec(
              exec("sbx_a", null, "sleep 0.5; echo $N", null, Map.of("N", Integer.toString(i)), null))))
          .toList();
      for (int i = 0; i < runs.size(); i++) {
        assertThat(runs.get(i).get().stdout()).isEqualTo(i + "\n");
      }
      assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(3000);
    } finally {
      pool.shutdownNow();
    }
  }
}
