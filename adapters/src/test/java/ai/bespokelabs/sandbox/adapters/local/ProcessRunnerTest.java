package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs with the spawner this runtime uses (natively on Java 22+ on Linux); {@link ProcessRunnerSetsidTest}
 * runs every case again through the {@code setsid} program, the fallback elsewhere.
 */
class ProcessRunnerTest {
  private final ProcessRunner runner = newRunner();

  ProcessRunner newRunner() {
    return new ProcessRunner("local");
  }
  private final AtomicLong group = new AtomicLong();

  @TempDir
  Path dir;

  @AfterEach
  void killLeftovers() {
    ProcessGroups.kill(List.of(group.get()));
  }

  private ExecResult run(List<String> argv, Map<String, String> env, int timeoutSecs, int cap) {
    ProcessSpec spec = new ProcessSpec(argv, dir, ProcessSpec.environment(dir, Map.of(), env), timeoutSecs, cap);
    return runToEnd(spec);
  }

  private ExecResult runToEnd(ProcessSpec spec) {
    CapturingSink sink = new CapturingSink(spec.outputLimitBytes());
    runner.start(spec, false, sink, group::set);
    return sink.await();
  }

  private ExecResult run(List<String> argv) {
    return run(argv, Map.of(), 10, 64 * 1024);
  }

  @Test
  void pythonCodePrints() {
    ExecResult r = run(CommandLine.forCode("print(6 * 7)", "python"));

    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("42\n");
    assertThat(r.stderr()).isEmpty();
    assertThat(r.timedOut()).isFalse();
    assertThat(r.durationMs()).isNotNegative();
  }

  @Test
  void shellCommandLineCapturesBothStreamsAndTheExitCode() {
    ExecResult r = run(CommandLine.forCommand("echo one; echo two >&2; exit 17", null));

    assertThat(r.stdout()).isEqualTo("one\n");
    assertThat(r.stderr()).isEqualTo("two\n");
    assertThat(r.exitCode()).isEqualTo(17);
  }

  @Test
  void programArgsAreNotSplitByAShell() {
    ExecResult r = run(CommandLine.forCommand("printf", List.of("[%s]", "a b", "$HOME", "c")));

    assertThat(r.stdout()).isEqualTo("[a b][$HOME][c]");
  }

  @Test
  void childLeadsItsOwnProcessGroup() {
    ExecResult r = run(CommandLine.forCode("import os; print(os.getpgid(0), os.getpid())", "python"));

    String pid = Long.toString(group.get());
    assertThat(r.stdout()).isEqualTo(pid + " " + pid + "\n");
  }

  @Test
  void timeoutKillsTheWholeGroupAndReports124() throws InterruptedException {
    ExecResult r = run(CommandLine.forCommand("sleep 100 & echo $!; sleep 100", null), Map.of(), 1, 1024);

    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.timedOut()).isTrue();
    assertThat(r.stderr()).isEqualTo("Command timed out after 1s\n");
    assertThat(r.durationMs()).isBetween(1000L, 2500L);
    long grandchild = Long.parseLong(r.stdout().trim());
    assertThat(Fixtures.awaitDeath(grandchild)).as("background grandchild killed").isTrue();
    assertThat(Fixtures.awaitDeath(group.get())).as("main process killed").isTrue();
  }

  @Test
  void aStdinWriteBlockedOnAFullPipeDoesNotHoldUpTheTimeout() throws Exception {
    ProcessSpec spec = new ProcessSpec(CommandLine.forCommand("sleep 100", null), dir,
        ProcessSpec.environment(dir, Map.of(), Map.of()), 1, 1024);
    CapturingSink sink = new CapturingSink(1024);
    var handle = runner.start(spec, true, sink, group::set);
    Thread writer = Thread.ofPlatform().daemon().start(() -> {
      try {
        handle.writeStdin(new byte[1 << 20]); // sleep reads none of it: blocks once the pipe is full
      } catch (ApiException closed) {
        // the program was killed: stdin is closed
      }
    });

    ExecResult r = java.util.concurrent.CompletableFuture.supplyAsync(sink::await)
        .get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.durationMs()).isBetween(1000L, 2500L);
    writer.join(5_000);
    assertThat(writer.isAlive()).as("the write ended with the program").isFalse();
  }

  @Test
  void aSinkMayWaitInExitedForStartToReturn() {
    ProcessSpec spec = new ProcessSpec(List.of("true"), dir, ProcessSpec.environment(dir, Map.of(), Map.of()), 10,
        1024);
    org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
      for (int i = 0; i < 200; i++) { // the program may end before start() returns
        java.util.concurrent.CountDownLatch returned = new java.util.concurrent.CountDownLatch(1);
        CapturingSink inner = new CapturingSink(1024);
        ai.bespokelabs.sandbox.adapters.host.ExecSink sink = new ai.bespokelabs.sandbox.adapters.host.ExecSink() {
          @Override
          public void output(Stream stream, byte[] data) throws InterruptedException {
            inner.output(stream, data);
          }

          @Override
          public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
            try {
              returned.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            inner.exited(exitCode, timedOut, cancelled, durationMs);
          }
        };
        runner.start(spec, false, sink, group::set);
        returned.countDown();
        assertThat(inner.await().exitCode()).isZero();
      }
    });
  }

  @Test
  void aDeadlineIsHeldOnlyWhileItsProgramRuns() throws Exception {
    ProcessSpec spec = new ProcessSpec(CommandLine.forCommand("sleep 100", null), dir,
        ProcessSpec.environment(dir, Map.of(), Map.of()), 3600, 1024);
    CapturingSink sink = new CapturingSink(1024);
    runner.start(spec, false, sink, group::set);
    // natively spawned programs have their timeout kept by the shared timer; setsid ones by their watcher
    assertThat(ProcessRunner.pendingDeadlines()).isEqualTo(usesTheDeadlineTimer() ? 1 : 0);
    ProcessGroups.kill(List.of(group.get()));
    sink.await();

    for (int i = 0; i < 50; i++) {
      assertThat(run(List.of("true"), Map.of(), 3600, 1024).exitCode()).isZero();
    }
    assertThat(ProcessRunner.pendingDeadlines()).as("each would hold its run until the hour is up").isZero();
  }

  /**
   * A kill sent the moment start returns reaches the program: on the setsid path the group did not exist yet
   * until setsid had run, and such a kill was lost (a 100 s sleep then ran to its end).
   */
  @Test
  void aKillRightAfterStartIsNeverLost() throws Exception {
    for (int i = 0; i < 100; i++) {
      ProcessSpec spec = new ProcessSpec(CommandLine.forCommand("sleep 100", null), dir,
          ProcessSpec.environment(dir, Map.of(), Map.of()), 3600, 1024);
      CapturingSink sink = new CapturingSink(1024);
      runner.start(spec, false, sink, group::set);
      ProcessGroups.kill(List.of(group.get()));
      ExecResult r = java.util.concurrent.CompletableFuture.supplyAsync(sink::await)
          .get(10, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.exitCode()).as("round %d", i).isNotZero();
    }
  }

  /** Whether this runner's programs have their deadline kept by the shared timer (the native spawn's way). */
  boolean usesTheDeadlineTimer() {
    return SessionSpawner.available().isPresent();
  }

  @Test
  void outputBeyondTheCapIsDrainedAndFlagged() {
    String code = "import sys; sys.stdout.write('x' * 1000000); sys.stderr.write('y' * 1000)";
    ExecResult r = run(CommandLine.forCode(code, "python"), Map.of(), 10, 1000);

    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).hasSize(1000).matches("x+");
    assertThat(r.stdoutTruncated()).isTrue();
    assertThat(r.stderr()).hasSize(1000);
    assertThat(r.stderrTruncated()).as("exactly the cap is not truncated").isFalse();
  }

  @Test
  void multiByteCharacterCutAtTheCapDecodesWithReplacement() {
    ExecResult r = run(CommandLine.forCode("print('é' * 10)", "python"), Map.of(), 10, 5);

    assertThat(r.stdout()).isEqualTo("éé\uFFFD");
    assertThat(r.stdoutTruncated()).isTrue();
  }

  @Test
  void environmentHoldsOnlyTheBaseAndGivenVariables() {
    ExecResult r = run(List.of("env"), Map.of("GREETING", "hello world"), 10, 64 * 1024);

    Map<String, String> seen = new HashMap<>();
    r.stdout().lines().forEach(line -> {
      int eq = line.indexOf('=');
      seen.put(line.substring(0, eq), line.substring(eq + 1));
    });
    assertThat(seen).containsOnly(
        Map.entry("PATH", ProcessSpec.BASE_PATH),
        Map.entry("HOME", dir.toString()),
        Map.entry("LANG", "C.UTF-8"),
        Map.entry("TMPDIR", dir.toString()),
        Map.entry("SANDBOX_ROOT", dir.toString()),
        Map.entry("GREETING", "hello world"));
    Set<String> gatewayOnly = new HashSet<>(System.getenv().keySet());
    gatewayOnly.removeAll(seen.keySet());
    assertThat(gatewayOnly).as("the test JVM has variables of its own").isNotEmpty();
    assertThat(System.getenv("PATH")).isNotEqualTo(ProcessSpec.BASE_PATH);
  }

  @Test
  void backgroundChildHoldingThePipesDoesNotHoldTheResult() {
    ExecResult r = run(CommandLine.forCommand("sleep 5 & echo started", null));

    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("started\n");
    assertThat(r.durationMs()).isLessThan(1500);
  }

  @Test
  void missingProgramIsAnExecutionFailureWithNoSideEffect() {
    assertThatThrownBy(() -> run(List.of("no-such-program-4f1c")))
        .isInstanceOfSatisfying(ProviderException.class, e -> assertThat(e.error()).isEqualTo(
            ProviderError.of(ErrorCode.EXECUTION_FAILED, "local", "execute", false, ProviderError.Outcome.FAILED)));
    assertThatThrownBy(() -> run(List.of("./missing.sh")))
        .isInstanceOf(ProviderException.class);
  }

  @Test
  void missingWorkingDirectoryIsRejected() {
    Map<String, String> env = ProcessSpec.environment(dir, Map.of(), Map.of());
    ProcessSpec spec = new ProcessSpec(List.of("true"), dir.resolve("nope"), env, 10, 1024);

    assertThatThrownBy(() -> runToEnd(spec))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(422));
  }

  @Test
  void theNativeSpawnIsUsedWhereTheRuntimeHasIt() {
    boolean expected = Runtime.version().feature() >= 22 && System.getProperty("os.name").startsWith("Linux")
        && !"false".equalsIgnoreCase(System.getenv("BESPOKE_NATIVE_SPAWN"))
        && !"false".equalsIgnoreCase(System.getProperty("bespoke.nativeSpawn"));
    assertThat(SessionSpawner.available().isPresent()).isEqualTo(expected);
  }

  @Test
  void theProgramLeadsANewSessionWithOnlyItsThreeStreamsAndItsOwnArgv0() {
    // fields 5 and 6 of /proc/self/stat (after the command name) are the process group and the session
    // a name found on PATH keeps the name as argv[0], as execvp leaves it
    ExecResult r = run(List.of("sh", "-c",
        "set -- $(sed 's/.*) //' /proc/$$/stat); echo $3 $4; ls /proc/$$/fd; tr '\\0' ' ' < /proc/$$/cmdline"));

    String pid = Long.toString(group.get());
    List<String> lines = r.stdout().lines().toList();
    assertThat(lines.get(0)).isEqualTo(pid + " " + pid);
    assertThat(lines.subList(1, lines.size() - 1)).as("no descriptor of the gateway leaks in")
        .filteredOn(fd -> !fd.equals("255")) // bash, when it is sh, keeps one of its own
        .containsExactly("0", "1", "2");
    assertThat(lines.get(lines.size() - 1)).startsWith("sh -c set");
  }

  @Test
  void aSignalReachesTheWholeGroupAndEndsTheRunAsCancelled() throws Exception {
    Map<String, String> env = ProcessSpec.environment(dir, Map.of(), Map.of());
    ProcessSpec spec = new ProcessSpec(CommandLine.forCommand("sleep 100 & echo $!; wait", null), dir, env, 30, 1024);
    java.util.concurrent.LinkedBlockingQueue<String> out = new java.util.concurrent.LinkedBlockingQueue<>();
    CapturingSink sink = new CapturingSink(1024);
    var handle = runner.start(spec, false, new ai.bespokelabs.sandbox.adapters.host.ExecSink() {
      @Override
      public void output(Stream stream, byte[] data) {
        sink.output(stream, data);
        out.add(new String(data, java.nio.charset.StandardCharsets.UTF_8));
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        sink.exited(exitCode, timedOut, cancelled, durationMs);
      }
    }, group::set);
    long background = Long.parseLong(out.poll(10, java.util.concurrent.TimeUnit.SECONDS).trim());

    handle.signal("TERM");
    ExecResult r = sink.await();
    assertThat(r.exitCode()).isEqualTo(143);
    assertThat(r.cancelled()).isTrue();
    assertThat(Fixtures.awaitDeath(background)).as("the background child got the signal too").isTrue();
  }

  @Test
  void anExitBySignalReportsOneHundredTwentyEightPlusTheSignal() {
    assertThat(run(CommandLine.forCommand("kill -9 $$", null)).exitCode()).isEqualTo(137);
    assertThat(run(CommandLine.forCommand("kill -15 $$", null)).exitCode()).isEqualTo(143);
  }

  @Test
  void aFileWithoutAnInterpreterLineRunsUnderSh() throws java.io.IOException {
    Path script = dir.resolve("plain.sh");
    java.nio.file.Files.writeString(script, "echo from a plain script $1\n");
    script.toFile().setExecutable(true);

    ExecResult r = run(List.of("./plain.sh", "arg"));
    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("from a plain script arg\n");
  }

  @Test
  void outputWrittenRightBeforeExitAfterALongSilenceIsKept() {
    ExecResult r = run(CommandLine.forCommand("sleep 0.6; printf tail", null));
    assertThat(r.stdout()).isEqualTo("tail");
  }
}
